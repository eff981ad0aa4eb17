"""The attention explorers of chapters 11 and 15 (mha_book.explore) in Chromium.

In both editions: the widget renders offline without console errors, in the
page's language; the lines drawn for a selected layer, head and query token
match the JSON weights in the page, whether the token is hovered, reached
with Tab or tapped; all heads are drawn in as many colours as there are
heads; the page does not scroll sideways at 390 px. The last two tests show
that the comparison catches a drawing that does not match the weights.
"""

import re
import shutil

import pytest
from browser import (
    explorer_drawing,
    explorer_mismatches,
    explorer_problems,
    horizontal_scroll_problems,
    load_problems,
    open_page,
    serve,
)
from conftest import SITE

LANGS = ("zh", "en")
PAGE = "11-pretrained-bert.html"
# Every page that shows an explorer, and the (layers, heads) of its model.
EXPLORERS = {PAGE: (6, 12), "15-tang-poems.html": (2, 4)}
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
    # The script comes from _static once; the inline copy only mounted the widget.
    assert page.locator("script[src*='_static/explorer.js']").count() == 1
    assert page.evaluate("typeof window.mhaExplorer.mountAll") == "function"
    assert load_problems(page, seen) == []  # console, failed or remote requests


@BOTH
@pytest.mark.parametrize("lang", LANGS)
def test_hovering_a_query_draws_its_weights(page, site_url, lang, chapter):
    seen = open_page(page, f"{site_url}/{lang}/{chapter}")
    L, H, T = sizes(page)
    for layer, head, query in ((0, 0, 0), (L - 1, H - 1, T - 1), (1, H // 2, 5)):
        assert explorer_problems(page, layer=layer, head=head, query=query) == []
    assert load_problems(page, seen) == []  # nothing went wrong while hovering


@BOTH
@pytest.mark.parametrize("lang", LANGS)
def test_tabbing_to_a_query_draws_its_weights(page, site_url, lang, chapter):
    seen = open_page(page, f"{site_url}/{lang}/{chapter}")
    L, H, T = sizes(page)
    for layer, head, query in ((1, H - 1, 4), (L - 1, 0, T - 1)):
        problems = explorer_problems(
            page, layer=layer, head=head, query=query, via="keyboard"
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


# --- the comparison can fail ------------------------------------------------------
def test_a_drawing_that_swaps_queries_and_keys_is_reported(page, tmp_path):
    """A copy of the page whose script draws w[k][i] instead of w[i][k]."""
    copy = tmp_path / "html"
    shutil.copytree(SITE / "en", copy / "en")
    with serve(copy) as url:
        page.goto(f"{url}/en/{PAGE}", wait_until="networkidle")
        assert explorer_problems(page, layer=0, head=0, query=1) == []
    # Both copies of the script: the page's _static one and the inline one.
    for path in (copy / "en" / "_static" / "explorer.js", copy / "en" / PAGE):
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
          row[k] = Math.round((row[k] + 0.25) * 1000) / 1000;  // moved, not drawn
          el.textContent = JSON.stringify(data);
        }""",
        [layer, head, query],
    )
    drawn = explorer_drawing(page)
    problems = explorer_mismatches(drawn, layer, head, query)
    assert any("line opacity" in p for p in problems), problems
    assert any(p.startswith("key ") and "number" in p for p in problems), problems
