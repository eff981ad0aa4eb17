"""The built site as a reader sees it: the landing page, search, screenshots.

Every page's checks at both widths are the crawl's (test_pages.py).
"""

import re

import pytest
from browser import (
    DESKTOP,
    PHONE,
    search_hits,
    site_pages,
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
