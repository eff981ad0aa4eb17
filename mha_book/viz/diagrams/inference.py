"""Diagrams of a KV cache at inference scale, each drawn from the object it shows.

Chapter 17-inference draws :func:`ring_buffer` (a
:class:`~mha_book.attention.window_caches.RollingKVCache` filling its slots),
:func:`sink_window` (what a :class:`~mha_book.attention.window_caches.SinkKVCache`
keeps) and :func:`block_table` (sequences' logical blocks in a shared
:class:`~mha_book.attention.paged.BlockPool`); its fourth diagram,
:func:`~mha_book.viz.diagrams.latent.latent_data_flow`, has a module of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from mha_book._checks import check_positive_int
from mha_book.attention.paged import PagedKVCache
from mha_book.attention.window_caches import RollingKVCache, SinkKVCache
from mha_book.book import pick
from mha_book.viz.layout import record_layout
from mha_book.viz.plot import new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["ring_buffer", "sink_window", "block_table"]

NEW, KEPT, SINK, GONE = "C1", "C0", "C2", "0.85"  # newest, cached, sink, evicted


def _token_keys(cache, tokens: int) -> list[list[int]]:
    """Feed tokens 0.. whose one-number key is their index; after each step,
    read back which token every slot (or kept position) holds."""
    held = []
    for t in range(tokens):
        k = torch.full((1, 1, 1, 1), float(t))  # (B, Hkv, T, D): key = token index
        cache.update(k, torch.zeros_like(k))
        held.append([int(x) for x in cache.keys[0, 0, :, 0]])  # by slot or position
    return held


def _cell(ax, x, y, text, colour, *, white=True) -> None:
    from matplotlib.patches import Rectangle

    ax.add_patch(Rectangle((x, y + 0.1), 0.9, 0.8, fc=colour, ec="none"))
    ax.text(x + 0.45, y + 0.5, text, ha="center", va="center",
            color="white" if white else "black")  # fmt: skip


def _finish(ax, rows: int, cols: int, ylabel: str, xlabel: str, title: str) -> None:
    ax.set_xlim(0, cols)
    ax.set_ylim(0, rows)
    ax.set_yticks([rows - 0.5 - t for t in range(rows)], [str(t) for t in range(rows)])
    ax.set_ylabel(ylabel)
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def ring_buffer(window: int = 4, tokens: int = 7) -> tuple[Figure, dict[str, object]]:
    """The slots of a rolling cache of ``window`` slots after each of ``tokens`` steps.

    Row t shows which token each slot holds after token t was written (slot
    ``t % window``, orange); grey slots are not written yet.

    Example:
        >>> fig, facts = ring_buffer(3, 5)
        >>> facts["slots"][-1]  # after token 4: slot 0 holds 3, slot 1 holds 4
        [3, 4, 2]
    """
    W, T = check_positive_int(window, "window"), check_positive_int(tokens, "tokens")
    slots = _token_keys(RollingKVCache(W), T)
    fig = new_figure(figsize=(4.0, 0.9 + 0.42 * T))
    ax = fig.subplots()
    for t, row in enumerate(slots):
        for j, token in enumerate(row):
            if j > t:  # not written yet
                _cell(ax, j, T - 1 - t, "", GONE)
            else:
                _cell(ax, j, T - 1 - t, str(token), NEW if j == t % W else KEPT)
    ax.set_xticks([j + 0.45 for j in range(W)], [str(j) for j in range(W)])
    _finish(
        ax, T, W,
        pick("步 t（写入词元 t）", "step t (token t written)"),
        pick("槽位（橙色：t % W，刚写入）", "slot (orange: t % W, just written)"),
        pick(f"W = {W} 个槽位里的词元", f"which token each of W = {W} slots holds"),
    )  # fmt: skip
    return fig, {"slots": slots, "layout": record_layout(fig, rows=1, columns=1)}


def sink_window(
    sinks: int = 2, window: int = 3, tokens: int = 9
) -> tuple[Figure, dict[str, object]]:
    """Which tokens a sink cache keeps after each step: sinks, window, evicted.

    Example:
        >>> fig, facts = sink_window(1, 2, 5)
        >>> facts["kept"][-1]
        [0, 3, 4]
    """
    n = check_positive_int(sinks, "sinks", allow_zero=True)
    W, T = check_positive_int(window, "window"), check_positive_int(tokens, "tokens")
    kept = _token_keys(SinkKVCache(n, W), T)
    fig = new_figure(figsize=(4.6, 0.9 + 0.42 * T))
    ax = fig.subplots()
    for t, row in enumerate(kept):
        for j in range(t + 1):
            colour = (SINK if j < n else KEPT) if j in row else GONE
            _cell(ax, j, T - 1 - t, str(j), NEW if j == t else colour, white=j in row)
    ax.set_xticks([])
    _finish(
        ax, T, T,
        pick("步 t", "step t"),
        pick("词元（绿：汇点，蓝：窗口，灰：已丢弃）",
             "token (green: sink, blue: window, grey: evicted)"),
        pick(f"{n} 个汇点 + 最近 {W} 个词元", f"{n} sinks + the last {W} tokens"),
    )  # fmt: skip
    return fig, {"kept": kept, "layout": record_layout(fig, rows=1, columns=1)}


def block_table(sequences: list[PagedKVCache]) -> tuple[Figure, dict[str, object]]:
    """Each sequence's logical blocks (left) and the pool blocks they map to (right).

    Example:
        >>> from mha_book.attention.paged import BlockPool
        >>> pool = BlockPool(16, 4, num_kv_heads=1, head_dim=2)
        >>> a, b = PagedKVCache(pool), PagedKVCache(pool)
        >>> _ = a.append(torch.zeros(1, 5, 2), torch.zeros(1, 5, 2))
        >>> _ = b.append(torch.zeros(1, 3, 2), torch.zeros(1, 3, 2))
        >>> fig, facts = block_table([a, b])
        >>> facts["tables"], facts["filled"]
        ([[0, 1], [2]], {0: 4, 1: 1, 2: 3})
    """
    if not isinstance(sequences, list) or not sequences:
        raise TypeError("sequences must be a non-empty list of PagedKVCache")
    for i, s in enumerate(sequences):
        if not isinstance(s, PagedKVCache) or s.pool is not sequences[0].pool:
            raise TypeError(
                f"sequences[{i}] must be a PagedKVCache of the first one's pool"
            )
    pool = sequences[0].pool
    P, N = pool.block_size, pool.num_blocks
    tables = [list(s.block_table) for s in sequences]
    filled = {}
    for s in sequences:
        for i, b in enumerate(s.block_table):
            filled[b] = min(P, s.length - i * P)  # tokens in this block
    fig = new_figure(
        figsize=(4.6, 0.9 + 0.5 * max(N, sum(map(len, tables)) + len(tables)))
    )
    ax = fig.subplots()
    y, top = 0, max(N, sum(map(len, tables)) + len(tables))
    for si, table in enumerate(tables):
        for i, b in enumerate(table):
            row = top - 1 - y
            _cell(
                ax, 0, row, pick(f"序列{si} 块{i}", f"seq {si} blk {i}"), f"C{si + 2}"
            )
            ax.annotate("", xy=(3.0, top - 1 - b + 0.5), xytext=(1.0, row + 0.5),
                        arrowprops={"arrowstyle": "-|>", "color": "0.3"})  # fmt: skip
            y += 1
        y += 1  # a gap between sequences
    owner = {b: si for si, table in enumerate(tables) for b in table}
    for b in range(N):
        colour = f"C{owner[b] + 2}" if b in owner else GONE
        _cell(
            ax,
            3.05,
            top - 1 - b,
            f"{b}: {filled.get(b, 0)}/{P}",
            colour,
            white=b in owner,
        )
    ax.set_xlim(-0.1, 4.1)
    ax.set_ylim(0, top)
    ax.set_axis_off()
    ax.set_title(pick("块表：逻辑块 → 池中的物理块（已用/容量）",
                      "block tables: logical -> physical block (used/size)"))  # fmt: skip
    layout = record_layout(fig, rows=1, columns=2, direction="left-to-right")
    return fig, {"tables": tables, "filled": filled, "layout": layout}
