"""Fixtures for the browser tests: a local server and a headless Chromium.

Run with `make e2e` (after `make html`). Chromium comes from Debian
(`apt-get install chromium`); Playwright drives it and never downloads a
browser of its own.
"""

import os
from pathlib import Path

import pytest
from browser import CHROMIUM, CHROMIUM_ARGS, PHONE, serve

ROOT = Path(__file__).resolve().parents[2]
# MHA_BOOK_SITE checks a site built elsewhere (tools/build_book.py --build-dir DIR: DIR/html).
SITE = Path(os.environ.get("MHA_BOOK_SITE", ROOT / "_build" / "html"))
SCREENSHOTS = ROOT / "_build" / "screenshots"


def rebundle(site: Path) -> None:
    """Join each page's stylesheets into its one file again, as the build does
    (docs/_ext/book_assets.py), after a test has changed a stylesheet."""
    from book_assets import bundle_stylesheets

    for edition in ("zh", "en"):
        if (site / edition).is_dir():
            bundle_stylesheets(site / edition)


@pytest.fixture(scope="session")
def chromium():
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    context = chromium.new_context(
        viewport={"width": 1280, "height": 900}, locale="zh-CN"
    )
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture
def phone(chromium):
    """A page in a phone-sized, touch, high-density viewport (390 CSS px wide)."""
    context = chromium.new_context(
        viewport=PHONE,
        device_scale_factor=3,
        is_mobile=True,
        has_touch=True,
        locale="zh-CN",
    )
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture(scope="session")
def site_url():
    if not (SITE / "index.html").exists():
        pytest.fail("the site is not built: run `make html` first")
    with serve(SITE) as url:
        yield url
