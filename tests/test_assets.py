"""Each page loads what it uses: no icon script, the search scripts on the search
page only, and an icon font that still draws every icon the site names
(docs/_ext/book_assets.py)."""

import re
import shutil
import sys
from pathlib import Path

import pytest
from fontTools import subset
from fontTools.ttLib import TTFont

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "docs" / "_ext"))

from book_assets import THEME_CSS, WEBFONTS, icon_code_points, icons_named  # noqa: E402

LANGS = ("zh", "en")
SEARCH_FILES = ("searchtools.js", "language_data.js", "searchindex.js")


def scripts(page: Path) -> list[str]:
    """The files a page loads with <script src>."""
    html = page.read_text(encoding="utf-8")
    return [
        s.split("?")[0].rsplit("/", 1)[-1]
        for s in re.findall(r'<script[^>]*\bsrc="([^"]+)"', html)
    ]


def icon_problems(edition: Path) -> list[str]:
    """Icons the site names that its (cut-down) icon fonts cannot draw."""
    points = icon_code_points((edition / THEME_CSS).read_text(encoding="utf-8"))
    drawn = set()
    for font in (edition / WEBFONTS).glob("*.woff2"):
        drawn |= set(TTFont(font).getBestCmap() or {})
    named = sorted(n for n in icons_named(edition) if n in points)
    return [
        f"{edition.name}: no glyph for {n}" for n in named if points[n] not in drawn
    ]


@pytest.mark.parametrize("lang", LANGS)
def test_no_page_loads_the_icon_script_and_only_search_loads_the_index(site, lang):
    pages = sorted((site / lang).rglob("*.html"))
    assert len(pages) > 15
    for page in pages:
        loaded = scripts(page)
        assert "fontawesome.js" not in loaded, page
        if page.name == "search.html":
            assert set(SEARCH_FILES) <= set(loaded), page
        else:
            assert not set(SEARCH_FILES) & set(loaded), (page, loaded)
    assert not (site / lang / "_static" / "scripts" / "fontawesome.js").exists()


@pytest.mark.parametrize("lang", LANGS)
def test_the_cut_icon_font_draws_every_icon_the_site_names(site, lang):
    edition = site / lang
    named = {n for n in icons_named(edition) if n.startswith("fa-")}
    assert {"fa-bars", "fa-magnifying-glass", "fa-download"} <= named
    assert icon_problems(edition) == []
    solid = edition / WEBFONTS / "fa-solid-900.woff2"
    assert solid.stat().st_size < 8 * 1024  # the whole font is 112 KiB


def test_a_font_without_a_named_icon_is_caught(site, tmp_path):
    edition = tmp_path / "en"
    shutil.copytree(site / "en", edition)
    font_path = edition / WEBFONTS / "fa-solid-900.woff2"
    bars = icon_code_points((edition / THEME_CSS).read_text(encoding="utf-8"))[
        "fa-bars"
    ]
    font = TTFont(font_path)
    kept = set(font.getBestCmap()) - {bars}
    cutter = subset.Subsetter(subset.Options(flavor="woff2"))
    cutter.populate(unicodes=kept)
    cutter.subset(font)
    font.flavor = "woff2"
    font.save(font_path)
    assert "en: no glyph for fa-bars" in icon_problems(edition)
