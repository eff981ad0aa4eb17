"""The tiles of FlashAttention's forward pass and the running statistics they leave.

Chapter 12-flash-attention draws it. The numbers are the kernel's own: the
diagram runs the forward pass of :func:`~mha_book.attention.flash.flash_attention`
with a callback that records, after every tile, the tile's scores and the
running maximum ``m`` and running sum ``l`` that
:func:`~mha_book.attention.flash.online_softmax_update` left.

Legend: T query length, S key length, D head dim, Dv value dim; a tile is
``bq`` queries against ``bk`` keys.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from mha_book._checks import check_rank
from mha_book.attention.flash import _check_block_size, _forward
from mha_book.attention.scaled_dot_product import _check_qkv
from mha_book.book import pick
from mha_book.viz.diagrams._draw import draw_number_grid
from mha_book.viz.layout import record_layout
from mha_book.viz.plot import new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["online_softmax_tiles"]


def online_softmax_tiles(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    block_size: int | tuple[int, int],
    row: int = 0,
) -> tuple[Figure, dict]:
    """The order the kernel reads its tiles in, and ``m``, ``l`` after each one.

    Top: the ``(T, S)`` scores cut into tiles, numbered in the order the
    kernel's two loops visit them; query ``row`` is outlined. Bottom, for that
    row and each tile of its query block: the tile's largest score, the
    running maximum ``m``, the factor ``exp(m_old - m)`` that rescaled the old
    sums, and the running sum ``l``.

    Shape:
        - q: ``(T, D)``, k: ``(S, D)``, v: ``(S, Dv)``
        - facts: ``order``, the tiles ``((r0, r1), (c0, c1))`` in visit order;
          ``block_max``, ``m``, ``l``, ``rescale``: ``(T, nk)``, row ``i``
          after each of the ``nk`` key blocks; ``out`` ``(T, Dv)`` and
          ``lse`` ``(T,)``: the kernel's output and log-sum-exp; ``layout``:
          two panels, one above the other (:func:`~mha_book.viz.layout.figure_layout`)

    Example:
        >>> q, k, v = torch.randn(4, 8), torch.randn(6, 8), torch.randn(6, 3)
        >>> fig, facts = online_softmax_tiles(q, k, v, block_size=(2, 3))
        >>> facts["order"]
        [((0, 2), (0, 3)), ((0, 2), (3, 6)), ((2, 4), (0, 3)), ((2, 4), (3, 6))]
        >>> facts["m"].shape, facts["out"].shape
        (torch.Size([4, 2]), torch.Size([4, 3]))
    """
    _check_qkv(q, k, v, None, 0.0, None)
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_rank(x, name, 2, "(T, D)" if name == "q" else "(S, D)")
    bq, bk = _check_block_size(block_size)
    T = q.shape[0]
    if T == 0:
        raise ValueError(
            f"q must hold at least one query row, got shape {tuple(q.shape)}"
        )
    if isinstance(row, bool) or not isinstance(row, int) or not 0 <= row < T:
        raise ValueError(f"row must be an int in [0, T) = [0, {T}), got {row!r}")
    order, stats = [], []

    def record(rows, cols, s, m, total):  # called by the kernel after each tile
        order.append((rows, cols))
        stats.append((rows, s.amax(dim=-1), m, total))  # (bq,) each

    scale = 1.0 / math.sqrt(q.shape[-1])
    out, lse = _forward(q, k, v, None, scale, bq, bk, on_tile=record)
    facts = {"order": order, "out": out, "lse": lse}
    for i, name in enumerate(("block_max", "m", "l"), start=1):
        per_block = [  # (bq, nk) for each query block, in row order
            torch.stack([st[i] for st in stats if st[0] == rows], dim=-1)
            for rows in _starts(order)
        ]
        facts[name] = torch.cat(per_block)  # (T, nk)
    m_old = torch.cat([torch.full_like(facts["m"][:, :1], -math.inf), facts["m"]], -1)
    facts["rescale"] = torch.exp(m_old[:, :-1] - facts["m"])  # (T, nk)
    fig = _draw(facts, q.shape[0], k.shape[0], row)
    facts["layout"] = record_layout(fig, rows=2, columns=1)  # tiles, statistics
    return fig, facts


def _starts(order):
    """The query blocks ``(r0, r1)`` in visit order, each once."""
    return list(dict.fromkeys(rows for rows, _ in order))


def _draw(facts: dict, T: int, S: int, row: int) -> Figure:
    """Tile order on top, the row's running statistics below."""
    from matplotlib.patches import Rectangle

    order = facts["order"]
    fig = new_figure(figsize=(5.0, 1.9 + 0.32 * T))
    top, bottom = fig.subplots(2, 1, height_ratios=[0.32 * T + 0.5, 1.6])
    for n, ((r0, r1), (c0, c1)) in enumerate(order, start=1):
        mine = r0 <= row < r1
        box = Rectangle((c0, r0), c1 - c0, r1 - r0, fc="C1" if mine else "0.92")
        top.add_patch(box)
        top.add_patch(Rectangle((c0, r0), c1 - c0, r1 - r0, fc="none", ec="k"))
        top.text(
            (c0 + c1) / 2,
            (r0 + r1) / 2,
            str(n),
            ha="center",
            va="center",
            zorder=3,
            bbox={"boxstyle": "round", "fc": "white", "ec": "none"},
        )
    top.add_patch(Rectangle((0, row), S, 1, fc="none", ec="C3", lw=2.5))
    top.set(xlim=(0, S), ylim=(T, 0), aspect="equal")
    cuts = sorted({c for _, cols in order for c in cols})  # key block edges
    top.set_xticks(cuts, cuts)
    cuts = sorted({r for rows, _ in order for r in rows})  # query block edges
    top.set_yticks(cuts, cuts)
    (r0, r1), (c0, c1) = order[0]  # the first tile is a full bq x bk one
    top.set_xlabel(pick(f"键 j（每块 {c1 - c0} 个）", f"key j (blocks of {c1 - c0})"))
    top.set_ylabel(
        pick(f"查询 i（每块 {r1 - r0} 个）", f"query i (blocks of {r1 - r0})")
    )
    top.set_title(
        pick(
            "块的读取顺序（红框：第 {} 行）", "tiles in reading order (red: row {})"
        ).format(row),
    )
    nk = facts["m"].shape[1]
    first = [n for n, (rows, _) in enumerate(order, 1) if rows[0] <= row < rows[1]]
    table = torch.stack(
        [facts[name][row] for name in ("block_max", "m", "rescale", "l")]
    )  # (4, nk)
    labels = [pick("块内最大", "tile max"), "m", "exp(m_old − m)", "ℓ"]
    draw_number_grid(
        bottom,
        table,
        row_labels=labels,
        col_labels=[pick(f"块 {n}", f"tile {n}") for n in first],
    )
    bottom.set(xlim=(-0.45 * nk - 0.3, nk), ylim=(4, -0.9))
    bottom.set_axis_off()
    bottom.set_title(
        pick(f"第 {row} 行在每块之后（共 {nk} 块）", f"row {row} after each tile"),
    )
    return fig
