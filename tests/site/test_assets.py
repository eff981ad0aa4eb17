"""Each page loads what it uses: no icon script, the search scripts on the search
page only, and an icon font that still draws every icon the site names
(docs/_ext/book_assets.py)."""

import re
import shutil
from pathlib import Path

import pytest
from book_assets import THEME_CSS, WEBFONTS, icon_code_points, icons_named
from fontTools import subset
from fontTools.ttLib import TTFont

ROOT = Path(__file__).resolve().parents[2]

LANGS = ("zh", "en")
SEARCH_FILES = ("searchtools.js", "language_data.js")


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
        # the book's own index (tools/build/search.py), not Sphinx's searchindex.js
        index = {name for name in loaded if name.startswith("book-search-")}
        assert "searchindex.js" not in loaded, page
        if page.name == "search.html":
            assert set(SEARCH_FILES) <= set(loaded) and len(index) == 1, page
        else:
            assert not (set(SEARCH_FILES) & set(loaded) or index), (page, loaded)
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


# --- the math fonts and the purged stylesheets ------------------------------
def math_font_problems(edition: Path) -> list[str]:
    """Characters of the formulas that a cut KaTeX font lost but its original has."""
    from book_assets import KATEX_FONTS, math_characters

    originals = next((edition.parents[1] / "static_katex").glob("*/katex/fonts"))
    wanted = {ord(c) for c in math_characters(edition) if not c.isspace()}
    problems = []
    for font in sorted((edition / KATEX_FONTS).glob("*.woff2")):
        had = set(TTFont(originals / font.name).getBestCmap() or {})
        has = set(TTFont(font).getBestCmap() or {})
        problems += [
            f"{edition.name}/{font.name}: no glyph for {chr(c)!r}"
            for c in sorted((wanted & had) - has)
        ]
    return problems


@pytest.mark.parametrize("lang", LANGS)
def test_the_cut_math_fonts_draw_every_character_of_the_formulas(site, lang):
    edition = site / lang
    assert math_font_problems(edition) == []
    main = edition / "_static/katex/fonts/KaTeX_Main-Regular.woff2"
    original = next(
        (site.parent / "static_katex").glob("*/katex/fonts/KaTeX_Main-Regular.woff2")
    )
    assert main.stat().st_size < original.stat().st_size / 2  # it was cut


def test_a_math_font_missing_a_character_is_caught(site, tmp_path):
    edition = tmp_path / "html" / "en"
    shutil.copytree(site / "en", edition)
    shutil.copytree(site.parent / "static_katex", tmp_path / "static_katex")
    font_path = edition / "_static/katex/fonts/KaTeX_Math-Italic.woff2"
    font = TTFont(font_path)
    options = subset.Options()
    options.flavor = "woff2"
    cut = subset.Subsetter(options)
    cut.populate(unicodes=set(font.getBestCmap()) - {ord("d")})
    cut.subset(font)
    font.flavor = "woff2"
    font.save(font_path)
    assert "en/KaTeX_Math-Italic.woff2: no glyph for 'd'" in math_font_problems(edition)


@pytest.mark.parametrize("lang", LANGS)
def test_the_stylesheets_are_purged_and_their_originals_kept(site, lang):
    from book_assets import BUNDLE_NAME, OWN_CSS, unpurged_dir

    edition = site / lang
    keep = unpurged_dir(edition)
    theme = edition / "_static/styles/pydata-sphinx-theme.css"
    original = keep / "_static/styles/pydata-sphinx-theme.css"
    assert theme.stat().st_size < original.stat().st_size / 2
    for css in (edition / "_static").rglob("*.css"):
        if BUNDLE_NAME.fullmatch(css.name):
            continue  # made from the purged files: not purged itself
        kept = keep / css.relative_to(edition)
        assert kept.is_file() != (css.name in OWN_CSS), css


@pytest.mark.parametrize("lang", LANGS)
def test_every_page_links_one_stylesheet_made_from_its_sources_as_they_are(site, lang):
    """A page links one bundle; the bundle is its listed stylesheets as the
    site has them now (not an older build's), so no page is drawn stale."""
    import hashlib
    import re

    from book_assets import CSS_SOURCES, STYLESHEET, css_for_bundle

    edition = site / lang
    pages = sorted(edition.glob("*.html"))
    assert len(pages) > 15
    for page in pages:
        html = page.read_text(encoding="utf-8")
        head = html.split("</head>", 1)[0]
        links = STYLESHEET.findall(head)
        assert len(links) == 1, (page.name, links)
        bundle = edition / links[0]
        sources = CSS_SOURCES.search(head).group(1).split()
        assert "_static/book.css" in sources and len(sources) >= 8, sources
        assert ("_static/katex/katex.min.css" in sources) == (
            "book-katex-" in bundle.name
        )
        expected = "\n".join(
            css_for_bundle(edition / s, edition / "_static") for s in sources
        )
        text = bundle.read_text(encoding="utf-8")
        assert text == expected, (
            f"{page.name}: {bundle.name} is not made of its sources"
        )
        assert hashlib.sha256(text.encode()).hexdigest()[:16] in bundle.name
        for url in re.findall(r'url\("([^"]+)"\)', text):
            if not url.startswith("data:"):
                assert (bundle.parent / url.split("?")[0]).is_file(), (bundle.name, url)
