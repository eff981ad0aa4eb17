"""Drawing helpers shared by the diagrams (matplotlib axes in, nothing out)."""

from __future__ import annotations

import torch


def draw_bool_grid(ax, mask: torch.Tensor, fontsize: float | None = None) -> None:
    """Draw a ``(rows, cols)`` bool tensor as a grid of 1s and 0s on ``ax``.

    True cells are dark with a white "1", False cells light with a "0"; the
    ticks are the row and column indices.

    Example:
        >>> from mha_book.viz.plot import new_figure
        >>> ax = new_figure().subplots()
        >>> draw_bool_grid(ax, torch.eye(2, dtype=torch.bool))
        >>> [t.get_text() for t in ax.texts]
        ['1', '0', '0', '1']
    """
    rows, cols = mask.shape
    ax.imshow(mask.int().numpy(), cmap="Blues", vmin=0, vmax=1.6, aspect="equal")
    for i in range(rows):
        for j in range(cols):
            ax.text(
                j,
                i,
                "1" if mask[i, j] else "0",
                ha="center",
                va="center",
                fontsize=fontsize,
                color="white" if mask[i, j] else "black",
            )
    ax.set_xticks(range(cols), range(cols), fontsize=fontsize)
    ax.set_yticks(range(rows), range(rows), fontsize=fontsize)


def draw_number_grid(
    ax,
    values: torch.Tensor,
    *,
    x: float = 0.0,
    y: float = 0.0,
    cell: tuple[float, float] = (1.0, 1.0),
    shade: bool = False,
    row_labels=(),
    col_labels=(),
    fontsize: float | None = None,
) -> None:
    """Draw a ``(rows, cols)`` tensor as cells holding its numbers (2 decimals).

    The top-left corner is at ``(x, y)`` and row ``i`` lies below row
    ``i - 1``: give the axes a downward y axis (``ylim=(bottom, top)``).
    ``shade`` tints each cell by its value within the tensor; labels go left
    of the rows and above the columns.

    Example:
        >>> from mha_book.viz.plot import new_figure
        >>> ax = new_figure().subplots()
        >>> draw_number_grid(ax, torch.tensor([[1.0, -0.004]]), row_labels=["a"])
        >>> [t.get_text() for t in ax.texts]
        ['1.00', '0.00', 'a']
    """
    from matplotlib import colormaps
    from matplotlib.patches import Rectangle

    w, h = cell
    lo, hi = float(values.min()), float(values.max())
    blues = colormaps["Blues"]
    for i, line in enumerate(values.tolist()):
        for j, val in enumerate(line):
            tint = 0.05 + 0.5 * (val - lo) / (hi - lo) if shade and hi > lo else 0.05
            ax.add_patch(
                Rectangle((x + j * w, y + i * h), w, h, fc=blues(tint), ec="0.6")
            )
            ax.text(
                x + (j + 0.5) * w,
                y + (i + 0.5) * h,
                f"{val:.2f}".replace("-0.00", "0.00"),
                ha="center",
                va="center",
                fontsize=fontsize,
            )
    for i, label in enumerate(row_labels):
        ax.text(
            x - 0.1 * w,
            y + (i + 0.5) * h,
            label,
            ha="right",
            va="center",
            fontsize=fontsize,
        )
    for j, label in enumerate(col_labels):
        ax.text(
            x + (j + 0.5) * w,
            y - 0.1 * h,
            label,
            ha="center",
            va="bottom",
            fontsize=fontsize,
        )


def draw_offset_grid(
    ax, numbers: torch.Tensor, groups: torch.Tensor, x0: float = 0.0, y0: float = 0.0
) -> None:
    """Draw a ``(rows, cols)`` int tensor as cells numbered and tinted by group.

    Cell ``(i, j)`` is the unit square at ``(x0 + j, y0 + i)`` (row 0 on top
    once the caller inverts the y axis); the numbers are in the book's text size;
    ``groups[i, j]`` picks its tint (``C0``, ``C1``, ... lightened), so cells of one head share a colour.

    Example:
        >>> from mha_book.viz.plot import new_figure
        >>> ax = new_figure().subplots()
        >>> draw_offset_grid(ax, torch.tensor([[4, 5]]), torch.tensor([[0, 1]]))
        >>> [t.get_text() for t in ax.texts]
        ['4', '5']
    """
    from matplotlib.colors import to_rgba
    from matplotlib.patches import Rectangle

    rows, cols = numbers.shape
    for i in range(rows):
        for j in range(cols):
            tint = to_rgba(f"C{int(groups[i, j]) % 10}", alpha=0.35)
            ax.add_patch(Rectangle((x0 + j, y0 + i), 1, 1, fc=tint, ec="white", lw=1.5))
            ax.text(
                x0 + j + 0.5,
                y0 + i + 0.5,
                str(int(numbers[i, j])),
                ha="center",
                va="center",
            )


def grid_axes(ax, width: float, rows: int) -> None:
    """Frame a :func:`draw_offset_grid` drawing: limits, row 0 on top, no axes."""
    ax.set_xlim(-0.05, width + 0.05)
    ax.set_ylim(rows + 0.05, -0.05)
    ax.set_aspect("equal")
    ax.set_axis_off()
