"""The alt-text check (tools/check_alt_text.py): each rule fires on a broken
alt text, and figure_layout reads the panels of ordinary plots.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from needs import needs

from mha_book.viz.layout import figure_layout, record_layout
from mha_book.viz.plot import figure_png, new_figure
from tools.check_alt_text import (
    LANGS,
    ONE_COLUMN,
    alt_problems,
    site_problems,
    stated_counts,
)

# --- the rules, one broken alt text at a time -----------------------------------
GRID = {"rows": 2, "columns": 2, "direction": None}
STACK = {"rows": 3, "columns": 1, "direction": None}
ROW = {"rows": 1, "columns": 4, "direction": None}
FLOW = {"rows": 5, "columns": 1, "direction": "top-to-bottom"}
SINGLE = {"rows": 1, "columns": 1, "direction": None}

GOOD = [
    ("en", GRID, "Four heatmaps in two rows and two columns: the weights of 4 heads."),
    ("zh", GRID, "四幅热力图排成两行两列：4 个头的权重。"),
    ("en", STACK, "Three line charts, one above the other: loss, time and memory."),
    ("zh", STACK, "上下三幅折线图：第一行是损失，第二行是时间。"),
    ("en", ROW, "Four heatmaps side by side, one row per query."),
    ("zh", ROW, "四幅热力图并排，每一行是一个查询。"),
    (
        "en",
        FLOW,
        "Flow diagram from top to bottom: the five steps as a column of boxes.",
    ),
    ("zh", FLOW, "流程图，从上到下：五个步骤排成一列方框。"),
    ("en", SINGLE, "Heatmap of one head's weights, the first two rows dark."),
    ("zh", SINGLE, "一幅热力图：每一行是一个查询，第一列是 [CLS]。"),
]
BROKEN = [  # (lang, layout, alt, what the problem must say)
    ("en", STACK, "Two rows of small heatmaps: the scores and the weights.", "3 rows"),
    ("zh", STACK, "两行热力图：第一行是分数，第二行是权重。", "3 rows"),
    ("en", GRID, "Four heatmaps side by side: the weights of four heads.", "2 rows"),
    ("zh", GRID, "四幅热力图并排：四个头的权重。", "2 rows"),
    ("en", GRID, "Four heatmaps, stacked: the weights of four heads.", "2 columns"),
    ("zh", GRID, "四幅热力图上下排列：四个头的权重。", "2 columns"),
    (
        "en",
        FLOW,
        "Flow diagram: the five steps as boxes from left to right.",
        "flows top",
    ),
    ("zh", FLOW, "流程图：五个步骤从左到右排成方框。", "flows top"),
    (
        "en",
        FLOW,
        "Flow diagram: the five steps as boxes with their shapes.",
        "direction",
    ),
    ("zh", FLOW, "流程图：五个步骤的方框和形状。", "direction"),
    ("en", GRID, "Four heatmaps: the weights of four heads.", "arranged"),
    ("zh", GRID, "四幅热力图：四个头的权重。", "arranged"),
    ("en", ROW, "Four heatmaps in 2 columns: the weights of four heads.", "4 columns"),
    ("zh", ROW, "四幅热力图，两列：四个头的权重。", "4 columns"),
    ("en", STACK, "Three charts read from left to right.", "one column of panels"),
    ("zh", ROW, "四幅热力图从上到下：四个头。", "one row of panels"),
]


@pytest.mark.parametrize("lang,layout,alt", GOOD)
def test_an_alt_text_that_says_its_layout_passes(lang, layout, alt):
    assert alt_problems(alt, layout, lang) == []


@pytest.mark.parametrize("lang,layout,alt,expected", BROKEN)
def test_an_alt_text_that_contradicts_its_layout_is_reported(
    lang, layout, alt, expected
):
    problems = alt_problems(alt, layout, lang)
    assert len(problems) == 1 and expected in problems[0], problems


def test_counts_that_describe_something_else_are_not_layout():
    assert stated_counts("one row per head and one column per layer", "en") == []
    assert stated_counts("the first two rows of the weights", "en") == []
    assert stated_counts("第一行是分数，每一列是一个键，每个头一行", "zh") == []
    assert (
        stated_counts("上图是一行中最大的权重，第 1 行查询，在一行文字上", "zh") == []
    )
    assert stated_counts("三排连线图", "zh") == [("rows", 3, "三排")]
    assert stated_counts("上下文里的三行", "zh") == [("rows", 3, "三行")]
    assert not re.search(ONE_COLUMN["zh"], "上下文")
    with pytest.raises(ValueError, match="lang must be one of"):
        alt_problems("two rows", GRID, "fr")


# --- the site reader, on small pages built here ---------------------------------
def _png(path: Path, rows: int, columns: int, flow: str | None = None) -> None:
    fig = new_figure(figsize=(3, 2))
    fig.subplots(rows, columns)
    if flow:
        record_layout(fig, rows, columns, flow)
    path.write_bytes(figure_png(fig))


def _page(root: Path, lang: str, figures: list[tuple[str, str]]) -> None:
    """A source page and its built HTML: one glue:figure per (name, alt)."""
    source = root / "docs" / lang / "01-page.md"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(
        "".join(
            f"```{{glue:figure}} {name}\n:alt: {alt}\n:name: {name}\n\nA caption.\n"
            "```\n\n"
            for name, alt in figures
        ),
        encoding="utf-8",
    )
    html = root / "site" / lang / "01-page.html"
    html.parent.mkdir(parents=True, exist_ok=True)
    html.write_text(
        "".join(
            f'<figure class="align-default" id="{name}">\n'
            f'<img alt="{alt}" src="_images/{name}.png" />\n</figure>\n'
            for name, alt in figures
        ),
        encoding="utf-8",
    )


@needs("matplotlib")
@pytest.mark.parametrize("lang", LANGS)
def test_the_site_check_reads_alt_texts_and_the_layouts_in_the_images(tmp_path, lang):
    images = tmp_path / "site" / lang / "_images"
    images.mkdir(parents=True)
    _png(images / "fig-grid.png", 2, 2)
    _png(images / "fig-flow.png", 4, 1, "top-to-bottom")
    good = {
        "zh": [("fig-grid", "四幅图，两行两列。"), ("fig-flow", "流程图，从上到下。")],
        "en": [
            ("fig-grid", "Two rows of two charts."),
            ("fig-flow", "From top to bottom."),
        ],
    }[lang]
    _page(tmp_path, lang, good)
    assert site_problems(tmp_path / "site", tmp_path / "docs", langs=(lang,)) == []
    broken = {
        "zh": [("fig-grid", "四幅图并排。"), ("fig-flow", "流程图，从左到右。")],
        "en": [
            ("fig-grid", "Four charts side by side."),
            ("fig-flow", "Left to right."),
        ],
    }[lang]
    _page(tmp_path, lang, broken)
    problems = site_problems(tmp_path / "site", tmp_path / "docs", langs=(lang,))
    assert len(problems) == 2, problems
    assert "fig-grid" in problems[0] and "fig-flow" in problems[1]
    from PIL import Image

    Image.new("RGB", (4, 4)).save(images / "fig-grid.png")  # a PNG without a layout
    problems = site_problems(tmp_path / "site", tmp_path / "docs", langs=(lang,))
    assert "records no layout" in problems[0], problems


def test_the_site_check_misses_no_figure(tmp_path):
    _page(tmp_path, "en", [("fig-a", "One chart.")])
    (tmp_path / "site" / "en" / "01-page.html").write_text("<p>no figure</p>")
    problems = site_problems(tmp_path / "site", tmp_path / "docs", langs=("en",))
    assert len(problems) == 1 and "no figure #fig-a" in problems[0], problems


# --- figure_layout reads the Axes of ordinary plots -----------------------------
@needs("matplotlib")
@pytest.mark.parametrize("rows,columns", [(1, 1), (1, 3), (3, 1), (2, 4)])
def test_the_layout_of_a_grid_is_its_rows_and_columns(rows, columns):
    fig = new_figure(figsize=(4, 3))
    axes = fig.subplots(rows, columns, squeeze=False)
    fig.colorbar(axes[0, 0].imshow([[0, 1]]), ax=axes)  # no panel
    axes[0, 0].twinx()  # a twin: the same panel
    assert figure_layout(fig) == {"rows": rows, "columns": columns, "direction": None}


@needs("matplotlib")
def test_empty_slots_and_spanning_axes_count_as_they_are_seen():
    fig = new_figure(figsize=(4, 3))
    axes = fig.subplots(2, 3)
    for ax in axes[1, 1:]:
        ax.set_axis_off()  # five heads in a 2 x 3 grid: the last slot is empty
    assert figure_layout(fig)["columns"] == 3
    axes[1, 1].text(0.5, 0.5, "drawn")  # a diagram without axes is a panel
    assert figure_layout(fig) == {"rows": 2, "columns": 3, "direction": None}
    tall = new_figure(figsize=(4, 3))
    tall.subplot_mosaic([["big", "a"], ["big", "b"]])
    assert figure_layout(tall) == {"rows": 2, "columns": 2, "direction": None}
    assert figure_layout(new_figure()) == {"rows": 1, "columns": 1, "direction": None}


@needs("matplotlib")
def test_record_layout_names_its_bad_arguments():
    fig = new_figure()
    with pytest.raises(ValueError, match="rows must be a positive int, got 0"):
        record_layout(fig, 0, 1)
    with pytest.raises(ValueError, match="columns must be a positive int, got 2.0"):
        record_layout(fig, 1, 2.0)
    with pytest.raises(ValueError, match="direction must be one of .* got 'up'"):
        record_layout(fig, 1, 1, "up")
