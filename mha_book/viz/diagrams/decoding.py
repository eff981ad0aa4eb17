"""Diagrams of decoding: causal alignment, shared key/value heads, the KV cache.

Chapter 13-mqa-gqa-kv-cache draws all three.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from mha_book._checks import (
    check_positive_int,
    check_positive_ints,
    check_rank,
    check_tensor,
)
from mha_book.attention.heads import repeat_kv
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.masks import causal_mask
from mha_book.attention.mha import MultiHeadAttention
from mha_book.book import pick
from mha_book.viz.diagrams._draw import draw_bool_grid
from mha_book.viz.layout import record_layout
from mha_book.viz.plot import new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = [
    "torch_is_causal_mask",
    "causal_alignment",
    "kv_head_sharing",
    "kv_cache_growth",
]


def torch_is_causal_mask(T: int, S: int) -> torch.Tensor:
    """The keys each query may attend under PyTorch's ``is_causal=True``.

    Read off PyTorch itself: with all-zero queries and keys every allowed key
    gets the same weight, and with the identity as values the output row of
    query ``i`` is its weight row, so its non-zero entries are the allowed keys.

    Shape:
        - output: ``(T, S)`` bool, True = may attend

    Example:
        >>> torch_is_causal_mask(2, 3).int()
        tensor([[1, 0, 0],
                [1, 1, 0]], dtype=torch.int32)
    """
    T, S = check_positive_int(T, "T"), check_positive_int(S, "S")
    q, k = torch.zeros(1, 1, T, 1), torch.zeros(1, 1, S, 1)  # (1, 1, T|S, D=1)
    v = torch.eye(S)[None, None]  # (1, 1, S, S): value j is the one-hot vector j
    weights = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    return weights[0, 0] > 0  # (T, S)


def causal_alignment(T: int = 3, S: int = 7) -> tuple[Figure, dict[str, object]]:
    """Top-left against bottom-right causal masks for T queries and S keys.

    Returns the figure and ``{"top_left": ..., "bottom_right": ...}``, the
    two ``(T, S)`` bool masks drawn (True = may attend), with ``"layout"``,
    the two panels one above the other (:func:`~mha_book.viz.layout.figure_layout`).
    The top panel numbers its queries 0 to T - 1; the bottom one by their
    positions S - T to S - 1, the positions a KV cache gives them.

    Example:
        >>> fig, masks = causal_alignment(3, 7)
        >>> masks["bottom_right"].sum().item(), masks["top_left"].sum().item()
        (18, 6)
    """
    masks = {"top_left": torch_is_causal_mask(T, S), "bottom_right": causal_mask(T, S)}
    titles = {
        "top_left": pick(
            "左上对齐：PyTorch 的 is_causal=True", "top left: PyTorch's is_causal=True"
        ),
        "bottom_right": pick(
            "右下对齐：causal_mask，KV 缓存所需",
            "bottom right: causal_mask, for a KV cache",
        ),
    }
    fig = new_figure(figsize=(5.0, 1.3 + 1.05 * T * 2 * 0.45))
    axes = fig.subplots(2, 1)
    for ax, (name, mask) in zip(axes, masks.items()):
        draw_bool_grid(ax, mask)
        ax.set_title(titles[name])
        ax.set_xlabel(pick("键 j", "key j"))
        ax.set_ylabel(pick("查询 i", "query i"))
    bottom = axes[1]  # its queries are the last T positions: label them so
    bottom.set_yticks(range(T), [str(S - T + i) for i in range(T)])
    bottom.set_ylabel(pick("查询位置", "query position"))
    return fig, {**masks, "layout": record_layout(fig, rows=len(masks), columns=1)}


def kv_head_sharing(
    num_heads: int = 8, num_kv_heads: Sequence[int] = (8, 2, 1)
) -> tuple[Figure, dict[int | str, object]]:
    """Lines from each query head to the key/value head it reads.

    The mapping is computed by :func:`~mha_book.attention.heads.repeat_kv` on the kv
    heads' own indices, the code the module runs before attending.

    Returns the figure and ``{num_kv_heads: [kv head of query head 0, 1, ...]}``
    for each count drawn, and ``"layout"``: one row of heads per count
    (:func:`~mha_book.viz.layout.figure_layout`).

    Example:
        >>> fig, reads = kv_head_sharing(4, (4, 2, 1))
        >>> reads[4], reads[2], reads[1]
        ([0, 1, 2, 3], [0, 0, 1, 1], [0, 0, 0, 0])
        >>> reads["layout"]
        {'rows': 3, 'columns': 1, 'direction': None}
    """
    H = check_positive_int(num_heads, "num_heads")
    reads = {}
    for hkv in check_positive_ints(num_kv_heads, "num_kv_heads"):
        if hkv > H or H % hkv:
            raise ValueError(f"num_kv_heads must divide num_heads = {H}, got {hkv}")
        index = torch.arange(hkv).view(1, hkv, 1, 1)  # (B=1, Hkv, S=1, D=1)
        reads[hkv] = repeat_kv(index, H // hkv).flatten().tolist()  # (H,)
    fig = new_figure(figsize=(4.4, 1.55 * len(reads)))
    axes = fig.subplots(len(reads), 1, squeeze=False)[:, 0]
    for ax, (hkv, kv_of) in zip(axes, reads.items()):
        name = "MHA" if hkv == H else "MQA" if hkv == 1 else "GQA"
        colours = [f"C{k % 10}" for k in range(hkv)]
        kv_x = [(k + 0.5) * H / hkv - 0.5 for k in range(hkv)]  # centred under groups
        for h, k in enumerate(kv_of):
            ax.plot([h, kv_x[k]], [1, 0], color=colours[k], lw=1.5, zorder=1)
            ax.text(
                h,
                1,
                f"q{h}",
                ha="center",
                va="center",
                zorder=2,
                bbox={"boxstyle": "round", "fc": "white", "ec": colours[k]},
            )
        for k in range(hkv):
            ax.text(
                kv_x[k],
                0,
                f"kv{k}",
                ha="center",
                va="center",
                color="white",
                zorder=2,
                bbox={"boxstyle": "round", "fc": colours[k], "ec": colours[k]},
            )
        ax.set_title(
            pick(
                f"{name}：{H} 个查询头，{hkv} 个键/值头",
                f"{name}: {H} query heads, {hkv} key/value head{'s' * (hkv > 1)}",
            ),
        )
        ax.set_xlim(-0.7, H - 0.3)
        ax.set_ylim(-0.45, 1.45)
        ax.set_axis_off()
    reads["layout"] = record_layout(fig, rows=len(axes), columns=1)
    return fig, reads


def kv_cache_growth(module, x: torch.Tensor) -> tuple[Figure, dict[str, object]]:
    """Decode ``x`` one token at a time and draw the cache after every step.

    Runs ``module.forward_step`` on each token of ``x`` with a fresh
    :class:`~mha_book.attention.kv_cache.KVCache` and records ``cache.keys.shape``
    after each step; row ``t`` of the figure shows the ``t + 1`` cached
    positions, the newest one marked, labelled with that shape.

    Args:
        module: A :class:`~mha_book.attention.mha.MultiHeadAttention` (eval mode).
        x: The tokens, ``(B, T, E)`` (batch first).

    Returns:
        The figure and a dict of facts, with ``"shapes"``, the T recorded key shapes
        ``(B, Hkv, t + 1, D)``, and ``"layout"``, one chart
        (:func:`~mha_book.viz.layout.figure_layout`).

    Example:
        >>> from mha_book.attention.mha import MultiHeadAttention
        >>> mha = MultiHeadAttention(16, 4, num_kv_heads=2).eval()
        >>> fig, growth = kv_cache_growth(mha, torch.randn(1, 3, 16))
        >>> growth["shapes"]
        [(1, 2, 1, 4), (1, 2, 2, 4), (1, 2, 3, 4)]
    """
    from matplotlib.patches import Rectangle

    if not isinstance(module, MultiHeadAttention):
        raise TypeError(
            f"module must be a mha_book.MultiHeadAttention, got {type(module).__name__}"
        )
    check_rank(check_tensor(x, "x"), "x", 3, "(B, T, E)")
    cache, shapes = KVCache(), []
    with torch.no_grad():
        for t in range(x.shape[1]):
            module.forward_step(x[:, t : t + 1], cache)  # appends token t's k, v
            assert cache.keys is not None  # forward_step filled it
            shapes.append(tuple(cache.keys.shape))  # (B, Hkv, t + 1, D)
    T = len(shapes)
    fig = new_figure(figsize=(5.0, 0.9 + 0.42 * T))
    ax = fig.subplots()
    for t, shape in enumerate(shapes):
        y = T - 1 - t
        for j in range(t + 1):
            newest = j == t
            ax.add_patch(
                Rectangle(
                    (j, y + 0.1), 0.9, 0.8, fc="C1" if newest else "C0", ec="none"
                )
            )
        ax.text(T + 0.2, y + 0.5, str(shape), va="center")
    ax.set_xlim(0, T + 0.2 + 0.2 * len(str(shapes[-1])))
    ax.set_ylim(0, T)
    ax.set_yticks([T - 0.5 - t for t in range(T)], [str(t) for t in range(T)])
    ax.set_xticks([j + 0.45 for j in range(T)], [str(j) for j in range(T)])
    ax.set_ylabel(pick("步 t", "step t"))
    ax.set_xlabel(
        pick(
            "缓存的位置（橙色：本步新增）", "cached positions (orange: added this step)"
        ),
    )
    ax.set_title(
        pick("每步之后 cache.keys 的形状", "cache.keys.shape after each step"),
    )
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig, {"shapes": shapes, "layout": record_layout(fig, rows=1, columns=1)}
