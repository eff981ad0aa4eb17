"""The built site as a reader sees it: every page, both languages, offline."""

import re

import pytest
from browser import page_problems, search_hits, site_pages, switch_problems
from conftest import SCREENSHOTS, SITE

LANGS = (("zh", "en"), ("en", "zh"))
PAGES = [(lang, other, path) for lang, other in LANGS for path in site_pages(SITE, lang)]
SCREENSHOT_PAGES = ["index.html", "01-overview.html", "05-verification.html"]


@pytest.mark.parametrize("lang,other,path", PAGES, ids=[f"{l}/{p}" for l, _, p in PAGES])
def test_page_loads_cleanly_offline(page, site_url, lang, other, path):
    assert page_problems(page, f"{site_url}/{lang}/{path}") == []


@pytest.mark.parametrize("lang,other,path", PAGES, ids=[f"{l}/{p}" for l, _, p in PAGES])
def test_language_switch_round_trip(page, site_url, lang, other, path):
    assert switch_problems(page, site_url, lang, other, path) == []


def test_landing_page_picks_the_readers_language(chromium, site_url):
    for locale, lang in (("en-US", "en"), ("zh-CN", "zh"), ("fr-FR", "zh")):
        context = chromium.new_context(locale=locale)
        page = context.new_page()
        page.goto(f"{site_url}/index.html")
        page.wait_for_url(re.compile(rf"/{lang}/index\.html$"))
        context.close()


@pytest.mark.parametrize("lang,query", [("zh", "多头注意力"), ("zh", "缩放点积注意力"),
                                        ("en", "multi-head attention"), ("en", "scaled dot-product")])
def test_search_finds_the_chapters(page, site_url, lang, query):
    hits = search_hits(page, site_url, lang, query)
    chapters = [h for h in hits if re.match(r"\d\d-", h)]
    assert chapters, f"search for {query!r} in {lang} found {hits}"
    source = {p.stem for p in (SITE.parent.parent / "docs" / lang).glob("*.md")
              if query.split()[0].lower() in p.read_text(encoding="utf-8").lower()}
    found = {h.removesuffix(".html") for h in hits}
    assert source & found, f"none of the pages containing {query!r} ({sorted(source)}) were found"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_screenshots(page, site_url, lang):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    taken = []
    for path in SCREENSHOT_PAGES:
        if not (SITE / lang / path).exists():
            continue
        page.goto(f"{site_url}/{lang}/{path}", wait_until="networkidle")
        out = SCREENSHOTS / f"{lang}-{path.removesuffix('.html')}.png"
        page.screenshot(path=str(out))
        assert out.stat().st_size > 10_000
        taken.append(out)
    assert len(taken) == 3
