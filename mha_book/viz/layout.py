"""The layout of a figure: its rows and columns of panels, its direction of flow.

A figure's alt text says how its panels are arranged ("two rows", "top to
bottom"); :func:`figure_layout` states it from the figure itself, and
:func:`~mha_book.viz.plot.figure_png` writes it into the PNG, where
``tests/unit/test_alt_text.py`` checks each alt text against it. A diagram that
draws several panels in one Axes records its layout with :func:`record_layout`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["DIRECTIONS", "LAYOUT_KEY", "figure_layout", "record_layout"]

# PNG text key under which figure_png records the figure's layout (JSON, as
# figure_layout returns it); tests/unit/test_alt_text.py checks each figure's alt
# text against it.
LAYOUT_KEY = "mha_book:layout"
#: The directions of flow a diagram may record (None for panels without a flow).
DIRECTIONS = ("top-to-bottom", "left-to-right", None)
_LAYOUT_ATTR = "_mha_book_layout"  # where record_layout keeps it on the figure


def record_layout(
    fig: Figure, rows: int, columns: int, direction: str | None = None
) -> dict:
    """Record the layout of a figure whose panels are not one Axes each.

    A diagram that draws several panels (or a flow of boxes) in one Axes
    states its layout here; :func:`figure_layout` then returns it instead of
    reading the Axes, and :func:`~mha_book.viz.plot.figure_png` writes it into
    the PNG.

    Args:
        fig: the figure.
        rows: rows of panels (or of boxes, in a flow).
        columns: columns of panels (or of boxes side by side, in a flow).
        direction: the direction of flow, one of :data:`DIRECTIONS`.

    Returns:
        ``{"rows": rows, "columns": columns, "direction": direction}``, a copy.

    Example:
        >>> from mha_book.viz.plot import new_figure
        >>> fig = new_figure()
        >>> record_layout(fig, rows=5, columns=1, direction="top-to-bottom")
        {'rows': 5, 'columns': 1, 'direction': 'top-to-bottom'}
    """
    for name, value in (("rows", rows), ("columns", columns)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    layout = {"rows": rows, "columns": columns, "direction": direction}
    setattr(fig, _LAYOUT_ATTR, layout)
    return dict(layout)


def figure_layout(
    fig: Figure, *, recorded: bool = True, laid_out: bool = False
) -> dict:
    """Rows and columns of a figure's panels, and the direction of its flow.

    The layout a diagram recorded with :func:`record_layout`; otherwise (and
    always with ``recorded=False``) it is read from where the figure's Axes
    lie once laid out: ``rows`` is the most Axes stacked over one another,
    ``columns`` the most side by side (the figure is laid out first, unless
    ``laid_out`` says it was drawn since its last change). Colorbars, hidden
    or empty Axes and twins (``twinx``) are not panels; an Axes spanning
    several columns counts once in each. A figure without panels counts as one.

    Returns:
        ``{"rows": int, "columns": int, "direction": str | None}``, with a
        direction (one of :data:`DIRECTIONS`) only for a recorded flow.

    Example:
        >>> from mha_book.viz.plot import new_figure
        >>> fig = new_figure(figsize=(4, 3))
        >>> axes = fig.subplot_mosaic([["wide", "wide"], ["a", "b"], ["c", "d"]])
        >>> _ = fig.colorbar(axes["a"].imshow([[0, 1]]), ax=axes["b"])
        >>> figure_layout(fig)
        {'rows': 3, 'columns': 2, 'direction': None}
        >>> _ = record_layout(fig, 1, 4, "left-to-right")
        >>> figure_layout(fig)["direction"], figure_layout(fig, recorded=False)["rows"]
        ('left-to-right', 3)
    """
    layout = getattr(fig, _LAYOUT_ATTR, None)
    if recorded and layout is not None:
        return dict(layout)
    if not laid_out:
        fig.draw_without_rendering()  # constrained layout: the final positions
    boxes = []
    for ax in fig.axes:
        empty = not (ax.axison or ax.has_data() or ax.texts or ax.get_title())
        if getattr(ax, "_colorbar", None) is not None or not ax.get_visible():
            continue  # a colorbar, or hidden
        box = [float(v) for v in ax.get_position().extents]  # x0, y0, x1, y1
        if empty or any(
            max(abs(a - b) for a, b in zip(box, seen)) < 1e-6 for seen in boxes
        ):
            continue  # an unused slot of a grid, or a twin of one already seen
        boxes.append(box)

    def most_across(lo: int, hi: int) -> int:
        """The most boxes one line at the centre of a box crosses."""
        centres = [(b[lo] + b[hi]) / 2 for b in boxes]
        return max((sum(b[lo] < c < b[hi] for b in boxes) for c in centres), default=1)

    return {"rows": most_across(0, 2), "columns": most_across(1, 3), "direction": None}
