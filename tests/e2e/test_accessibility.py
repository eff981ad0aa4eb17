"""Accessibility of both editions in Chromium.

Every page is checked by the crawl (test_pages.py), collapsed cells and
solutions opened: no critical or serious violation under axe-core
(axe-playwright-python bundles it), every image in the content has alt text
in the page's language that says what it shows, and the headings form an
outline (one h1, no level skipped). Here: the language switch,
search, theme switch, copy buttons, collapsed cells and solutions work with
the keyboard alone (the attention explorer's keyboard tests are in
test_explorer.py). The last tests show that the checks catch a broken page.
"""

import re
import shutil

import pytest
from browser import (
    alt_text_problems,
    axe_violations,
    heading_problems,
    serve,
    tab_to,
)
from conftest import SITE

LANGS = ("zh", "en")
CHAPTER = "03-multi-head.html"  # code, a collapsed cell and solutions


# --- the keyboard alone ---------------------------------------------------------
@pytest.mark.parametrize(("lang", "other"), [("zh", "en"), ("en", "zh")])
def test_the_language_switch_works_from_the_keyboard(page, site_url, lang, other):
    page.goto(f"{site_url}/{lang}/{CHAPTER}")
    assert tab_to(page, "a.book-lang-switch")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url == f"{site_url}/{other}/{CHAPTER}"


@pytest.mark.parametrize("lang", LANGS)
def test_search_works_from_the_keyboard(page, site_url, lang):
    page.goto(f"{site_url}/{lang}/{CHAPTER}")
    assert tab_to(page, "button.search-button__button")
    page.keyboard.press("Enter")
    box = "input[name='q']:focus"
    page.wait_for_selector(box, timeout=5_000)  # the dialog opened, its box focused
    page.keyboard.type("softmax")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.startswith(f"{site_url}/{lang}/search.html?q=softmax")
    page.wait_for_selector("#search-results ul.search li a", timeout=20_000)


def test_the_theme_switch_works_from_the_keyboard(page, site_url):
    page.goto(f"{site_url}/zh/{CHAPTER}")
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    assert tab_to(page, "button.theme-switch-button")
    page.keyboard.press("Enter")  # opens the menu
    assert tab_to(page, "button.theme-change-button[data-mode='dark']", limit=5)
    page.keyboard.press("Enter")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"


def test_a_copy_button_works_from_the_keyboard(chromium, site_url):
    context = chromium.new_context(
        viewport={"width": 1280, "height": 900},
        permissions=["clipboard-read", "clipboard-write"],
    )
    page = context.new_page()
    try:
        page.goto(f"{site_url}/en/{CHAPTER}")
        page.evaluate("navigator.clipboard.writeText('')")
        # The first visible code cell's button (not one inside a collapsed cell).
        button = ".cell:not(.tag_hide-input) .cell_input button.copybtn"
        assert tab_to(page, button)
        # A keyboard reader sees it (it fades in, as on hover).
        page.wait_for_function(
            "getComputedStyle(document.activeElement).opacity === '1'", timeout=3_000
        )
        code = page.evaluate(
            "document.activeElement.closest('.highlight').querySelector('pre').innerText"
        )
        page.evaluate("document.activeElement.id = 'keyboard-copy'")
        page.keyboard.press("Enter")
        # The button says it copied (its tooltip and a green outline).
        page.wait_for_selector("#keyboard-copy.success", timeout=3_000)
        assert page.get_attribute("#keyboard-copy", "data-tooltip") == "Copied!"
        copied = page.evaluate("navigator.clipboard.readText()")
        first_line = code.strip().splitlines()[0]
        assert copied.strip() and first_line in copied
    finally:
        context.close()


@pytest.mark.parametrize("key", ["Enter", " "])
def test_a_collapsed_cell_opens_from_the_keyboard(page, site_url, key):
    page.goto(f"{site_url}/zh/{CHAPTER}")
    cell = page.locator("details.hide").first
    code = cell.locator(".cell_input pre")
    assert not code.is_visible()
    assert tab_to(page, "details.hide > summary")
    page.keyboard.press(key)
    assert code.is_visible()
    assert cell.evaluate("d => d.open")
    page.keyboard.press(key)
    assert not code.is_visible()


@pytest.mark.parametrize("lang", LANGS)
def test_a_solution_opens_from_the_keyboard(page, site_url, lang):
    page.goto(f"{site_url}/{lang}/{CHAPTER}")
    solution = page.locator(".solution.dropdown").first
    body = solution.locator("section").first
    assert not body.is_visible()
    assert tab_to(page, ".solution .admonition-title > button.toggle-button")
    name = page.evaluate("document.activeElement.getAttribute('aria-label')")
    assert ("展开或收起" in name) if lang == "zh" else name.startswith("Show or hide")
    page.keyboard.press("Space")
    body.wait_for(state="visible", timeout=3_000)
    assert page.evaluate("document.activeElement.getAttribute('aria-expanded')") == (
        "true"
    )


# --- the checks can fail ----------------------------------------------------------
def test_a_broken_page_is_reported(page, tmp_path):
    """A copy of a chapter: one figure without alt, grey-on-white text, a code
    keyword grey on the code block's grey, an h4 after h2."""
    copy = tmp_path / "html"
    shutil.copytree(SITE / "en", copy / "en")
    html = copy / "en" / CHAPTER
    text = html.read_text(encoding="utf-8")
    with serve(copy) as url:
        assert axe_violations(page, f"{url}/en/{CHAPTER}") == []
        assert alt_text_problems(page, "en") == []
        assert heading_problems(page) == []
    text, n = re.subn(r'<img alt="[^"]*"', "<img", text, count=1)
    assert n == 1
    head, article = text.split(
        "<article", 1
    )  # the article's h1, not the print-only one
    # Code is checked once per style (browser.CODE_STYLES_JS): a new one is seen.
    head = head.replace(
        "</head>",
        "<style>div.highlight pre .k { color: #c8c8c8 !important; }</style></head>",
        1,
    )
    text = (
        head
        + "<article"
        + article.replace(
            "</h1>",
            '</h1>\n<p style="color:#bbb">Faint text.</p><h4>Too deep</h4>',
            1,
        )
    )
    html.write_text(text, encoding="utf-8")
    with serve(copy) as url:  # a new port: nothing comes from the browser's cache
        violations = axe_violations(page, f"{url}/en/{CHAPTER}")
        found = {v["id"]: v["impact"] for v in violations}
        alt = alt_text_problems(page, "en")
        outline = heading_problems(page)
    assert found.get("image-alt") == "critical", found
    assert found.get("color-contrast") == "serious", found
    faint = [n["html"] for v in violations for n in v["nodes"]]
    assert any("Faint text." in html for html in faint), faint
    assert any('class="k"' in html for html in faint), faint
    assert any("no alt text" in p for p in alt), alt
    assert any("followed by h4" in p for p in outline), outline


def test_generic_or_wrong_language_alt_text_is_reported(page, site_url):
    page.goto(f"{site_url}/zh/{CHAPTER}")
    assert alt_text_problems(page, "zh") == []
    page.evaluate(
        """() => { const imgs = document.querySelectorAll("article.bd-article img");
        imgs[0].alt = "图片"; imgs[1].alt = "Four heatmaps side by side, one per head"; }"""
    )
    problems = alt_text_problems(page, "zh")
    assert any("generic" in p for p in problems), problems
    assert any("not in Chinese" in p for p in problems), problems
