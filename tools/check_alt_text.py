"""The alt text of every glued figure agrees with the figure's layout.

Usage: python -m tools.check_alt_text [SITE]   (default _build/html; exit 1 and
a list of problems)

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

"""

from __future__ import annotations

import json
import re
import sys
from html.parser import HTMLParser
from pathlib import Path

from mha_book.viz.layout import LAYOUT_KEY

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

    >>> alt_problems("Two heatmaps side by side.", {"rows": 2, "columns": 1,
    ...     "direction": None}, "en")
    ["the alt text says 'side by side' (one row), but the figure has 2 rows"]
    """
    if lang not in LANGS:
        raise ValueError(f"lang must be one of {LANGS}, got {lang!r}")
    problems, said = [], False
    for check in (count_problems, one_line_problems, direction_problems):
        found, mentioned = check(alt, layout, lang)
        problems += found
        said = said or mentioned
    return problems + unsaid_problems(alt, layout, lang, said)


def count_problems(alt: str, layout: dict, lang: str) -> tuple[list[str], bool]:
    """Stated numbers of rows or columns that differ; whether any was stated."""
    problems, counts = [], stated_counts(alt, lang)
    for kind, n, words in counts:
        if n != layout[kind]:
            problems.append(
                f"the alt text says {words!r}, but the figure has {layout[kind]} {kind}"
            )
    return problems, bool(counts)


def one_line_problems(alt: str, layout: dict, lang: str) -> tuple[list[str], bool]:
    """ "Side by side" with several rows, "one above the other" with several
    columns; whether either was said."""
    problems, said = [], False
    for pattern, kind, rule in (
        (ONE_ROW[lang], "rows", "one row"),
        (ONE_COLUMN[lang], "columns", "one column"),
    ):
        for m in re.finditer(pattern, alt, flags=re.IGNORECASE):
            said = True
            if layout[kind] > 1:
                problems.append(
                    f"the alt text says {m.group(0)!r} ({rule}), but the figure "
                    f"has {layout[kind]} {kind}"
                )
    return problems, said


def direction_problems(alt: str, layout: dict, lang: str) -> tuple[list[str], bool]:
    """A stated direction against the flow, or along a single row or column;
    whether a direction was stated."""
    flow, problems, said = layout["direction"], [], False
    for direction, pattern in DIRECTIONS[lang].items():
        for m in re.finditer(pattern, alt, flags=re.IGNORECASE):
            said = True
            across = direction in ACROSS
            if flow is not None and direction != flow:
                flows = flow.replace("-", " ")
                problems.append(
                    f"the alt text says {m.group(0)!r}, but the figure flows {flows}"
                )
            elif flow is None and layout["columns" if across else "rows"] == 1:
                kind = "column" if across else "row"
                problems.append(
                    f"the alt text says {m.group(0)!r}, but the figure has one "
                    f"{kind} of panels"
                )
    return problems, said


def unsaid_problems(alt: str, layout: dict, lang: str, said: bool) -> list[str]:
    """A flow diagram without its direction; several panels without their
    arrangement (``said``: the alt text says something about the layout)."""
    flow, rows, columns = layout["direction"], layout["rows"], layout["columns"]
    stated = any(
        re.search(pattern, alt, flags=re.IGNORECASE)
        for pattern in DIRECTIONS[lang].values()
    )
    if flow is not None and not stated:
        return [
            f"the figure is a flow diagram ({flow.replace('-', ' ')}), but the "
            "alt text does not say its direction"
        ]
    if rows * columns > 1 and not said:
        return [
            f"the figure has {rows} row(s) and {columns} column(s) of panels, but "
            "the alt text does not say how they are arranged (e.g. 'two rows of "
            "three heatmaps', 'side by side', 'one above the other', '两行三列', "
            "'上下两幅', '并排')"
        ]
    return []


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
                problems += [
                    f"{where}: {p}" for p in figure_problems(figure, built, html, lang)
                ]
    return problems


def figure_problems(figure: dict, built: dict, html: Path, lang: str) -> list[str]:
    """What is wrong with one glued figure as ``html`` shows it."""
    if figure["name"] is None:
        return ["the glue:figure has no :name:"]
    if figure["name"] not in built:
        return [f"no figure #{figure['name']} in {html}"]
    alt, src = built[figure["name"]]
    if not alt:
        return ["the figure has no alt text"]
    image = (html.parent / src) if src else None
    layout = png_layout(image) if image and image.exists() else None
    if layout is None:
        return [
            f"{src} records no layout (draw the figure with "
            "mha_book.viz.plot.new_figure; the notebook's PNG formatter, "
            "figure_png, records it)"
        ]
    return [
        f"{p}; layout {layout}; alt: {alt!r}" for p in alt_problems(alt, layout, lang)
    ]


def main(argv: list[str]) -> int:
    site = Path(argv[0]) if argv else ROOT / "_build" / "html"
    problems = site_problems(site)
    print("\n".join(problems) or f"every glued figure's alt text matches ({site})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
