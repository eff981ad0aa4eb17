"""Fast pages: figures sized for the column and lazy below the fold, and the
page-weight checks shown to fail on broken copies of the site.

Every page's first load is held to the weight budget (tests/e2e/page_weight.py's
WEIGHT_BUDGET) by the crawl, tests/e2e/test_pages.py; its timings are the
bench's (``make bench-pages``, TIME_BUDGET), checked here on made-up runs.
"""

import re
import shutil

import pytest
from browser import MATH_JS, math_problems, serve, site_pages
from conftest import SITE, rebundle
from page_weight import (
    ARTICLE_IMAGES_JS,
    WEIGHT_BUDGET,
    budget_problems,
    content_width,
    has_math,
    katex_problems,
    lazy_problems,
    measure,
    oversized_images,
    phone_context,
    timing_problems,
    within_budget,
)

LANGS = ("zh", "en")
PAGES = [(lang, path) for lang in LANGS for path in site_pages(SITE, lang)]
IDS = [f"{lang}/{path}" for lang, path in PAGES]


def inspect(page, seen=None) -> dict:
    return {
        "math": page.evaluate(MATH_JS),
        "images": page.evaluate(ARTICLE_IMAGES_JS),
    }


def test_some_pages_have_no_math():
    """The math check above sees both kinds of page."""
    without = [
        key for (lang, path), key in zip(PAGES, IDS) if not has_math(lang, path, SITE)
    ]
    assert without and len(without) < len(PAGES)


def test_figures_are_at_most_three_times_the_column(page, site_url):
    """No figure PNG is wider than the text column at 3x (a phone's screen):
    more pixels than any screen shows would be bytes for nothing."""
    width = content_width(page, f"{site_url}/en/06-applications.html")
    assert 600 < width < 1200, f"the column is {width} px wide"
    problems = [
        p for lang, path in PAGES for p in oversized_images(SITE, lang, path, 3 * width)
    ]
    assert problems == []


def test_lazy_figures_wait_for_the_reader(chromium, site_url):
    """On a phone the first load leaves the figures far below the fold unfetched;
    each loads when the reader scrolls to it."""
    url = f"{site_url}/en/06-applications.html"
    r = measure(phone_context(chromium), url, inspect)
    shown = [img["src"].rsplit("/", 1)[-1] for img in r["inspected"]["images"]]
    assert len(shown) >= 3
    assert set(shown) - set(r["images"]), f"every figure fetched: {r['images']}"
    context = phone_context(chromium)()
    try:
        page = context.new_page()
        page.goto(url, wait_until="networkidle")
        for figure in page.locator("article.bd-article img").all():
            figure.scroll_into_view_if_needed()
            page.wait_for_function(
                "(img) => img.complete && img.naturalWidth > 0",
                arg=figure.element_handle(),
            )
    finally:
        context.close()


# --- the checks fail on a broken site --------------------------------------------
@pytest.fixture
def broken_site(tmp_path):
    copy = tmp_path / "html"
    shutil.copytree(SITE, copy)
    return copy


def test_a_page_over_budget_is_reported(chromium, broken_site):
    html = broken_site / "en" / "glossary.html"
    (broken_site / "en" / "_static" / "big.js").write_text(
        "// padding\n" * 500_000, encoding="utf-8"
    )
    text = html.read_text(encoding="utf-8")
    html.write_text(
        # Deferred: it adds bytes but does not block the first render.
        text.replace("</head>", '<script defer src="_static/big.js"></script></head>'),
        encoding="utf-8",
    )
    with serve(broken_site) as url:
        r = measure(phone_context(chromium), f"{url}/en/glossary.html")
    assert any("bytes transferred" in p for p in budget_problems(r)), r
    assert budget_problems(r, {**WEIGHT_BUDGET, "bytes": 10**9}) == []


def test_a_long_task_on_a_slow_phone_is_reported(chromium, broken_site):
    """A script that keeps the main thread busy for 3 s after the load is a
    long task of 2,950 ms blocking time: over the budget."""
    html = broken_site / "en" / "glossary.html"
    text = html.read_text(encoding="utf-8")
    busy = (
        "<script>addEventListener('load', () => setTimeout(() => {"
        " const t = performance.now(); while (performance.now() - t < 3000) {} }, 0));"
        "</script></head>"
    )
    html.write_text(text.replace("</head>", busy), encoding="utf-8")
    with serve(broken_site) as url:
        r = measure(phone_context(chromium), f"{url}/en/glossary.html", throttle=True)
    assert r["blocking_ms"] >= 2900, r
    assert any("ms of blocking time" in p for p in timing_problems(r)), r


def test_math_css_or_a_math_script_on_a_page_without_math_is_reported(
    chromium, broken_site
):
    html = broken_site / "en" / "glossary.html"
    assert not has_math("en", "glossary.html", broken_site)
    shutil.copy(
        broken_site / "en/_static/katex/katex.min.css",
        broken_site / "en/_static/katex/katex.js",
    )
    text = html.read_text(encoding="utf-8")
    html.write_text(
        text.replace(
            "</head>",
            '<link rel="stylesheet" href="_static/katex/katex.min.css" />'
            '<script defer src="_static/katex/katex.js"></script></head>',
        ),
        encoding="utf-8",
    )
    with serve(broken_site) as url:
        r = measure(phone_context(chromium), f"{url}/en/glossary.html", inspect)
    assert katex_problems(r, False) == [
        "a math script loaded: /en/_static/katex/katex.js",
        "KaTeX's stylesheet loaded on a page without math",
    ]


def test_math_without_its_stylesheet_is_reported(chromium, broken_site):
    html = broken_site / "en" / "02-scaled-dot-product.html"
    assert has_math("en", "02-scaled-dot-product.html", broken_site)
    text = html.read_text(encoding="utf-8")
    # KaTeX's stylesheet left out of the page's one stylesheet
    html.write_text(
        text.replace(" _static/katex/katex.min.css", "", 1), encoding="utf-8"
    )
    rebundle(broken_site)
    assert "book-katex-" not in html.read_text(encoding="utf-8")
    with serve(broken_site) as url:
        r = measure(
            phone_context(chromium), f"{url}/en/02-scaled-dot-product.html", inspect
        )
    problems = katex_problems(r, True)
    assert "a page with math did not load KaTeX's stylesheet" in problems
    assert "KaTeX's stylesheet does not apply" in problems
    assert "no KaTeX font loaded" in problems


def test_a_wide_formula_centred_out_of_reach_is_reported(chromium, broken_site):
    """Chapter 12's widest formula is wider than a phone's column. The theme
    lays div.math out as a reversed flex row: without book.css's scrolling
    box, the formula cannot shrink and overflows to the left, its start cut."""
    html = broken_site / "zh" / "12-flash-attention.html"
    text = html.read_text(encoding="utf-8")
    html.write_text(
        text.replace(
            "</head>",
            "<style>div.math .katex-display { overflow: visible !important; }"
            " div.math .katex-display > .katex { display: block !important; }</style></head>",
        ),
        encoding="utf-8",
    )
    with serve(broken_site) as url:
        fixed = measure(
            phone_context(chromium), f"{url}/en/12-flash-attention.html", inspect
        )
        broken = measure(
            phone_context(chromium), f"{url}/zh/12-flash-attention.html", inspect
        )
    assert fixed["inspected"]["math"]["cut"] == 0
    assert any("out of reach" in p for p in math_problems(broken["inspected"]["math"]))


def test_an_oversized_figure_is_reported(broken_site):
    from PIL import Image

    path = "06-applications.html"
    assert oversized_images(broken_site, "en", path, 2400) == []
    text = (broken_site / "en" / path).read_text(encoding="utf-8")
    article = text.split('<article class="bd-article">', 1)[1]
    src = re.search(r'<img[^>]+src="([^"]+\.png)"', article).group(1)
    Image.new("RGB", (3600, 300), "white").save(broken_site / "en" / src)
    assert oversized_images(broken_site, "en", path, 2400) == [
        f"{src} is 3600 px wide, more than 2400 px"
    ]


def timed_run(blocking_ms, lcp_ms=1600):
    return {
        "problems": [],
        "bytes": 100 * 1024,
        "by_kind": {"image": 0},
        "blocking_ms": blocking_ms,
        "lcp_ms": lcp_ms,
        "load_ms": 3000,
    }


def test_a_page_slow_in_every_run_fails_and_one_whole_run_that_fits_passes():
    again = iter([timed_run(480), timed_run(450), timed_run(430), timed_run(610)])
    slow = within_budget(timed_run(500), lambda: next(again))
    assert slow["blocking_ms"] == 430 and len(slow["runs"]) == 5
    assert timing_problems(slow) == ["430 ms of blocking time, budget 400"]
    again = iter([timed_run(480), timed_run(120), timed_run(999)])
    once = within_budget(timed_run(500), lambda: next(again))
    assert once["blocking_ms"] == 120 and timing_problems(once) == []
    # it stopped at the run that fits
    assert [r["blocking_ms"] for r in once["runs"]] == [500, 480, 120]


def test_timings_are_never_mixed_from_different_runs():
    # Each run is over one budget; the least of each timing would fit both.
    again = iter([timed_run(150, lcp_ms=3000)] * 4)
    r = within_budget(timed_run(500, lcp_ms=1600), lambda: next(again))
    assert len(r["runs"]) == 5
    assert timing_problems(r) != []
    assert (r["blocking_ms"], r["lcp_ms"]) in {(500, 1600), (150, 3000)}


def test_a_page_within_budget_is_measured_once():
    def never():
        raise AssertionError("measured again")

    first = timed_run(120)
    assert within_budget(first, never) is first


def test_an_eager_figure_below_the_first_screen_is_reported():
    screen = 844
    images = [
        {"src": f"_images/{i}.png", "loading": "lazy", "top": top, "screen": screen}
        for i, top in enumerate([300, 1900, 5000])
    ]
    images[0]["loading"] = None
    assert lazy_problems(images) == []
    images[2]["loading"] = None
    images[0]["loading"] = "lazy"
    assert lazy_problems(images) == [
        "_images/0.png starts at 300 px, in the first 844 px screen, but is lazy",
        "_images/2.png starts at 5000 px, below the first 844 px screen, but is not lazy",
    ]


def test_a_render_blocking_script_is_reported_and_a_deferred_one_is_not(
    chromium, broken_site
):
    html = broken_site / "en" / "glossary.html"
    for name in ("a", "b", "c", "d"):
        (broken_site / "en" / "_static" / f"{name}.js").write_text("1;")
    text = html.read_text(encoding="utf-8")
    scripts = (
        "".join(f'<script src="_static/{n}.js"></script>' for n in ("a", "b", "c"))
        + '<script defer src="_static/d.js"></script>'
    )
    with serve(broken_site) as url:
        before = measure(phone_context(chromium), f"{url}/en/glossary.html")
        html.write_text(text.replace("</head>", scripts + "</head>"), encoding="utf-8")
        after = measure(phone_context(chromium), f"{url}/en/glossary.html")
    added = set(after["render_blocking"]) - set(before["render_blocking"])
    assert added == {f"/en/_static/{n}.js" for n in ("a", "b", "c")}
    assert budget_problems(before) == []
    assert any("render-blocking resources" in p for p in budget_problems(after))
    assert after["requests"] == before["requests"] + 4
    assert budget_problems(after, {**WEIGHT_BUDGET, "render_blocking": 10**3}) == []
    fewer = {**WEIGHT_BUDGET, "requests": before["requests"]}
    assert budget_problems(after, {**fewer, "render_blocking": 10**3}) == [
        f"{after['requests']} requests, budget {before['requests']}"
    ]
