"""The five-character Tang poems shipped in mha_book/data/tang5/.

tools/ship_poems.py writes them from the npm package chinese-poetry 2.0.1; the
last test regenerates them from its tarball where one is at hand (set
MHA_BOOK_TANG_TARBALL to chinese-poetry-2.0.1.tgz, from ``npm pack
chinese-poetry@2.0.1``) and OpenCC 1.4.2 is installed (``make corpus`` installs it).
"""

import hashlib
import lzma
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from mha_book.lm import corpus

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "mha_book" / "data" / "tang5"
TEXT = lzma.decompress((DATA / "poems.txt.xz").read_bytes())


def test_shipped_text_matches_its_digest():
    source = corpus.tang_poem_source()
    assert hashlib.sha256(TEXT).hexdigest() == source["text_sha256"]
    assert TEXT.endswith(b"\n") and not TEXT.endswith(b"\n\n")
    poems = corpus.load_tang_poems()
    assert poems == TEXT.decode("utf-8").split("\n")[:-1]
    assert len(poems) == source["poems"]
    assert sum(map(len, poems)) == source["characters"]
    assert sum(len(p) == 24 for p in poems) == source["four_line"]
    assert sum(len(p) == 48 for p in poems) == source["eight_line"]


def test_every_poem_is_four_or_eight_lines_of_five_characters():
    for poem in corpus.load_tang_poems():
        lines = re.findall("[^，。]*[，。]", poem)
        assert "".join(lines) == poem and len(lines) in (4, 8), poem
        for i, line in enumerate(lines):
            assert len(line) == 6 and line[-1] == "，。"[i % 2], poem


def test_only_ideographs_and_the_two_marks():
    others = {
        c
        for c in set(TEXT.decode("utf-8")) - set("，。\n")
        if not unicodedata.name(c, "").startswith("CJK UNIFIED IDEOGRAPH-")
    }
    assert not others


def test_no_duplicates_and_no_traditional_survivors():
    poems = corpus.load_tang_poems()
    assert len(set(poems)) == len(poems)
    # A few traditional forms t2s converts, none of which may remain.
    assert not set("國東來說詩風無馬") & set(TEXT.decode("utf-8"))


def test_files_are_small_and_licensed():
    assert (DATA / "poems.txt.xz").stat().st_size <= 2 * 1024 * 1024
    assert (DATA / "LICENSE").read_text().lstrip().startswith("The MIT License")
    assert "Copyright (c) 2016 JackeyGao" in (DATA / "LICENSE").read_text()
    assert "chinese-poetry" in (DATA / "SOURCE.md").read_text(encoding="utf-8")


def _tarball_or_skip() -> Path:
    tarball = os.environ.get("MHA_BOOK_TANG_TARBALL")
    if not tarball or not Path(tarball).is_file():
        pytest.skip(
            "no chinese-poetry tarball: set MHA_BOOK_TANG_TARBALL to "
            "chinese-poetry-2.0.1.tgz (npm pack chinese-poetry@2.0.1) to regenerate"
        )
    try:
        import opencc
    except ImportError:
        pytest.skip("no OpenCC: pip install opencc==1.4.2 (make corpus) to regenerate")
    if opencc.__version__ != "1.4.2":
        pytest.skip(f"OpenCC {opencc.__version__}, the data need 1.4.2 to regenerate")
    return Path(tarball)


def test_ship_poems_regenerates_the_data_byte_for_byte():
    tarball = _tarball_or_skip()
    run = subprocess.run(
        [sys.executable, "tools/ship_poems.py", "--check", "--tarball", str(tarball)],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "matches its source" in run.stdout
