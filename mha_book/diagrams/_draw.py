"""Drawing helpers shared by the diagrams (matplotlib axes in, nothing out)."""

from __future__ import annotations

import torch


def draw_bool_grid(ax, mask: torch.Tensor, fontsize: int = 10) -> None:
    """Draw a ``(rows, cols)`` bool tensor as a grid of 1s and 0s on ``ax``.

    True cells are dark with a white "1", False cells light with a "0"; the
    ticks are the row and column indices.

    Example:
        >>> from mha_book.plot import new_figure
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
    ax, numbers: torch.Tensor, groups: torch.Tensor, x0: float = 0.0, y0: float = 0.0
) -> None:
    """Draw a ``(rows, cols)`` int tensor as cells numbered and tinted by group.

    Cell ``(i, j)`` is the unit square at ``(x0 + j, y0 + i)`` (row 0 on top
    once the caller inverts the y axis); the numbers are 10 pt; ``groups[i, j]`` picks its tint (``C0``,
    ``C1``, ... lightened), so cells of one head share a colour.

    Example:
        >>> from mha_book.plot import new_figure
        >>> ax = new_figure().subplots()
        >>> draw_number_grid(ax, torch.tensor([[4, 5]]), torch.tensor([[0, 1]]))
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
                fontsize=10,
            )


def grid_axes(ax, width: float, rows: int) -> None:
    """Frame a :func:`draw_number_grid` drawing: limits, row 0 on top, no axes."""
    ax.set_xlim(-0.05, width + 0.05)
    ax.set_ylim(rows + 0.05, -0.05)
    ax.set_aspect("equal")
    ax.set_axis_off()
