"""The built site as a reader sees it: every page, both languages, offline."""

import re

import pytest
from browser import (
    DESKTOP,
    PHONE,
    code_scroll_problems,
    english_ui_problems,
    figure_text_problems,
    horizontal_scroll_problems,
    load_problems,
    open_page,
    search_field_problems,
    search_hits,
    site_pages,
    switch_problems,
    upscaled_figure_problems,
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


def failed_checks(checks: dict[str, list[str]]) -> dict[str, list[str]]:
    """The checks of one page load that found problems, by name."""
    return {name: problems for name, problems in checks.items() if problems}


# Each page is loaded once per width and every check of that width reads the
# same load: a load waits for the network to go idle, the slow part of the run.
@pytest.mark.parametrize(
    "lang,other,path", PAGES, ids=[f"{lang}/{p}" for lang, _, p in PAGES]
)
def test_page_on_a_laptop(page, site_url, lang, other, path):
    seen = open_page(page, f"{site_url}/{lang}/{path}")
    checks = {
        "loads cleanly offline": load_problems(page, seen),
        "code fits its block": code_scroll_problems(page, None),
        "figures sharp at 2 device px per CSS px": upscaled_figure_problems(
            page, None, 2
        ),
        "one search field": search_field_problems(page, None),
    }
    if lang == "zh":  # the sidebars show at 1280 px
        checks["zh interface has no English"] = english_ui_problems(page, None)
    assert failed_checks(checks) == {}


@pytest.mark.parametrize(
    "lang,other,path", PAGES, ids=[f"{lang}/{p}" for lang, _, p in PAGES]
)
def test_page_on_a_phone(phone, site_url, lang, other, path):
    seen = open_page(phone, f"{site_url}/{lang}/{path}")
    checks = {
        "loads cleanly offline": load_problems(phone, seen),
        "no sideways scroll": horizontal_scroll_problems(phone, None),
        "figure text is legible": figure_text_problems(phone, None, SITE),
        "figures sharp at 3 device px per CSS px": upscaled_figure_problems(
            phone, None, 3
        ),
    }
    if lang == "zh":  # the header buttons
        checks["zh interface has no English"] = english_ui_problems(phone, None)
    assert failed_checks(checks) == {}


@pytest.mark.parametrize(
    "lang,other,path", PAGES, ids=[f"{lang}/{p}" for lang, _, p in PAGES]
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
        # Figures below the fold are lazy: load them all for the whole-page picture.
        page.evaluate(
            "() => document.querySelectorAll('img[loading=lazy]')"
            ".forEach((img) => { img.loading = 'eager'; })"
        )
        page.wait_for_load_state("networkidle")
        out = (
            SCREENSHOTS / f"{lang}-{path.removesuffix('.html')}-{viewport['width']}.png"
        )
        page.screenshot(path=str(out), full_page=True)
        assert out.stat().st_size > 10_000
    context.close()
