"""The purged stylesheets draw every state of the pages as the whole ones do.

The build cuts the theme's stylesheets down to the rules the site uses
(PurgeCSS, docs/_ext/book_assets.py) and keeps the untouched ones beside the
site, in _build/css-unpurged/<lang>/. Each case draws a page in one state
twice, with the whole stylesheets and with the site's, and compares the
pixels: light and dark, phone and desktop, the search dialog, the sidebar
drawer, the download menu, opened toggles and solutions, the explorer.
"""

from __future__ import annotations

import io
import re
import shutil

import pytest
from browser import serve
from conftest import SCREENSHOTS, SITE, rebundle
from PIL import Image, ImageChops

UNPURGED = SITE.parent / "css-unpurged"

STILL_CSS = """*, *::before, *::after { transition: none !important; animation: none !important;
  caret-color: transparent !important; }"""

# Each state is a script run on the loaded page before the screenshot.
OPEN_TOGGLES = """() => {
  for (const d of document.querySelectorAll("details")) d.open = true;
  for (const b of document.querySelectorAll("button.toggle-button")) b.click();
}"""
OPEN_SEARCH = """() => {
  const b = [...document.querySelectorAll(".search-button, .search-button-field")]
    .find((e) => e.offsetParent !== null);
  b.click();
}"""
OPEN_DRAWER = """() => document.querySelector(".primary-toggle").click()"""
# The menu opens once Bootstrap has loaded, on demand (docs/_static/book.js).
OPEN_DOWNLOADS = """async () => {
  document.querySelector(".dropdown-download-buttons .dropdown-toggle").click();
  for (let i = 0; i < 100 && !document.querySelector(".dropdown-download-buttons .dropdown-menu.show"); i++)
    await new Promise((r) => setTimeout(r, 50));
}"""
EXPLORE = """() => {
  const token = document.querySelector(".mha-explorer [data-token], .mha-explorer button");
  if (token) token.click();
}"""

CASES = [
    # (id, page, width, color scheme, state script, whole page?)
    (
        "02-phone-light",
        "en/02-scaled-dot-product.html",
        390,
        "light",
        OPEN_TOGGLES,
        True,
    ),
    ("02-phone-dark", "zh/02-scaled-dot-product.html", 390, "dark", OPEN_TOGGLES, True),
    ("12-desktop-light", "zh/12-flash-attention.html", 1280, "light", None, True),
    ("12-desktop-dark", "en/12-flash-attention.html", 1280, "dark", OPEN_TOGGLES, True),
    ("index-desktop-dark", "zh/index.html", 1280, "dark", None, True),
    (
        "search-dialog-light",
        "en/05-verification.html",
        1280,
        "light",
        OPEN_SEARCH,
        False,
    ),
    ("search-dialog-dark", "zh/05-verification.html", 390, "dark", OPEN_SEARCH, False),
    ("drawer-phone-light", "zh/03-multi-head.html", 390, "light", OPEN_DRAWER, False),
    ("drawer-phone-dark", "en/03-multi-head.html", 390, "dark", OPEN_DRAWER, False),
    (
        "downloads-light",
        "en/04-implementation.html",
        1280,
        "light",
        OPEN_DOWNLOADS,
        False,
    ),
    ("downloads-dark", "zh/04-implementation.html", 390, "dark", OPEN_DOWNLOADS, False),
    ("search-page", "en/search.html?q=attention", 1280, "light", None, True),
    ("explorer-light", "en/11-pretrained-bert.html", 1280, "light", EXPLORE, True),
    ("explorer-dark", "zh/15-tang-poems.html", 390, "dark", EXPLORE, True),
]


@pytest.fixture(scope="module")
def whole_site(tmp_path_factory):
    """The site with its stylesheets as Sphinx wrote them, before the purge."""
    if not UNPURGED.is_dir():
        pytest.fail(f"{UNPURGED} is missing: build the site with `make html`")
    copy = tmp_path_factory.mktemp("whole") / "html"
    shutil.copytree(SITE, copy)
    restored = 0
    for original in UNPURGED.rglob("*.css"):
        shutil.copy(original, copy / original.relative_to(UNPURGED))
        restored += 1
    assert restored >= 10, f"only {restored} stylesheets kept in {UNPURGED}"
    rebundle(copy)  # the pages' one stylesheet, from the untouched ones
    return copy


@pytest.fixture(scope="module")
def servers(whole_site):
    with serve(whole_site) as whole, serve(SITE) as purged:
        yield whole, purged


SEARCH_FINISHED = """() => {
  const summary = document.querySelector("#search-results .search-summary");
  return summary !== null && summary.textContent.startsWith("Search finished");
}"""


def draw(
    chromium, url: str, width: int, scheme: str, state: str | None, full: bool
) -> Image.Image:
    context = chromium.new_context(
        viewport={"width": width, "height": 844 if width < 600 else 900},
        device_scale_factor=1,
        color_scheme=scheme,
        reduced_motion="reduce",
    )
    try:
        page = context.new_page()
        page.goto(url, wait_until="networkidle")
        if "search.html" in url:
            # Sphinx lists the results one at a time (a timer each) and then
            # writes its summary: draw the page once the last result is in.
            page.wait_for_function(SEARCH_FINISHED)
        page.add_style_tag(content=STILL_CSS)
        page.evaluate(
            """async () => { for (const img of document.images) {
                 img.loading = "eager"; try { await img.decode(); } catch (e) {} }
               await document.fonts.ready; }"""
        )
        if state:
            page.evaluate(state)
        page.wait_for_timeout(400)
        return Image.open(io.BytesIO(page.screenshot(full_page=full))).convert("RGB")
    finally:
        context.close()


# A pixel differs when a channel moves by more than this (of 255). Antialiasing
# at a button's rounded corner came out 1-2 levels apart between two drawings
# of the same rule; a rule that is missing moves colours and layout by far more.
INVISIBLE = 8


def difference(a: Image.Image, b: Image.Image) -> str | None:
    """None when the two drawings are the same to the eye, else what differs."""
    if a.size != b.size:
        return f"sizes differ: {a.size} whole, {b.size} purged"
    diff = (
        ImageChops.difference(a, b)
        .convert("L")
        .point(lambda v: 255 if v > INVISIBLE else 0)
    )
    box = diff.getbbox()
    return None if box is None else f"pixels differ in {box}"


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_purged_css_draws_the_same_pixels(chromium, servers, case):
    name, path, width, scheme, state, full = case

    def drawings():
        return [
            draw(chromium, f"{base}/{path}", width, scheme, state, full)
            for base in servers
        ]

    whole, purged = drawings()
    problem = difference(whole, purged)
    if problem:
        # Drawn again: a missing rule differs every time, while Chromium now and
        # then rasterises one glyph of a tall full-page capture a pixel apart
        # (seen once in CI: a 14 px box around one letter of chapter 11).
        whole, purged = drawings()
        problem = difference(whole, purged)
    if problem:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        whole.save(SCREENSHOTS / f"purge-{name}-whole.png")
        purged.save(SCREENSHOTS / f"purge-{name}-purged.png")
    assert problem is None, f"{name}: {problem} (see {SCREENSHOTS}/purge-{name}-*.png)"


def test_rules_purged_too_far_are_seen(chromium, whole_site, tmp_path):
    """Purge the primary sidebar's rules as well: the comparison notices."""
    broken = tmp_path / "html"
    shutil.copytree(SITE, broken)
    css = broken / "en" / "_static" / "styles" / "pydata-sphinx-theme.css"
    text, cut = re.subn(
        r"(?<=[}])[^{}@]*bd-sidebar-primary[^{}]*\{[^{}]*\}",
        "",
        css.read_text(encoding="utf-8"),
    )
    assert cut > 5
    css.write_text(text, encoding="utf-8")
    rebundle(broken)
    with serve(whole_site) as whole, serve(broken) as purged:
        a, b = (
            draw(chromium, f"{base}/en/03-multi-head.html", 1280, "light", None, False)
            for base in (whole, purged)
        )
    assert difference(a, b) is not None
