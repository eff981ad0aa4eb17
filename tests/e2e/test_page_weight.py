"""Fast pages: every page's first load within the budget, figures sized for the
column and lazy below the fold, KaTeX's stylesheet only where there is math, and no math script anywhere.

The measurements (tests/e2e/page_weight.py) go to ``<build>/page-weight.json``
and onto ``build-report.html`` once every page has been measured.
"""

import datetime
import re
import shutil
import statistics

import pytest
from browser import MATH_JS, math_problems, serve, site_pages
from conftest import SITE, rebundle
from page_weight import (
    ARTICLE_IMAGES_JS,
    content_width,
    lazy_problems,
    measure,
    oversized_images,
    phone_context,
    summary,
    table,
)

# The budget of one page's first visit, as a phone on Lighthouse's mobile
# profile feels it (DevTools throttling: 562 ms per request, 1.4 Mbit/s down,
# a CPU 4x slower), cold cache, from the local server sending the gzip copies
# a host sends (tools/compressed.py; HTTP/1.1, six connections, where a host
# such as GitHub Pages speaks HTTP/2).
# Measured on a quiet machine (tests/e2e/page_weight.py --throttle), 19 pages
# per edition, with every figure lazy (none is in a phone's first screen):
# bytes median 114 KiB (en) and 122 KiB (zh), largest 153 and 157 KiB (the
# API reference; chapter 11, 137 and 142 KiB, with the explorer's weights
# inline, 21 KiB), images at most 32 KiB (a figure within the browser's
# lazy-loading distance); largest contentful paint 1.5-1.8 s; load event
# 2.6-3.6 s; blocking time at most 145 ms in four runs of the heaviest pages,
# with single runs up to 243 ms (en/02) and, in an earlier run beside the
# other browser tests, 342 ms: a timing is noisy, so one over its budget is
# measured twice more and the median of the three runs is held to it, as
# Lighthouse CI asserts on the median of its runs. Chapter 02 alone measured
# 107, 114 and 221 ms in three runs on a quiet machine, and a median of three
# of 305 ms in a fresh-clone CI run (zh/02 277 ms, zh/12 270 ms): the
# blocking budget is 400 ms, so that the noise of a two-core machine does
# not decide; a page twice as slow still fails. The other budgets are the goal.
BUDGET = {
    "bytes": 200 * 1024,
    "image_bytes": 64 * 1024,
    "blocking_ms": 400,
    "lcp_ms": 2500,
    "load_ms": 5000,
}
# The measurements that vary from run to run (bytes do not).
TIMINGS = ("blocking_ms", "lcp_ms", "load_ms")
RUNS_WHEN_OVER = 3
LANGS = ("zh", "en")
PAGES = [(lang, path) for lang in LANGS for path in site_pages(SITE, lang)]
IDS = [f"{lang}/{path}" for lang, path in PAGES]


def has_math(lang: str, path: str, site=SITE) -> bool:
    """Whether the page holds math (Sphinx marks each formula ``class="math``)."""
    return 'class="math' in (site / lang / path).read_text(encoding="utf-8")


def timing_over_budget(r: dict, budget=BUDGET) -> bool:
    return any(r[key] > budget[key] for key in TIMINGS)


def median_timings(runs: list[dict]) -> dict:
    """The first run with each timing replaced by its median over ``runs``."""
    merged = dict(runs[0])
    for key in TIMINGS:
        merged[key] = statistics.median(run[key] for run in runs)
    merged["runs"] = [{key: run[key] for key in TIMINGS} for run in runs]
    return merged


def budget_problems(r: dict, budget=BUDGET) -> list[str]:
    problems = list(r["problems"])
    checks = [
        ("bytes", r["bytes"], "bytes transferred"),
        ("image_bytes", r["by_kind"].get("image", 0), "image bytes"),
        ("load_ms", r["load_ms"], "ms to the load event"),
        ("lcp_ms", r["lcp_ms"], "ms to the largest contentful paint"),
        ("blocking_ms", r["blocking_ms"], "ms of blocking time"),
    ]
    for key, value, what in checks:
        if value > budget[key]:
            problems.append(f"{value} {what}, budget {budget[key]}")
    return problems


def katex_problems(r: dict, math: bool) -> list[str]:
    """No math script anywhere; KaTeX's stylesheet exactly on the pages with math,
    whose formulas are KaTeX's HTML, styled, in its fonts (browser.math_problems)."""
    problems = [f"a math script loaded: {name}" for name in r["math_scripts"]]
    if not math:
        if r["math_css"]:
            problems.append("KaTeX's stylesheet loaded on a page without math")
        return problems
    if not r["math_css"]:
        problems.append("a page with math did not load KaTeX's stylesheet")
    return problems + math_problems(r["inspected"]["math"])


def inspect(page) -> dict:
    return {
        "math": page.evaluate(MATH_JS),
        "images": page.evaluate(ARTICLE_IMAGES_JS),
    }


@pytest.fixture(scope="module")
def measurements():
    """Every page's measurement; written to the report once all are in."""
    results = {}
    yield results
    if set(results) != set(IDS):
        return  # a subset (-k) does not overwrite the full table
    ordered = {key: results[key] for key in IDS}
    for r in ordered.values():
        r.pop("inspected", None)
    print("\n" + table(ordered))
    from tools.build.page_weight import publish_page_weight, site_fingerprint

    publish_page_weight(
        SITE.parent,
        {
            "measured": datetime.datetime.now().isoformat(timespec="seconds"),
            "site": site_fingerprint(SITE),
            "budget": BUDGET,
            "summary": summary(ordered),
            "pages": ordered,
        },
    )


@pytest.mark.parametrize("lang,path", PAGES, ids=IDS)
def test_first_load_is_within_budget(chromium, site_url, measurements, lang, path):
    def run() -> dict:
        url = f"{site_url}/{lang}/{path}"
        return measure(phone_context(chromium), url, inspect, throttle=True)

    r = run()
    if timing_over_budget(r):  # noise or real: the median of three decides
        r = median_timings([r] + [run() for _ in range(RUNS_WHEN_OVER - 1)])
    measurements[f"{lang}/{path}"] = r
    checks = {
        "budget": budget_problems(r),
        "math rendered by the build": katex_problems(r, has_math(lang, path)),
        "figures below the first screen lazy": lazy_problems(r["inspected"]["images"]),
    }
    assert {k: v for k, v in checks.items() if v} == {}


def test_some_pages_have_no_math():
    """The math check above sees both kinds of page."""
    without = [key for (lang, path), key in zip(PAGES, IDS) if not has_math(lang, path)]
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
        text.replace("</head>", '<script src="_static/big.js"></script></head>'),
        encoding="utf-8",
    )
    with serve(broken_site) as url:
        r = measure(phone_context(chromium), f"{url}/en/glossary.html")
    assert any("bytes transferred" in p for p in budget_problems(r)), r
    assert budget_problems(r, {**BUDGET, "bytes": 10**9}) == []


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
    assert any("ms of blocking time" in p for p in budget_problems(r)), r


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


def test_a_page_slow_in_most_runs_fails_and_one_slow_run_does_not():
    def run(blocking_ms):
        return {
            "problems": [],
            "bytes": 100 * 1024,
            "by_kind": {"image": 0},
            "blocking_ms": blocking_ms,
            "lcp_ms": 1600,
            "load_ms": 3000,
        }

    first = run(500)
    assert timing_over_budget(first)
    slow = median_timings([first, run(480), run(120)])
    assert slow["blocking_ms"] == 480
    assert budget_problems(slow) == ["480 ms of blocking time, budget 400"]
    once = median_timings([first, run(110), run(120)])
    assert once["blocking_ms"] == 120 and budget_problems(once) == []
    assert [r["blocking_ms"] for r in once["runs"]] == [500, 110, 120]


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
