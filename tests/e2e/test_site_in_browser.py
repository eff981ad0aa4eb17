"""The built site as a reader sees it: every page, both languages, offline."""

import re

import pytest
from browser import (
    DESKTOP,
    code_scroll_problems,
    PHONE,
    english_ui_problems,
    figure_text_problems,
    horizontal_scroll_problems,
    page_problems,
    search_hits,
    site_pages,
    switch_problems,
)
from conftest import SCREENSHOTS, SITE

LANGS = (("zh", "en"), ("en", "zh"))
PAGES = [
    (lang, other, path) for lang, other in LANGS for path in site_pages(SITE, lang)
]
SCREENSHOT_PAGES = [
    "05-verification.html",
    "10-decoder-char-lm.html",
    "11-pretrained-bert.html",
]


@pytest.mark.parametrize(
    "lang,other,path", PAGES, ids=[f"{l}/{p}" for l, _, p in PAGES]
)
def test_page_loads_cleanly_offline(page, site_url, lang, other, path):
    assert page_problems(page, f"{site_url}/{lang}/{path}") == []


@pytest.mark.parametrize(
    "lang,other,path", PAGES, ids=[f"{l}/{p}" for l, _, p in PAGES]
)
def test_language_switch_round_trip(page, site_url, lang, other, path):
    assert switch_problems(page, site_url, lang, other, path) == []


def test_landing_page_picks_the_readers_language(chromium, site_url):
    for locale, lang in (("en-US", "en"), ("zh-CN", "zh"), ("fr-FR", "zh")):
        context = chromium.new_context(locale=locale)
        page = context.new_page()
        page.goto(f"{site_url}/index.html")
        page.wait_for_url(re.compile(rf"/{lang}/index\.html$"))
        context.close()


@pytest.mark.parametrize(
    "lang,query",
    [
        ("zh", "多头注意力"),
        ("zh", "缩放点积注意力"),
        ("en", "multi-head attention"),
        ("en", "scaled dot-product"),
    ],
)
def test_search_finds_the_chapters(page, site_url, lang, query):
    hits = search_hits(page, site_url, lang, query)
    chapters = [h for h in hits if re.match(r"\d\d-", h)]
    assert chapters, f"search for {query!r} in {lang} found {hits}"
    source = {
        p.stem
        for p in (SITE.parent.parent / "docs" / lang).glob("*.md")
        if query.split()[0].lower() in p.read_text(encoding="utf-8").lower()
    }
    found = {h.removesuffix(".html") for h in hits}
    assert source & found, (
        f"none of the pages containing {query!r} ({sorted(source)}) were found"
    )


@pytest.mark.parametrize(
    "lang,other,path", PAGES, ids=[f"{l}/{p}" for l, _, p in PAGES]
)
def test_no_sideways_scroll_on_a_phone(phone, site_url, lang, other, path):
    assert horizontal_scroll_problems(phone, f"{site_url}/{lang}/{path}") == []


@pytest.mark.parametrize(
    "lang,other,path", PAGES, ids=[f"{l}/{p}" for l, _, p in PAGES]
)
def test_figure_text_is_legible_on_a_phone(phone, site_url, lang, other, path):
    assert figure_text_problems(phone, f"{site_url}/{lang}/{path}", SITE) == []


@pytest.mark.parametrize(
    "lang,other,path", PAGES, ids=[f"{l}/{p}" for l, _, p in PAGES]
)
def test_code_fits_its_block_on_a_laptop(page, site_url, lang, other, path):
    assert code_scroll_problems(page, f"{site_url}/{lang}/{path}") == []


ZH_PAGES = [path for lang, _, path in PAGES if lang == "zh"]


@pytest.mark.parametrize("path", ZH_PAGES)
def test_zh_interface_has_no_english(page, phone, site_url, path):
    for p in (page, phone):  # the sidebars show at 1280 px, the header buttons on both
        assert english_ui_problems(p, f"{site_url}/zh/{path}") == []


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["390", "1280"])
def test_screenshots(chromium, site_url, lang, viewport):
    """Whole-page screenshots for review, in _build/screenshots/<lang>-<page>-<width>.png."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    phone = viewport is PHONE
    context = chromium.new_context(
        viewport=viewport,
        device_scale_factor=2 if phone else 1,
        is_mobile=phone,
        has_touch=phone,
    )
    page = context.new_page()
    for path in SCREENSHOT_PAGES:
        page.goto(f"{site_url}/{lang}/{path}", wait_until="networkidle")
        out = (
            SCREENSHOTS / f"{lang}-{path.removesuffix('.html')}-{viewport['width']}.png"
        )
        page.screenshot(path=str(out), full_page=True)
        assert out.stat().st_size > 10_000
    context.close()
