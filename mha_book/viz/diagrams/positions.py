"""Diagrams of rotary positions (RoPE) and ALiBi's biases, drawn from the real code.

Chapter 14-positions draws both.

Legend: H heads, T query length, S key length, D head dim, R rotated features.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from mha_book._checks import check_positive_int
from mha_book.attention.alibi import alibi_bias, alibi_slopes
from mha_book.attention.rope import apply_rotary, rotary_frequencies
from mha_book.book import pick
from mha_book.viz.layout import record_layout
from mha_book.viz.plot import new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["rotary_rotation", "alibi_heads"]


def rotary_rotation(
    head_dim: int = 8, positions: int = 6, pairs: tuple[int, ...] = (0, 1)
) -> tuple[Figure, dict[str, object]]:
    """One query vector rotated by :func:`~mha_book.attention.rope.apply_rotary` at each position.

    The vector ``(1, 0)`` is placed in every feature pair (pair ``i`` is
    features ``i`` and ``i + D/2``, the ``rotate_half`` layout), rotated at
    positions ``0 .. positions - 1``, and each pair drawn as arrows in its own
    plane. A panel labels every arrow with its position, or none when two of
    its arrows are less than 0.3 radians apart (the labels would overlap); the
    colours match across panels. The angles are read back from the rotated
    vectors with ``atan2``.

    Args:
        head_dim: Head dim D (even).
        positions: Number of positions drawn (at most 12).
        pairs: Which feature pairs to draw, one panel each.

    Shape:
        - facts["angles"]: ``(positions, len(pairs))`` radians in ``[0, 2π)``
        - facts["theta"]: ``(len(pairs),)``, the pairs' frequencies
        - facts["labelled"]: ``len(pairs)`` bools, whether a panel's arrows
          are labelled
        - facts["layout"]: one row of ``len(pairs)`` panels

    Returns:
        The figure and a dict of facts, with ``"angles"`` measured from the rotated vectors,
        ``"theta"`` from :func:`~mha_book.attention.rope.rotary_frequencies`,
        ``"norms"``, the length of every drawn arrow, ``"labelled"`` and
        ``"layout"`` (:func:`~mha_book.viz.layout.figure_layout`).

    Example:
        >>> fig, facts = rotary_rotation(head_dim=8, positions=3, pairs=(0,))
        >>> facts["angles"][:, 0].tolist()  # pair 0 turns 1 radian per position
        [0.0, 1.0, 2.0]
        >>> facts["labelled"]  # 1 radian apart: room for a label on each arrow
        [True]
    """
    D = check_positive_int(head_dim, "head_dim")
    n = check_positive_int(positions, "positions")
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence):
        raise TypeError(f"pairs must be a sequence of ints, got {type(pairs).__name__}")
    pairs = tuple(check_positive_int(p, "pairs", allow_zero=True) for p in pairs)
    if n > 12 or not pairs or any(not 0 <= p < D // 2 for p in pairs):
        raise ValueError(
            f"positions must be at most 12 and pairs in [0, D/2) = [0, {D // 2}), "
            f"got positions = {n} and pairs = {pairs}"
        )
    half = D // 2
    q = torch.zeros(1, 1, 1, D, dtype=torch.float64)  # (B, H, T, D) for one token
    q[..., :half] = 1.0  # every pair starts as (1, 0)
    q = q.expand(1, 1, n, D)  # (1, 1, T, D): the same vector at each position
    rotated = apply_rotary(q, torch.arange(n))[0, 0]  # (T, D)
    cols = list(pairs)
    x, y = rotated[:, cols], rotated[:, [half + p for p in cols]]  # (T, P) each
    angles = torch.atan2(y, x) % (2 * math.pi)  # (T, P)
    theta = rotary_frequencies(D)[cols]  # (P,), float64

    # about 2 inches a panel: at a phone's width the labels stay legible
    fig = new_figure(figsize=(2.0 * len(cols) + 0.3, 2.4))
    colours = [f"C{i % 10}" for i in range(n)]
    labelled = [_apart(angles[:, k], 0.3) for k in range(len(cols))]
    for k, ax in enumerate(fig.subplots(1, len(cols), squeeze=False)[0]):
        ax.add_patch(_unit_circle())
        for t in range(n):
            ax.annotate(
                "",
                xy=(float(x[t, k]), float(y[t, k])),
                xytext=(0, 0),
                arrowprops=dict(arrowstyle="-|>", color=colours[t], lw=1.8),
            )
            if not labelled[k]:
                continue  # all or none: the colours match the labelled panel
            ax.text(
                1.25 * float(x[t, k]),
                1.25 * float(y[t, k]),
                f"m={t}",
                ha="center",
                va="center",
                color=colours[t],
            )
        ax.set_xlim(-1.55, 1.55)
        ax.set_ylim(-1.55, 1.55)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        label = pick("特征对", "pair")
        ax.set_title(f"{label} {cols[k]}: θ = {float(theta[k]):.3g}")
    norms = torch.sqrt(x**2 + y**2)  # (T, P): a rotation keeps lengths
    layout = record_layout(fig, rows=1, columns=len(cols))
    facts = {"angles": angles, "theta": theta, "norms": norms, "labelled": labelled}
    return fig, {**facts, "layout": layout}


def _apart(angles: torch.Tensor, gap: float) -> bool:
    """Whether every two of ``angles`` (radians, shape ``(T,)``) are ``gap`` apart."""
    diff = (angles[:, None] - angles[None, :]).abs() % (2 * math.pi)  # (T, T)
    around = torch.minimum(diff, 2 * math.pi - diff)  # the shorter way round
    off_diagonal = ~torch.eye(len(angles), dtype=torch.bool)  # (T, T)
    return bool((around[off_diagonal] >= gap).all())


def _unit_circle():
    from matplotlib.patches import Circle

    return Circle((0, 0), 1.0, fill=False, ls=":", ec="0.6")


def alibi_heads(num_heads: int = 8, T: int = 12) -> tuple[Figure, dict[str, object]]:
    """ALiBi's bias ``-slope_h · (i - j)`` of every head, drawn as a heatmap per head.

    The cells a causal mask blocks (``j > i``) are left blank; the colour
    scale is shared by all heads, so a steep head is dark a few keys back and
    a gentle one stays light across the whole row.

    Args:
        num_heads: Number of heads H (at most 16).
        T: Sequence length (queries and keys, at most 32).

    Shape:
        - facts["bias"]: ``(H, T, T)``, from :func:`~mha_book.attention.alibi.alibi_bias`
        - facts["slopes"]: ``(H,)``, from :func:`~mha_book.attention.alibi.alibi_slopes`
        - facts["layout"]: ``ceil(H / 2)`` rows of at most two heads

    Returns:
        The figure and a dict with ``"bias"``, ``"slopes"`` and ``"layout"``
        (:func:`~mha_book.viz.layout.figure_layout`).

    Example:
        >>> fig, facts = alibi_heads(4, 5)
        >>> facts["slopes"].tolist()
        [0.25, 0.0625, 0.015625, 0.00390625]
        >>> facts["bias"][0, 4].tolist()  # head 0, the last query
        [-1.0, -0.75, -0.5, -0.25, 0.0]
    """
    H = check_positive_int(num_heads, "num_heads")
    T = check_positive_int(T, "T")
    if H > 16 or T > 32:
        raise ValueError(
            "num_heads and T must be small enough to draw (H <= 16, T <= 32), "
            f"got {H} and {T}"
        )
    bias = alibi_bias(H, T, dtype=torch.float64)  # (H, T, T)
    slopes = alibi_slopes(H, dtype=torch.float64)  # (H,)
    blocked = torch.ones(T, T, dtype=torch.bool).triu(1)  # (T, T): j > i
    shown = bias.masked_fill(blocked, float("nan"))  # blank above the diagonal

    cols = min(H, 2)  # two panels a row: at a phone's width the text stays legible
    rows = math.ceil(H / cols)
    fig = new_figure(figsize=(1.8 * cols + 0.8, 1.9 * rows + 0.4))
    axes = fig.subplots(rows, cols, squeeze=False)
    lo = float(bias.masked_select(~blocked).min())
    image = None
    for h, ax in enumerate(axes.flat):
        if h >= H:
            ax.set_axis_off()
            continue
        image = ax.imshow(shown[h].numpy(), cmap="Blues_r", vmin=lo, vmax=0.0)
        ax.set_title(f"{pick('头', 'head')} {h}\nm = 1/{1 / float(slopes[h]):g}")
        ax.set_xticks([0, T - 1])
        ax.set_yticks([0, T - 1])
    assert image is not None  # H >= 1: the first panel drew it
    fig.colorbar(image, ax=axes, shrink=0.6, label=pick("偏置", "bias"))
    fig.supxlabel(pick("键的位置 j", "key position j"))
    fig.supylabel(pick("查询的位置 i", "query position i"))
    layout = record_layout(fig, rows=rows, columns=cols)
    return fig, {"bias": bias, "slopes": slopes, "layout": layout}
