"""Scaled dot-product attention as a picture of its matrices and their numbers.

Chapter 02-scaled-dot-product draws it: Q times K transposed gives the
scores, they are divided by sqrt(D), a softmax over each row gives the
weights, and the weights times V give the output, every entry printed. The
weights and the output are the ones
:func:`~mha_book.attention.scaled_dot_product.scaled_dot_product_attention` returns.

Legend: T query length, S key length, D query/key size, Dv value size.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from mha_book._checks import check_rank, fmt_shape
from mha_book.attention.scaled_dot_product import (
    _check_qkv,
    scaled_dot_product_attention,
)
from mha_book.book import pick
from mha_book.viz.diagrams._draw import draw_number_grid
from mha_book.viz.layout import record_layout
from mha_book.viz.plot import new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["attention_matrices"]

#: Largest T, S, D or Dv whose matrices still fit a phone's width with numbers.
MAX_SIZE = 4
#: Width, height of one number's cell in data units.
CELL = (1.2, 0.62)
#: The widest row, in data units: drawn 5 inches wide, a row this wide leaves
#: each cell wide enough that a 12 pt "-1.33" keeps a visible gap to its
#: neighbours (T = S = 3, D = 2 fills it).
MAX_ROW_WIDTH = 9 * CELL[0]
#: The rows drawn: matrices joined by the operations between them. The second
#: row goes on from the scores that end the first.
ROWS = (
    ("Q", "×", "K^T", "=", "scores"),
    ("÷√D", "scaled", "softmax", "weights"),
    ("weights", "×", "V", "=", "output"),
)


def attention_matrices(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> tuple[Figure, dict[str, object]]:
    """Every matrix of ``softmax(Q K^T / sqrt(D)) V``, drawn with its numbers.

    The weights and the output come from
    :func:`~mha_book.attention.scaled_dot_product.scaled_dot_product_attention`; the scores
    ``Q K^T`` and the scaled scores are computed beside it.

    Shape:
        - q: ``(T, D)``, k: ``(S, D)``, v: ``(S, Dv)``, each size at most 4,
          and ``D + 2 S <= 8``, ``S + 2 Dv <= 8``, ``S <= 3`` (a row of the
          figure must fit a phone's width)
        - facts: ``{"Q", "K^T", "scores", "scaled", "weights", "V", "output"}``,
          ``scores``, ``scaled``, ``weights``: ``(T, S)``, ``output``: ``(T, Dv)``;
          and ``"layout"``: three rows of three, two and three matrices
          (:func:`~mha_book.viz.layout.figure_layout`)

    Example:
        >>> q, k, v = torch.randn(3, 2), torch.randn(3, 2), torch.randn(3, 2)
        >>> fig, m = attention_matrices(q, k, v)
        >>> m["weights"].shape, m["output"].shape
        (torch.Size([3, 3]), torch.Size([3, 2]))
        >>> m["layout"]
        {'rows': 3, 'columns': 3, 'direction': None}
    """
    _check_qkv(q, k, v, None, 0.0, None)
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_rank(x, name, 2, "(T, D)" if name == "q" else "(S, D)")
        if max(x.shape) > MAX_SIZE:
            raise ValueError(
                f"{name} must be at most {MAX_SIZE} x {MAX_SIZE} to be drawn with "
                f"its numbers, got shape {fmt_shape(x.shape)}"
            )
    output, weights = scaled_dot_product_attention(q, k, v)  # (T, Dv), (T, S)
    scores = q @ k.T  # (T, S)
    facts = {
        "Q": q,
        "K^T": k.T,  # (D, S)
        "scores": scores,
        "scaled": scores / math.sqrt(q.shape[-1]),  # (T, S)
        "weights": weights,
        "V": v,
        "output": output,
    }
    rows = _rows(q.shape[-1])
    for row in rows:
        if _row_width(facts, row) > MAX_ROW_WIDTH + 1e-9:
            cells = " ".join(
                f"{i} {fmt_shape(facts[i].shape)}" if i in facts else i for i in row
            )
            raise ValueError(
                f"q, k, v too large to draw with legible numbers: the row {cells} "
                f"is {_row_width(facts, row) / CELL[0]:g} cell widths wide with its signs, at most "
                f"{MAX_ROW_WIDTH / CELL[0]:g} (q {fmt_shape(q.shape)}, "
                f"k {fmt_shape(k.shape)}, v {fmt_shape(v.shape)})"
            )
    fig = _draw(facts, rows)
    per_row = [sum(item in facts for item in row) for row in ROWS]  # matrices
    layout = record_layout(fig, rows=len(ROWS), columns=max(per_row))
    return fig, {**facts, "layout": layout}


def _rows(D: int) -> list[list[str]]:
    """:data:`ROWS` with the scale written out: ``÷√2`` for ``D = 2``."""
    return [[f"÷√{D}" if item == "÷√D" else item for item in row] for row in ROWS]


def _row_width(facts, row) -> float:
    return sum(_width(facts, item) for item in row)


def _draw(facts: dict[str, torch.Tensor], rows: list[list[str]]) -> Figure:
    """Three rows of matrices joined by the operations between them."""
    titles = {
        "Q": "Q",
        "K^T": "Kᵀ",
        "scores": pick("分数 QKᵀ", "scores QKᵀ"),
        "scaled": pick("缩放后", "scaled"),
        "weights": pick("权重", "weights"),
        "V": "V",
        "output": pick("输出", "output"),
    }
    width = max(_row_width(facts, row) for row in rows)
    height = sum(_height(facts, row) for row in rows)
    w, h = CELL
    fig = new_figure(figsize=(5.0, 5.0 * height / width + 0.2))
    ax = fig.subplots()
    y = 0.0
    for row in rows:
        x, tall = 0.0, max(facts[i].shape[0] for i in row if i in facts)
        top = y + 0.75  # room for the titles
        for item in row:
            if item in facts:
                m = facts[item]
                y0 = top + (tall - m.shape[0]) * h / 2  # centred in the row
                draw_number_grid(ax, m, x=x, y=y0, cell=CELL, shade=True)
                ax.text(
                    x + m.shape[1] * w / 2,
                    y0 - 0.12,
                    titles[item],
                    ha="center",
                    va="bottom",
                )
            else:
                ax.text(
                    x + _width(facts, item) / 2,
                    top + tall * h / 2,
                    item,
                    ha="center",
                    va="center",
                )
            x += _width(facts, item)
        y += _height(facts, row)
    ax.set(xlim=(-0.05, width + 0.05), ylim=(y, -0.05), aspect="equal")
    ax.set_axis_off()
    return fig


def _width(facts, item) -> float:
    """Width of a matrix (its columns) or of an operation between two."""
    if item in facts:
        return facts[item].shape[1] * CELL[0]
    return 0.4 + 0.2 * len(item)


def _height(facts, row) -> float:
    """Height of a row: its tallest matrix, plus room for the titles."""
    return max(facts[i].shape[0] for i in row if i in facts) * CELL[1] + 1.0
