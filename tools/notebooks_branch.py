"""Lay out the ``notebooks`` branch that "open in Colab" and Binder read.

Usage: python -m tools.notebooks_branch [--site _build/html] [--out DIR]

Copies every notebook the built site offers for download
(``SITE/{zh,en}/_sources/*.ipynb``, each with its first cell that installs
mha-book and sets the edition's language) to ``OUT/{zh,en}/``, the paths
``docs/_ext/book_launch.py`` links. Adds ``requirements.txt``, which Binder
installs before it opens a notebook (torch's CPU build, then mha-book with
its notebook extra, at the version that built the site), ``runtime.txt``
(the Python that Binder uses: mha-book needs 3.11 or later, newer than
Binder's default), and a README. The Pages workflow pushes ``OUT`` to the
branch; nothing else is on it. ``OUT`` is replaced only if it holds nothing
but an earlier layout.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LANGS = ("zh", "en")
RUNTIME = "python-3.11\n"
FILES = {"zh", "en", "requirements.txt", "runtime.txt", "README.md"}

REQUIREMENTS = """\
# Binder installs these before it opens a notebook (torch's CPU build).
--extra-index-url https://download.pytorch.org/whl/cpu
mha-book[notebook]=={version}
"""

README = """\
# Notebooks of the book, version {version}

Every page of the book as the notebook its download button gives, one folder
per edition (`zh/`, `en/`). The first cell of each installs
`mha-book[notebook]=={version}` when it is missing and sets the language the
notebook prints in. This branch is written by the Pages workflow on each
publication; change the pages on `main`, not here.
"""


def notebook_version(notebook: Path) -> str:
    """The mha-book version a downloaded notebook installs (its metadata)."""
    meta = json.loads(notebook.read_text(encoding="utf-8"))["metadata"]
    return meta["mha_book"]["version"]


def lay_out(site: Path, out: Path) -> dict[str, int]:
    """Write the branch's files into ``out``; the notebooks per edition."""
    counts, versions = {}, set()
    if out.exists():
        other = sorted(p.name for p in out.iterdir() if p.name not in FILES)
        if other:
            raise FileExistsError(
                f"out must be empty or an earlier layout; {out} also holds {other}"
            )
        shutil.rmtree(out)
    for lang in LANGS:
        notebooks = sorted((site / lang / "_sources").glob("*.ipynb"))
        if not notebooks:
            raise FileNotFoundError(f"no notebooks in {site / lang / '_sources'}")
        (out / lang).mkdir(parents=True)
        for notebook in notebooks:
            shutil.copy2(notebook, out / lang / notebook.name)
            versions.add(notebook_version(notebook))
        counts[lang] = len(notebooks)
    if len(versions) != 1:
        raise ValueError(f"the notebooks name several versions: {sorted(versions)}")
    version = versions.pop()
    (out / "requirements.txt").write_text(REQUIREMENTS.format(version=version))
    (out / "runtime.txt").write_text(RUNTIME)
    (out / "README.md").write_text(README.format(version=version))
    return counts


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Lay out the notebooks branch.")
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument(
        "--out", type=Path, default=ROOT / "_build" / "notebooks-branch"
    )
    args = parser.parse_args(argv)
    counts = lay_out(args.site, args.out)
    print(
        ", ".join(f"{n} {lang} notebooks" for lang, n in counts.items()), "in", args.out
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
