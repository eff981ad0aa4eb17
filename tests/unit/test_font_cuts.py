"""A font is cut once for a set of characters: a rebuild that needs the same
cut copies the one kept beside the site (docs/_ext/book_assets.py), and any
change to the font or to the characters cuts it again."""

from pathlib import Path

import book_assets
import pytest
from book_assets import cut_fonts
from fontTools import subset
from fontTools.fontBuilder import FontBuilder
from fontTools.pens.ttGlyphPen import TTGlyphPen
from fontTools.ttLib import TTFont

BARS, XMARK, STAR = 0xF0C9, 0xF00D, 0xF005


def icon_font(path: Path, revision: float = 1.0) -> None:
    """A small WOFF2 icon font: three square glyphs."""
    names = [".notdef", "bars", "xmark", "star"]
    builder = FontBuilder(1000, isTTF=True)
    builder.setupGlyphOrder(names)
    builder.setupCharacterMap({BARS: "bars", XMARK: "xmark", STAR: "star"})
    pen = TTGlyphPen(None)
    pen.moveTo((100, 100)), pen.lineTo((100, 900)), pen.lineTo((900, 900))
    pen.closePath()
    builder.setupGlyf({name: pen.glyph() for name in names})
    builder.setupHorizontalMetrics({name: (1000, 100) for name in names})
    builder.setupHorizontalHeader(ascent=900, descent=-100)
    builder.setupNameTable({"familyName": "Icons", "styleName": "Regular"})
    builder.setupOS2()
    builder.setupPost()
    builder.setupHead(fontRevision=revision)
    builder.font.flavor = "woff2"
    builder.save(path)


@pytest.fixture
def font(tmp_path, monkeypatch) -> Path:
    """An icon font where a build puts it: _build/html/en/_static/..."""
    monkeypatch.delenv("MHA_BOOK_FONT_CUTS", raising=False)  # the build tests' own
    path = tmp_path / "_build/html/en/_static/webfonts/icons.woff2"
    path.parent.mkdir(parents=True)
    return path


class CountingSubsetter(subset.Subsetter):
    calls = 0

    def subset(self, font):
        CountingSubsetter.calls += 1
        super().subset(font)


def cut(font: Path, points: set[int]) -> bytes:
    icon_font(font)  # as Sphinx copies the theme's files again
    options = subset.Options()
    options.layout_features = []
    cut_fonts([font], points, options)
    return font.read_bytes()


def test_the_same_cut_is_copied_and_a_new_one_is_made(font, monkeypatch):
    monkeypatch.setattr(book_assets.subset, "Subsetter", CountingSubsetter)
    CountingSubsetter.calls = 0
    first = cut(font, {BARS})
    assert set(TTFont(font).getBestCmap()) == {BARS}
    assert list((font.parents[4] / "font-cuts").glob("*.woff2"))
    assert cut(font, {BARS}) == first and CountingSubsetter.calls == 1
    both = cut(font, {BARS, XMARK})  # the pages name one more icon
    assert CountingSubsetter.calls == 2
    assert set(TTFont(font).getBestCmap()) == {BARS, XMARK} and both != first


def test_a_changed_font_is_cut_again(font, monkeypatch):
    monkeypatch.setattr(book_assets.subset, "Subsetter", CountingSubsetter)
    CountingSubsetter.calls = 0
    cut(font, {BARS})
    icon_font(font, revision=2.0)  # a new release of the theme's font
    options = subset.Options()
    options.layout_features = []
    cut_fonts([font], {BARS}, options)
    assert CountingSubsetter.calls == 2
    assert TTFont(font)["head"].fontRevision == 2.0
