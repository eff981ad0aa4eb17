"""Which chapter needs which: the book's reading paths, drawn from its map.

The index draws it. Nothing is typed here: the parts, the chapters and the
arrows come from :mod:`mha_book.book_map`, the map the sidebar and the lists
of chapters are written from. One column per part (a part whose chapters
stand side by side at one level gets as many columns as it needs), one row
per level: a chapter sits one row below the lowest chapter it needs, and an
arrow runs from each chapter it needs to it, so every path reads from top to
bottom.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_book import book_map
from mha_book.book import pick
from mha_book.viz.layout import record_layout
from mha_book.viz.plot import PHONE_WIDTH_IN, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["reading_path"]

ROW_IN = 0.42  # the height of one level, inches
HEAD_IN = 0.45  # the part names above the columns, inches


def levels(chapters=None) -> dict[int, int]:
    """Each chapter's level: 0 without needs, else one more than its needs' highest.

    Example:
        >>> lv = levels()
        >>> lv[1], lv[9], lv[10], lv[17]
        (0, 8, 6, 9)
    """
    chapters = book_map.CHAPTERS if chapters is None else chapters
    known = {c.number: c for c in chapters}
    level: dict[int, int] = {}

    def of(n: int, seen: tuple[int, ...] = ()) -> int:
        if n in seen:
            raise ValueError(f"chapters: the needs of chapter {n} form a cycle")
        if n not in level:
            needs = known[n].needs
            level[n] = 1 + max((of(m, (*seen, n)) for m in needs), default=-1)
        return level[n]

    for c in chapters:
        of(c.number)
    return level


def slots(level: dict[int, int]) -> dict[int, tuple[int, int]]:
    """Each chapter's (column, row): parts in the map's order, left to right.

    Example:
        >>> s = slots(levels())
        >>> s[1], s[10], s[11], s[14]
        ((0, 0), (1, 6), (1, 7), (4, 7))
    """
    place: dict[int, tuple[int, int]] = {}
    first = 0
    for p in book_map.PARTS:
        members = book_map.chapters_in(p.key)
        rows: dict[int, list[int]] = {}
        for c in members:
            rows.setdefault(level[c.number], []).append(c.number)
        for row, numbers in rows.items():
            for i, n in enumerate(numbers):
                place[n] = (first + i, row)
        first += max(len(v) for v in rows.values())
    return place


def reading_path() -> tuple[Figure, dict]:
    """The chapters as boxes in their parts' columns, with an arrow for each need.

    Shape:
        - the figure: one column per part (wider where a part's chapters
          share a level), one row per level, at most
          :data:`~mha_book.viz.plot.PHONE_WIDTH_IN` wide
        - facts: ``"needs"``, the arrows as ``(needed, chapter)`` pairs;
          ``"level"`` and ``"slot"``, each chapter's row and ``(column, row)``;
          ``"parts"``, each part's chapter numbers; ``"layout"``, the rows
          and columns of boxes and the direction of the flow
          (:func:`~mha_book.viz.layout.figure_layout`)

    Example:
        >>> fig, facts = reading_path()
        >>> (6, 10) in facts["needs"], facts["parts"]["positions"]
        (True, [14])
        >>> facts["layout"]
        {'rows': 12, 'columns': 5, 'direction': 'top-to-bottom'}
    """
    level = levels()
    slot = slots(level)
    columns = 1 + max(c for c, _ in slot.values())
    rows = 1 + max(level.values())
    needs = [(m, c.number) for c in book_map.CHAPTERS for m in c.needs]
    fig = _draw(slot, needs, columns, rows)
    facts = {
        "needs": needs,
        "level": level,
        "slot": slot,
        "parts": {
            p.key: [c.number for c in book_map.chapters_in(p.key)]
            for p in book_map.PARTS
        },
    }
    facts["layout"] = record_layout(
        fig, rows=rows, columns=columns, direction="top-to-bottom"
    )
    return fig, facts


BOX_W, BOX_H = 0.52, 0.6  # a chapter's box, in columns and rows


def _anchors(a: tuple[int, int], b: tuple[int, int]):
    """Where the arrow from box ``a`` to box ``b`` starts and ends, and its bend.

    One level apart: bottom to top. Further apart in one column: side to
    side, bent out so that it passes the boxes between. Further apart in two
    columns: from the side of one that faces the other, clear of the boxes in
    the rows between.
    """
    (x0, y0), (x1, y1) = a, b
    half_w, half_h = BOX_W / 2, BOX_H / 2
    if y1 - y0 == 1:
        return (x0, y0 + half_h), (x1, y1 - half_h), 0.0
    if x0 == x1:
        return (x0 + half_w, y0), (x1 + half_w, y1), -0.3
    side = half_w if x1 > x0 else -half_w
    return (x0 + side, y0), (x1 - side, y1), 0.0


def _draw(slot: dict, needs: list, columns: int, rows: int) -> Figure:
    """Boxes in a grid, one colour per part; an arrow for each need."""
    from matplotlib.patches import FancyBboxPatch

    width = min(PHONE_WIDTH_IN, 1.0 * columns)
    fig = new_figure(figsize=(width, HEAD_IN + ROW_IN * rows + 0.1))
    ax = fig.subplots()
    ax.set_xlim(-0.5, columns - 0.5)
    ax.set_ylim(rows - 0.5, -1.2)  # row 0 on top; the part names above it
    ax.set_axis_off()
    lang = pick("zh", "en")
    for i, p in enumerate(book_map.PARTS):
        numbers = [c.number for c in book_map.chapters_in(p.key)]
        cols = sorted({slot[n][0] for n in numbers})
        colour = f"C{i}"
        ax.text(
            (cols[0] + cols[-1]) / 2, -0.85, book_map.text(p.short, lang),
            ha="center", va="center", color=colour,
        )  # fmt: skip
        for n in numbers:
            x, y = slot[n]
            ax.add_patch(
                FancyBboxPatch(
                    (x - BOX_W / 2, y - BOX_H / 2),
                    BOX_W,
                    BOX_H,
                    boxstyle="round,pad=0.02",
                    facecolor=colour,
                    alpha=0.22,
                    edgecolor=colour,
                    linewidth=1.2,
                )  # fmt: skip
            )
            ax.text(x, y, f"{n:02d}", ha="center", va="center")
    for m, n in needs:
        start, end, bend = _anchors(slot[m], slot[n])
        ax.annotate(
            "", xy=end, xytext=start,
            arrowprops={"arrowstyle": "-|>", "color": "0.35", "linewidth": 1.0,
                        "shrinkA": 0, "shrinkB": 0,
                        "connectionstyle": f"arc3,rad={bend}"},
        )  # fmt: skip
    return fig
