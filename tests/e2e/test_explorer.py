"""The attention explorers of chapters 11, 15 and 16 (mha_book.explore) in Chromium.

In both editions: the widget renders offline without console errors, in the
page's language; the lines drawn for a selected layer, head and query token
match the JSON weights in the page, whether the token is hovered, reached
with the keyboard or tapped; the latest of these wins (a token reached with
the keyboard after a hover or a tap shows its own row); the token list is one
tab stop moved by the arrow keys; all heads are drawn in as many colours as
there are heads; the page does not scroll sideways at 390 px. The page loads
the script and style once, from _static (the copies inlined for a notebook
leave the page); the inline copy works alone in the bare HTML a notebook shows.
The last tests show that the checks catch a drawing that does not match the
weights, and scripts broken on purpose.
"""

import re
import shutil

import pytest
import torch
from browser import (
    explorer_drawing,
    explorer_keyboard_problems,
    explorer_latest_wins_problems,
    explorer_mismatches,
    explorer_problems,
    horizontal_scroll_problems,
    load_problems,
    open_page,
    serve,
)
from conftest import SITE

from mha_book import explore

LANGS = ("zh", "en")
PAGE = "11-pretrained-bert.html"
# Every page that shows an explorer, and the (layers, heads) of its model.
EXPLORERS = {
    PAGE: (6, 12),
    "15-tang-poems.html": (2, 4),
    "16-cross-attention.html": (1, 4),  # cross-attention: T targets, S sources
}
BOTH = pytest.mark.parametrize("chapter", list(EXPLORERS))
# The line of explorer.js that reads the weight of a line (broken on purpose below).
WEIGHT_LINE = "const w = weights[l][h][i][k];"


def sizes(page) -> tuple[int, int, int]:
    """(L, H, T) of the page's explorer."""
    data = explorer_drawing(page)["data"]
    return len(data["weights"]), len(data["weights"][0]), len(data["tokens"])


@BOTH
@pytest.mark.parametrize("lang", LANGS)
def test_the_explorer_renders_in_the_page_language(page, site_url, lang, chapter):
    seen = open_page(page, f"{site_url}/{lang}/{chapter}")
    assert page.locator(".mha-explorer[data-mounted]").count() == 1
    L, H, T = sizes(page)
    assert (L, H) == EXPLORERS[chapter]
    drawn = explorer_drawing(page)
    assert len(drawn["lines"]) > T  # the first view: every query's lines
    labels = drawn["data"]["labels"]
    root = page.locator(".mha-explorer")
    for name, box in (("layer", "layer"), ("head", "head")):
        select = root.locator(f"select.mha-explorer__{box}")
        label = root.locator(f"label[for='{select.get_attribute('id')}']")
        assert label.inner_text() == labels[name]
    assert (
        root.locator("select.mha-explorer__head option").first.inner_text()
        == (labels["all_heads"])
    )
    assert root.locator(".mha-explorer__query").count() == T
    if lang == "zh":  # the words come from Python's pick(), in the page's language
        for name in ("layer", "head", "all_heads", "queries", "keys", "hint", "mean"):
            assert not re.search(r"[A-Za-z]", labels[name].replace("Tab", "")), name
    # The script comes from _static, once.
    assert page.locator("script[src*='_static/explorer.js']").count() == 1
    assert page.evaluate("typeof window.mhaExplorer.mountAll") == "function"
    assert load_problems(page, seen) == []  # console, failed or remote requests


@BOTH
@pytest.mark.parametrize("lang", LANGS)
def test_hovering_a_query_draws_its_weights(page, site_url, lang, chapter):
    seen = open_page(page, f"{site_url}/{lang}/{chapter}")
    L, H, T = sizes(page)
    second = min(1, L - 1)  # the second layer, where there is one
    for layer, head, query in ((0, 0, 0), (L - 1, H - 1, T - 1), (second, H // 2, 5)):
        assert explorer_problems(page, layer=layer, head=head, query=query) == []
    assert load_problems(page, seen) == []  # nothing went wrong while hovering


@BOTH
@pytest.mark.parametrize("lang", LANGS)
def test_tabbing_to_a_query_draws_its_weights(page, site_url, lang, chapter):
    seen = open_page(page, f"{site_url}/{lang}/{chapter}")
    L, H, T = sizes(page)
    for layer, head, query in ((min(1, L - 1), H - 1, 4), (L - 1, 0, T - 1)):
        problems = explorer_problems(
            page, layer=layer, head=head, query=query, via="keyboard"
        )
        assert problems == []
    assert load_problems(page, seen) == []


@BOTH
@pytest.mark.parametrize("lang", LANGS)
def test_the_token_list_is_one_tab_stop_moved_by_the_arrow_keys(
    page, site_url, lang, chapter
):
    seen = open_page(page, f"{site_url}/{lang}/{chapter}")
    assert explorer_keyboard_problems(page) == []
    assert load_problems(page, seen) == []


@BOTH
@pytest.mark.parametrize("lang", LANGS)
def test_the_keyboard_after_a_hover_draws_the_focused_token(
    page, site_url, lang, chapter
):
    seen = open_page(page, f"{site_url}/{lang}/{chapter}")
    L, H, T = sizes(page)
    for layer, head, first, then in ((0, H - 1, 1, T - 2), (L - 1, "all", T - 1, 0)):
        problems = explorer_latest_wins_problems(
            page, layer=layer, head=head, first=first, then=then
        )
        assert problems == []
    assert load_problems(page, seen) == []


@BOTH
@pytest.mark.parametrize("lang", LANGS)
def test_all_heads_are_drawn_in_one_colour_each(page, site_url, lang, chapter):
    seen = open_page(page, f"{site_url}/{lang}/{chapter}")
    L, H, T = sizes(page)
    for layer, query in ((0, 2), (L - 1, T - 1)):
        problems = explorer_problems(page, layer=layer, head="all", query=query)
        assert problems == []
    drawn = explorer_drawing(page)
    assert len(set(drawn["legend"])) == H
    assert len({line["colour"] for line in drawn["lines"]}) == H
    assert load_problems(page, seen) == []


@BOTH
@pytest.mark.parametrize("lang", LANGS)
def test_the_explorer_fits_a_phone(phone, site_url, lang, chapter):
    seen = open_page(phone, f"{site_url}/{lang}/{chapter}")
    assert horizontal_scroll_problems(phone, None) == []
    drawn = explorer_drawing(phone)
    assert 0 < drawn["width"] <= 390
    svg = phone.locator(".mha-explorer svg").bounding_box()
    assert svg["width"] >= 40 and svg["x"] + svg["width"] <= 390
    _, _, T = sizes(phone)
    L, H, _ = sizes(phone)
    tapped = explorer_problems(phone, layer=L - 1, head=H - 1, query=T // 2, via="tap")
    assert tapped == []
    assert horizontal_scroll_problems(phone, None) == []  # the numbers fit too
    assert load_problems(phone, seen) == []


@BOTH
def test_the_keyboard_after_a_tap_draws_the_focused_token(phone, site_url, chapter):
    """A tablet with a keyboard: tap a token, then move with the arrow keys."""
    seen = open_page(phone, f"{site_url}/en/{chapter}")
    L, H, T = sizes(phone)
    problems = explorer_latest_wins_problems(
        phone, layer=L - 1, head=0, first=T - 1, then=2, via="tap"
    )
    assert problems == []
    assert load_problems(phone, seen) == []


def test_the_page_ships_the_script_and_style_once(site):
    """The copies of explorer.js and explorer.css that mha_book.explore inlines
    for a notebook leave the book's page, which loads them from _static."""
    from mha_book.viz.explorer import static_asset

    html = (site / "en" / PAGE).read_text(encoding="utf-8")
    assert html.count('class="mha-explorer"') >= 1
    assert static_asset("explorer.js") not in html
    assert static_asset("explorer.css") not in html
    assert len(re.findall(r'<script (?:defer )?src="_static/explorer\.js', html)) == 1
    # explorer.css is one of the sources of the page's one stylesheet
    sources = re.search(r"<!-- book-css-sources: ([^>]*?) -->", html).group(1).split()
    assert sources.count("_static/explorer.css") == 1


def bare_page(directory, lang: str, monkeypatch) -> str:
    """The HTML a notebook shows for an explorer, alone in a page; a button after it."""
    monkeypatch.setenv("MHA_BOOK_LANG", lang)
    g = torch.Generator().manual_seed(0)
    weights = torch.softmax(torch.randn(2, 3, 6, 6, generator=g) * 2, dim=-1)
    tokens = ["[CLS]", "it", "didn", "'", "t", "[SEP]"]
    html = explore(tokens, weights, title="t")._repr_html_()
    directory.mkdir(exist_ok=True)
    (directory / "index.html").write_text(
        f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8"><title>t'
        f"</title></head><body><main>{html}<button>next</button></main></body></html>",
        encoding="utf-8",
    )
    return "index.html"


@pytest.mark.parametrize("lang", LANGS)
def test_the_notebook_html_works_alone(page, tmp_path, monkeypatch, lang):
    name = bare_page(tmp_path / "bare", lang, monkeypatch)
    with serve(tmp_path / "bare") as url:
        seen = open_page(page, f"{url}/{name}")
        assert page.locator(".mha-explorer[data-mounted]").count() == 1
        assert explorer_keyboard_problems(page) == []
        for via in ("hover", "keyboard"):
            assert explorer_problems(page, layer=1, head="all", query=4, via=via) == []
        problems = explorer_latest_wins_problems(page, layer=0, head=1, first=4, then=2)
        assert problems == []
        assert load_problems(page, seen) == []


# --- the checks can fail ----------------------------------------------------------
def test_a_drawing_that_swaps_queries_and_keys_is_reported(page, tmp_path):
    """A copy of the page whose script draws w[k][i] instead of w[i][k]."""
    copy = tmp_path / "html"
    shutil.copytree(SITE / "en", copy / "en")
    with serve(copy) as url:
        page.goto(f"{url}/en/{PAGE}", wait_until="networkidle")
        assert explorer_problems(page, layer=0, head=0, query=1) == []
    # The page's one copy of the script, in _static.
    path = copy / "en" / "_static" / "explorer.js"
    text = path.read_text(encoding="utf-8")
    assert WEIGHT_LINE in text, path
    path.write_text(
        text.replace(WEIGHT_LINE, "const w = weights[l][h][k][i];"),
        encoding="utf-8",
    )
    with serve(copy) as url:  # a new port: nothing comes from the browser's cache
        page.goto(f"{url}/en/{PAGE}", wait_until="networkidle")
        problems = explorer_problems(page, layer=0, head=0, query=1)
    assert any("line opacity" in p for p in problems), problems


def test_weights_changed_after_drawing_are_reported(page, site_url):
    """The JSON in the page edited after the widget drew from it."""
    page.goto(f"{site_url}/en/{PAGE}", wait_until="networkidle")
    layer, head, query = 2, 7, 5
    assert explorer_problems(page, layer=layer, head=head, query=query) == []
    page.evaluate(
        """([l, h, i]) => {
          const el = document.querySelector("script.mha-explorer-data");
          const data = JSON.parse(el.textContent);
          const row = data.weights[l][h][i];
          const k = row.indexOf(Math.max(...row));
          row[k] = row[k] + 0.25 * data.scale;  // moved, not drawn (whole thousandths)
          el.textContent = JSON.stringify(data);
        }""",
        [layer, head, query],
    )
    drawn = explorer_drawing(page)
    problems = explorer_mismatches(drawn, layer, head, query)
    assert any("line opacity" in p for p in problems), problems
    assert any(p.startswith("key ") and "number" in p for p in problems), problems


# Scripts broken on purpose, in the bare page of a notebook (its inline copy).
SHOWN_LINE = "const query = state.shown;"  # the row drawn: the latest interaction's
STOP_LINE = "b.tabIndex = i === state.stop ? 0 : -1;"  # the roving tabindex
BREAKAGES = {
    # The logic this widget had before: the hovered token wins over the
    # focused one, and a tap (mouse events) leaves a hover behind.
    "hover-wins": [
        (SHOWN_LINE, "const query = state.hovered ?? state.focused;"),
        ('"pointerenter"', '"mouseenter"'),
        ('"pointerleave"', '"mouseleave"'),
    ],
    "focus-wins": [(SHOWN_LINE, "const query = state.focused ?? state.hovered;")],
    "every-token-a-tab-stop": [(STOP_LINE, "b.tabIndex = 0;")],
    "the-tab-stop-stays-behind": [("state.stop = i;", "")],
}


@pytest.mark.parametrize(
    ("broken", "expected"),
    [
        (
            "hover-wins",
            {"hover": ["then the keyboard to 1"], "tap": ["then the keyboard to 1"]},
        ),
        ("focus-wins", {"hover": ["hovering query 4 while 1 is focused"]}),
        (
            "every-token-a-tab-stop",
            {
                "keyboard": [
                    "6 query tokens are tab stops",
                    "Tab from query token 2 reached",
                ]
            },
        ),
        (
            "the-tab-stop-stays-behind",
            {
                "keyboard": [
                    "after End to query token 5 the tab stops are [0]",
                    "Shift+Tab back into the widget reached",
                ]
            },
        ),
    ],
    ids=list(BREAKAGES),
)
def test_a_broken_focus_logic_is_reported(
    page, phone, tmp_path, monkeypatch, broken, expected
):
    directory = tmp_path / "bare"
    html = directory / bare_page(directory, "en", monkeypatch)

    def problems() -> dict[str, list[str]]:
        with serve(directory) as url:  # a new port: nothing comes from the cache
            found = {}
            for via, tab in (("hover", page), ("tap", phone), ("keyboard", page)):
                tab.goto(f"{url}/{html.name}", wait_until="networkidle")
                if via == "keyboard":
                    found[via] = explorer_keyboard_problems(tab)
                else:
                    found[via] = explorer_latest_wins_problems(
                        tab, layer=1, head=2, first=4, then=1, via=via
                    )
            return found

    assert problems() == {"hover": [], "tap": [], "keyboard": []}
    text = html.read_text(encoding="utf-8")
    for old, new in BREAKAGES[broken]:
        assert old in text, old
        text = text.replace(old, new)
    html.write_text(text, encoding="utf-8")
    found = problems()
    for via, messages in expected.items():
        for words in messages:
            assert any(words in p for p in found[via]), (via, words, found[via])
