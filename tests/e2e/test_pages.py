"""Every page of both editions, loaded once per width, with every check that
reads a page: the crawl.

At 1280 px (a laptop): it loads offline with no console error, failed
request or broken image, its math is KaTeX's; code fits its block; figures
are sharp at 2 device px per CSS px; one search field; the zh interface has
no English; the headings form an outline; every image has alt text in the
page's language; axe-core finds no critical or serious violation, collapsed
cells and solutions opened; and the language switch leads to the same page of
the other edition (each edition's visit follows it one way, so the two
editions' visits make the round trip).

At 390 px (a phone): the first load, cold cache, is held to the weight
budget (tests/e2e/page_weight.py's WEIGHT_BUDGET: bytes, image bytes,
requests and render-blocking resources, none of which depends on how busy
the machine is; the time to load is a benchmark, ``make bench-pages``), and
the loaded page is checked: it loads cleanly, nothing sticks out sideways,
figure text is legible and figures sharp at 3 device px per CSS px, the
figures below the first screen are lazy, math is rendered by the build, and
the zh header speaks Chinese.

One load per page and width; each check is a function of tests/e2e/browser.py
or page_weight.py that other tests show fails on a broken copy of the site
(test_checks_catch_breakage.py, test_accessibility.py, test_page_weight.py).
"""

import re

import pytest
from browser import (
    MATH_JS,
    SKIP_PAGES,
    alt_text_problems,
    axe_problems,
    code_scroll_problems,
    english_ui_problems,
    figure_text_problems,
    follow_switch,
    heading_problems,
    horizontal_scroll_problems,
    load_problems,
    open_page,
    search_field_problems,
    site_pages,
    upscaled_figure_problems,
)
from conftest import SITE
from page_weight import (
    ARTICLE_IMAGES_JS,
    budget_problems,
    has_math,
    katex_problems,
    lazy_problems,
    measure,
    phone_context,
)

OTHER = {"zh": "en", "en": "zh"}
PAGES = [(lang, path) for lang in OTHER for path in site_pages(SITE, lang)]
IDS = [f"{lang}/{path}" for lang, path in PAGES]
# The two pages Sphinx generates that a reader opens: the accessibility checks.
GENERATED = [
    (lang, path)
    for lang in OTHER
    for path in sorted(SKIP_PAGES - {"py-modindex.html"})
    if (SITE / lang / path).exists()
]
CODE_STYLES: dict[str, set] = {lang: set() for lang in OTHER}  # browser.CODE_STYLES_JS


def failed(checks: dict[str, list[str]]) -> dict[str, list[str]]:
    """The checks that found problems, by name."""
    return {name: problems for name, problems in checks.items() if problems}


@pytest.mark.parametrize(("lang", "path"), PAGES, ids=IDS)
def test_page_at_1280(page, site_url, lang, path):
    seen = open_page(page, f"{site_url}/{lang}/{path}")
    checks = {
        "loads cleanly offline": load_problems(page, seen),
        "code fits its block": code_scroll_problems(page, None),
        "figures sharp at 2 device px per CSS px": upscaled_figure_problems(
            page, None, 2
        ),
        "one search field": search_field_problems(page, None),
        # The sidebars show at 1280 px.
        "zh interface has no English": (
            english_ui_problems(page, None) if lang == "zh" else []
        ),
        "headings form an outline": heading_problems(page),
        "alt text says what each image shows": alt_text_problems(page, lang),
        # Opens every collapsed cell and solution: after the checks above.
        "axe-core": axe_problems(page, seen=CODE_STYLES[lang]),
        # Leaves the page: last.
        "language switch": follow_switch(page, site_url, lang, OTHER[lang], path),
    }
    assert failed(checks) == {}


@pytest.mark.parametrize(
    ("lang", "path"), GENERATED, ids=[f"{g}/{p}" for g, p in GENERATED]
)
def test_generated_page_at_1280(page, site_url, lang, path):
    page.goto(f"{site_url}/{lang}/{path}", wait_until="networkidle")
    checks = {
        "headings form an outline": heading_problems(page),
        "alt text says what each image shows": alt_text_problems(page, lang),
        "axe-core": axe_problems(page, seen=CODE_STYLES[lang]),
    }
    assert failed(checks) == {}


def test_pages_are_found():
    for lang in OTHER:
        assert sum(1 for lg, _ in PAGES if lg == lang) >= 19
        assert sum(1 for lg, _ in GENERATED if lg == lang) == 2
    # 38 figures per edition at the time of writing: the alt check sees them.
    html = (SITE / "en" / "03-multi-head.html").read_text(encoding="utf-8")
    assert re.search(r'<img alt="Flow diagram', html)


def phone_checks(lang: str):
    """What the phone checks read on the measured page, unthrottled."""

    def inspect(page, seen) -> dict:
        images = page.evaluate(ARTICLE_IMAGES_JS)  # before the lazy ones load
        math = page.evaluate(MATH_JS)
        checks = {
            # Loads every lazy figure, so that a broken one is seen.
            "loads cleanly offline": load_problems(page, seen),
            "no sideways scroll": horizontal_scroll_problems(page, None),
            "figure text is legible": figure_text_problems(page, None, SITE),
            "figures sharp at 3 device px per CSS px": upscaled_figure_problems(
                page, None, 3
            ),
            # The header buttons.
            "zh interface has no English": (
                english_ui_problems(page, None) if lang == "zh" else []
            ),
        }
        return {"images": images, "math": math, "checks": checks}

    return inspect


@pytest.mark.parametrize(("lang", "path"), PAGES, ids=IDS)
def test_page_at_390(chromium, site_url, lang, path):
    url = f"{site_url}/{lang}/{path}"
    # On the phone's network, whose speed sets how far ahead the browser
    # fetches lazy figures, so the bytes are those a phone fetches.
    r = measure(phone_context(chromium), url, phone_checks(lang), throttle=True)
    checks = {
        "weight budget": budget_problems(r),
        "math rendered by the build": katex_problems(r, has_math(lang, path, SITE)),
        "figures below the first screen lazy": lazy_problems(r["inspected"]["images"]),
        **r["inspected"]["checks"],
    }
    assert failed(checks) == {}
