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
