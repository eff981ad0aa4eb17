"""Diagram of how a padding mask and a causal mask broadcast and combine.

Chapter 05-verification draws it where the two masks are built and combined.

Legend: B batch, H heads, T query length, S key length (here S = T).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from mha_book._checks import check_positive_int, fmt_shape
from mha_book.attention.masks import causal_mask, padding_mask
from mha_book.book import pick
from mha_book.viz.diagrams._draw import draw_bool_grid
from mha_book.viz.layout import record_layout
from mha_book.viz.plot import new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["mask_broadcast"]


def mask_broadcast(
    lengths: torch.Tensor | Sequence[int], T: int, num_heads: int = 1
) -> tuple[Figure, dict[str, object]]:
    """Padding mask & causal mask, broadcast to the scores, one row per sequence.

    Builds ``padding_mask(lengths, T)`` and ``causal_mask(T)``, combines them
    with ``&`` and broadcasts all three to the scores' ``(B, H, T, S)`` with
    :func:`torch.broadcast_to`; row ``b`` of the figure shows, for sequence
    ``b`` (the same for every head), the padding mask repeated over the
    queries, the causal mask, and their AND.

    Args:
        lengths: Real tokens per sequence, each in ``[0, T]`` (at most 4).
        T: Query and key length (at most 8).
        num_heads: H of the scores the masks broadcast to.

    Shape:
        - lengths: ``(B,)``
        - facts["mask"]: ``(B, 1, T, S)`` bool, True = may attend

    Returns:
        The figure and a dict of facts, with ``"shapes"``, the shapes of ``"padding"``,
        ``"causal"``, ``"combined"`` and ``"scores"`` (the
        :func:`torch.broadcast_shapes` of the three masks and ``(B, H, T, S)``),
        ``"mask"``, the combined mask, and ``"layout"``, one row of three
        grids per sequence (:func:`~mha_book.viz.layout.figure_layout`).

    Example:
        >>> fig, facts = mask_broadcast([3, 2], 3, num_heads=4)
        >>> facts["shapes"]["padding"], facts["shapes"]["causal"]
        ((2, 1, 1, 3), (3, 3))
        >>> facts["shapes"]["combined"], facts["shapes"]["scores"]
        ((2, 1, 3, 3), (2, 4, 3, 3))
        >>> facts["layout"]
        {'rows': 2, 'columns': 3, 'direction': None}
        >>> facts["mask"][1, 0].int()
        tensor([[1, 0, 0],
                [1, 1, 0],
                [1, 1, 0]], dtype=torch.int32)
    """
    T = check_positive_int(T, "T")
    H = check_positive_int(num_heads, "num_heads")
    pad = padding_mask(lengths, T)  # (B, 1, 1, S); checks lengths
    causal = causal_mask(T)  # (T, S)
    combined = pad & causal  # (B, 1, T, S)
    B = pad.shape[0]
    if B > 4 or T > 8:
        raise ValueError(
            "lengths and T must be small enough to draw (at most 4 sequences, "
            f"T <= 8), got {B} sequences and T = {T}"
        )
    masks = {"padding": pad, "causal": causal, "combined": combined}
    scores = torch.broadcast_shapes(*(m.shape for m in masks.values()), (B, H, T, T))
    shapes = {name: tuple(m.shape) for name, m in masks.items()}
    shapes["scores"] = tuple(scores)
    titles = {"padding": "padding_mask", "causal": "causal_mask", "combined": "&"}
    fig = new_figure(figsize=(5.0, 1.05 + 1.45 * B))
    axes = fig.subplots(B, 3, squeeze=False)
    for col, (name, mask) in enumerate(masks.items()):
        seen = torch.broadcast_to(mask, scores)  # (B, H, T, S), a view
        axes[0, col].set_title(f"{titles[name]}\n{fmt_shape(mask.shape)}")
        for b in range(B):
            draw_bool_grid(axes[b, col], seen[b, 0])  # (T, S): head 0 = every head
            if col:
                axes[b, col].set_yticks([])
        axes[-1, col].set_xlabel(pick("键 j", "key j"))
    for b in range(B):
        axes[b, 0].set_ylabel(pick(f"序列 {b}：查询 i", f"seq {b}: query i"))
    fig.suptitle(
        pick(
            f"广播到分数 {fmt_shape(scores)}，每个头都一样",
            f"broadcast to the scores {fmt_shape(scores)}, the same in every head",
        ),
    )
    layout = record_layout(fig, rows=B, columns=len(masks))
    return fig, {"shapes": shapes, "mask": combined, "layout": layout}
