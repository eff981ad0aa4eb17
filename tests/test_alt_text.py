"""The alt text of every glued figure agrees with the figure's layout.

Every figure the book draws goes through :func:`mha_book.viz.plot.figure_png`,
which writes :func:`~mha_book.viz.layout.figure_layout` into the PNG (rows and
columns of panels; for a flow diagram its direction). The site check reads,
for each ``{glue:figure}`` of both editions, the alt text the built page
carries and the layout its image carries, and reports

- a stated number of rows or columns that differs ("three rows", "两列");
- "side by side" / "a row of" / "并排" with more than one row;
- "stacked" / "one above the other" / "a column of" / "上下" with more than
  one column;
- "left to right" / "从左到右" against "top to bottom" / "从上到下": the
  direction of a flow diagram, or the order of panels where there is none;
- a flow diagram whose alt text does not say its direction, and a figure of
  several panels whose alt text does not say how they are arranged.

The site test needs a built site (`make html`); the other tests build their
own small figures and pages, or break a copy of a built page, and show that
each rule fires.
"""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from mha_book.viz.layout import LAYOUT_KEY, figure_layout, record_layout
from mha_book.viz.plot import figure_png, new_figure

ROOT = Path(__file__).resolve().parents[1]
LANGS = ("zh", "en")

# --- what an alt text says about the layout ------------------------------------
EN_NUMBERS = "one two three four five six seven eight".split()
ZH_NUMBERS = {c: i for i, c in enumerate("一二三四五六七八", start=1)} | {"两": 2}
NUMBER = {
    "en": rf"\b({'|'.join(EN_NUMBERS)}|\d+)\s+(rows?|columns?)\b",
    "zh": r"([一二两三四五六七八]|\d+)\s*(行|列|排)",  # 排: a row, too
}
# A count that describes something else: "the first two rows", "one row per head",
# "第 1 行", "每一列", "每个头一行", "一行中最大的权重", "一行文字".
NOT_A_COUNT = {
    "en": (
        r"\b(first|last|top|bottom|other|middle|next|previous|each|every)\s+$",
        r"^\s+(per|for each|of each)\b",
    ),
    "zh": (r"[第每前后这那同首末各]\s*$", r"^\s*([中里内]|文字|字|文本|代码|诗)"),
}
ONE_ROW = {
    "en": r"\bside by side\b|\ba row of\b|\bin (?:a single|one) row\b",
    "zh": r"并排|横排|排成一行",
}
ONE_COLUMN = {
    "en": (
        r"\bstacked\b|\bone (?:above|below|under) the other\b|\ba column of\b"
        r"|\bin (?:a single|one) column\b"
    ),
    "zh": r"上下(?!文)|上中下|叠放|竖排|排成一列",
}
DIRECTIONS = {
    "en": {
        "top-to-bottom": r"\btop[ -]to[ -]bottom\b",
        "left-to-right": r"\bleft[ -]to[ -]right\b",
        "bottom-to-top": r"\bbottom[ -]to[ -]top\b",
        "right-to-left": r"\bright[ -]to[ -]left\b",
    },
    "zh": {
        "top-to-bottom": r"从上到下|从上往下|自上而下|由上至下|由上到下",
        "left-to-right": r"从左到右|从左往右|自左向右|自左至右|由左至右|由左到右",
        "bottom-to-top": r"从下到上|从下往上|自下而上|由下至上",
        "right-to-left": r"从右到左|从右往左|自右向左|由右至左",
    },
}
ACROSS = {"left-to-right", "right-to-left"}  # panels read along a row


def _count(word: str) -> int:
    word = word.lower()
    if word.isdigit():
        return int(word)
    return EN_NUMBERS.index(word) + 1 if word in EN_NUMBERS else ZH_NUMBERS[word]


def stated_counts(alt: str, lang: str) -> list[tuple[str, int, str]]:
    """``("rows" | "columns", n, the words)`` for each count of rows or columns."""
    before, after = NOT_A_COUNT[lang]
    counts = []
    for m in re.finditer(NUMBER[lang], alt, flags=re.IGNORECASE):
        head, tail = alt[: m.start()], alt[m.end() :]
        clause = re.split(r"[，。；：、,;:()（）]", head)[-1]
        if re.search(before, head, flags=re.IGNORECASE) or (
            lang == "zh" and "每" in clause
        ):
            continue
        if re.search(after, tail, flags=re.IGNORECASE):
            continue
        kind = "columns" if m.group(2).lower().startswith(("col", "列")) else "rows"
        counts.append((kind, _count(m.group(1)), m.group(0)))
    return counts


def alt_problems(alt: str, layout: dict, lang: str) -> list[str]:
    """What in ``alt`` contradicts ``layout``, or what it leaves unsaid.

    ``layout`` is :func:`mha_book.viz.layout.figure_layout`'s dict; ``lang`` the
    edition, ``"zh"`` or ``"en"``.
    """
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    rows, columns, flow = layout["rows"], layout["columns"], layout["direction"]
    has = {"rows": rows, "columns": columns}
    problems, said = [], False
    for kind, n, words in stated_counts(alt, lang):
        said = True
        if n != has[kind]:
            problems.append(
                f"the alt text says {words!r}, but the figure has {has[kind]} {kind}"
            )
    for pattern, kind, rule in (
        (ONE_ROW[lang], "rows", "one row"),
        (ONE_COLUMN[lang], "columns", "one column"),
    ):
        for m in re.finditer(pattern, alt, flags=re.IGNORECASE):
            said = True
            if has[kind] > 1:
                problems.append(
                    f"the alt text says {m.group(0)!r} ({rule}), but the figure "
                    f"has {has[kind]} {kind}"
                )
    stated = []
    for direction, pattern in DIRECTIONS[lang].items():
        for m in re.finditer(pattern, alt, flags=re.IGNORECASE):
            said = True
            stated.append(direction)
            across = direction in ACROSS
            if flow is not None and direction != flow:
                flows = flow.replace("-", " ")
                problems.append(
                    f"the alt text says {m.group(0)!r}, but the figure flows {flows}"
                )
            elif flow is None and (columns if across else rows) == 1:
                kind = "column" if across else "row"
                problems.append(
                    f"the alt text says {m.group(0)!r}, but the figure has one "
                    f"{kind} of panels"
                )
    if flow is not None and not stated:
        problems.append(
            f"the figure is a flow diagram ({flow.replace('-', ' ')}), but the "
            "alt text does not say its direction"
        )
    elif rows * columns > 1 and not said:
        problems.append(
            f"the figure has {rows} row(s) and {columns} column(s) of panels, but "
            "the alt text does not say how they are arranged (e.g. 'two rows of "
            "three heatmaps', 'side by side', 'one above the other', '两行三列', "
            "'上下两幅', '并排')"
        )
    return problems


# --- the figures of the sources and of the built site ---------------------------
GLUE_FIGURE = re.compile(r"^(`{3,}|:{3,})\{glue:figure\}\s+(\S+)\s*$")


def source_figures(page: Path) -> list[dict]:
    """The ``{glue:figure}`` directives of a page: key, ``:name:``, ``:alt:``, line."""
    lines = page.read_text(encoding="utf-8").splitlines()
    figures = []
    for i, line in enumerate(lines):
        m = GLUE_FIGURE.match(line)
        if not m:
            continue
        figure = {"key": m.group(2), "line": i + 1, "name": None, "alt": None}
        for option in lines[i + 1 :]:
            opt = re.match(r"^:(\w+):\s*(.*)$", option)
            if not opt:
                break
            figure[opt.group(1)] = opt.group(2).strip()
        figures.append(figure)
    return figures


class _Figures(HTMLParser):
    """``{id: (alt, src)}`` of the first image inside each ``<figure id=...>``."""

    def __init__(self):
        super().__init__()
        self.figures, self._open = {}, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "figure":
            self._open = attrs.get("id")
        elif tag == "img" and self._open and self._open not in self.figures:
            self.figures[self._open] = (attrs.get("alt"), attrs.get("src"))

    def handle_endtag(self, tag):
        if tag == "figure":
            self._open = None


def html_figures(html: Path) -> dict[str, tuple[str | None, str | None]]:
    parser = _Figures()
    parser.feed(html.read_text(encoding="utf-8"))
    return parser.figures


def png_layout(path: Path) -> dict | None:
    """The layout :func:`~mha_book.viz.plot.figure_png` wrote into a PNG, or None."""
    from PIL import Image

    with Image.open(path) as image:
        record = getattr(image, "text", {}).get(LAYOUT_KEY)
    return None if record is None else json.loads(record)


def site_problems(site: Path, docs: Path = ROOT / "docs", langs=LANGS, pages=None):
    """Every glued figure of ``docs`` whose built page or image breaks a rule.

    ``pages`` (names such as ``"03-multi-head"``) limits the check, for a
    partial build; by default every page with a ``{glue:figure}`` is read.
    """
    problems = []
    for lang in langs:
        for source in sorted((docs / lang).glob("*.md")):
            if pages is not None and source.stem not in pages:
                continue
            figures = source_figures(source)
            if not figures:
                continue
            html = site / lang / f"{source.stem}.html"
            built = html_figures(html) if html.exists() else {}
            for figure in figures:
                where = f"docs/{lang}/{source.name}:{figure['line']} {figure['key']}"
                if figure["name"] is None:
                    problems.append(f"{where}: the glue:figure has no :name:")
                    continue
                if figure["name"] not in built:
                    problems.append(f"{where}: no figure #{figure['name']} in {html}")
                    continue
                alt, src = built[figure["name"]]
                if not alt:
                    problems.append(f"{where}: the figure has no alt text")
                    continue
                image = (html.parent / src) if src else None
                layout = png_layout(image) if image and image.exists() else None
                if layout is None:
                    problems.append(
                        f"{where}: {src} records no layout (draw the figure with "
                        "mha_book.viz.plot.new_figure; the notebook's PNG formatter, "
                        "figure_png, records it)"
                    )
                    continue
                problems += [
                    f"{where}: {p}; layout {layout}; alt: {alt!r}"
                    for p in alt_problems(alt, layout, lang)
                ]
    return problems


@pytest.mark.parametrize("lang", LANGS)
def test_every_glued_figure_has_an_alt_text_that_matches_its_layout(site, lang):
    problems = site_problems(site, langs=(lang,))
    assert not problems, "\n".join(problems)


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


@pytest.mark.parametrize("lang", LANGS)
def test_a_broken_alt_text_in_a_built_page_is_reported(site, tmp_path, lang):
    """Chapter 03's 2 x 2 heads, copied, with the alt text of the old bug."""
    page = "03-multi-head"
    copy = tmp_path / "site"
    shutil.copytree(site / lang / "_images", copy / lang / "_images")
    html = (site / lang / f"{page}.html").read_text(encoding="utf-8")
    alt, _ = html_figures(site / lang / f"{page}.html")["fig-heads"]
    assert site_problems(site, langs=(lang,), pages=[page]) == []
    wrong = {
        "zh": "四幅热力图并排：四个头的权重。",
        "en": "Four heatmaps side by side.",
    }
    (copy / lang / f"{page}.html").write_text(
        html.replace(f'alt="{alt}"', f'alt="{wrong[lang]}"'), encoding="utf-8"
    )
    problems = site_problems(copy, langs=(lang,), pages=[page])
    assert len(problems) == 1 and "fig-heads" in problems[0], problems
    assert "but the figure has 2 rows" in problems[0]


# --- figure_layout reads the Axes of ordinary plots -----------------------------
@pytest.mark.parametrize("rows,columns", [(1, 1), (1, 3), (3, 1), (2, 4)])
def test_the_layout_of_a_grid_is_its_rows_and_columns(rows, columns):
    fig = new_figure(figsize=(4, 3))
    axes = fig.subplots(rows, columns, squeeze=False)
    fig.colorbar(axes[0, 0].imshow([[0, 1]]), ax=axes)  # no panel
    axes[0, 0].twinx()  # a twin: the same panel
    assert figure_layout(fig) == {"rows": rows, "columns": columns, "direction": None}


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


def test_record_layout_names_its_bad_arguments():
    fig = new_figure()
    with pytest.raises(ValueError, match="rows must be a positive int, got 0"):
        record_layout(fig, 0, 1)
    with pytest.raises(ValueError, match="columns must be a positive int, got 2.0"):
        record_layout(fig, 1, 2.0)
    with pytest.raises(ValueError, match="direction must be one of .* got 'up'"):
        record_layout(fig, 1, 1, "up")
