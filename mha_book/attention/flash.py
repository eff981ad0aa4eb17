"""Tiled attention with an online softmax: FlashAttention's algorithm in plain PyTorch.

Taught in chapter 12-flash-attention. Legend: B batch, H heads, T query length,
S key length, D head dim, Dv value dim; ``...`` are leading dims, usually
``(B, H)``. A tile is a block of ``bq`` queries against a block of ``bk`` keys.

:func:`flash_attention` gives the output of
:func:`~mha_book.attention.scaled_dot_product.scaled_dot_product_attention`
without ever holding the ``(..., T, S)`` scores: it walks over ``(..., bq, bk)``
tiles and keeps three running statistics per query row (Dao et al., 2022):

- ``m``: the largest score seen so far,
- ``l``: the sum of ``exp(score - m)`` over the keys seen so far,
- ``acc``: the sum of ``exp(score - m) * v`` over the same keys.

When a new tile raises the maximum from ``m`` to ``m_new``, the old ``l`` and
``acc`` are rescaled by ``exp(m - m_new)``; after the last tile the output row
is ``acc / l``. :func:`online_softmax_update` is that one step.

The backward pass does not store the weights either: it keeps the log-sum-exp
``m + log(l)`` of every row (``O(T)`` numbers) and recomputes each tile of
weights from it, as FlashAttention does.

Masks are bool, True = may attend, broadcastable to ``(..., T, S)``; they are
sliced tile by tile, and so is an additive float ``bias``, added to each tile
of scores before the mask in the forward and the backward pass (its gradient,
when asked for, is each tile's score gradient). Fully masked rows give zeros
(``l == 0``), with zero gradients, never NaN.

With float16 or bfloat16 inputs the tiles, statistics and accumulators are
float32, as in FlashAttention (summing hundreds of tiles in half precision
would lose digits at every step); only the results are rounded to the input
dtype.
"""

from __future__ import annotations

import math

import torch
from torch.autograd.function import once_differentiable

from mha_book.attention._flash_checks import check_block_size as _check_block_size
from mha_book.attention._flash_checks import check_online_state
from mha_book.attention.scaled_dot_product import _check_qkv

__all__ = ["flash_attention", "online_softmax_update"]

NEG_INF = float("-inf")
HALF = (torch.float16, torch.bfloat16)


def _acc_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype the statistics and accumulators are kept in: float32 for halves."""
    return torch.float32 if dtype in HALF else dtype


def online_softmax_update(
    m: torch.Tensor,
    l: torch.Tensor,
    acc: torch.Tensor,
    scores: torch.Tensor,
    v: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Fold one tile of scores and values into the running statistics.

    Start from ``m = -inf``, ``l = 0``, ``acc = 0``; after the last key block,
    ``acc / l`` equals ``softmax(all scores) @ all values`` row by row. Masked
    scores are ``-inf`` and contribute nothing; a row that has seen only
    ``-inf`` keeps ``m = -inf`` and ``l = 0``.

    Args:
        m: Running maximum of the scores seen so far.
        l: Running sum of ``exp(score - m)``.
        acc: Running sum of ``exp(score - m) * v``.
        scores: The new tile of (scaled, masked) scores.
        v: The values of the new key block.

    Shape:
        - m, l: ``(..., bq)``
        - acc: ``(..., bq, Dv)``
        - scores: ``(..., bq, bk)``
        - v: ``(..., bk, Dv)``
        - output: ``(m, l, acc)`` with the same shapes as the inputs

    Returns:
        The updated ``(m, l, acc)``; the inputs are not modified.

    Example:
        >>> s, v = torch.randn(3, 8), torch.randn(8, 5)  # 3 query rows, 8 keys
        >>> m, l, acc = (
        ...     torch.full((3,), float("-inf")), torch.zeros(3), torch.zeros(3, 5)
        ... )
        >>> for j in range(0, 8, 4):  # two key blocks of 4
        ...     m, l, acc = online_softmax_update(m, l, acc, s[:, j:j + 4], v[j:j + 4])
        >>> m.shape, l.shape, acc.shape
        (torch.Size([3]), torch.Size([3]), torch.Size([3, 5]))
        >>> torch.allclose(acc / l[:, None], torch.softmax(s, -1) @ v, atol=1e-6)
        True
    """
    check_online_state(m, l, acc, scores, v)
    m_new = torch.maximum(m, scores.amax(dim=-1))  # (..., bq)
    # A row with no finite score yet has m_new = -inf; shifting by 0 instead
    # avoids -inf - (-inf) = NaN and still gives exp(-inf) = 0.
    shift = m_new.masked_fill(m_new == NEG_INF, 0.0)  # (..., bq)
    p = torch.exp(scores - shift[..., None])  # (..., bq, bk): unnormalised weights
    alpha = torch.exp(m - shift)  # (..., bq): rescales the sums under the old max
    l = alpha * l + p.sum(dim=-1)  # (..., bq)
    acc = alpha[..., None] * acc + p @ v  # (..., bq, Dv)
    return m_new, l, acc


def _blocks(n: int, size: int):
    """``(start, stop)`` of consecutive blocks of ``size`` covering ``range(n)``."""
    return [(i, min(i + size, n)) for i in range(0, n, size)]


def _scores_tile(qi, kj, mask, bias, rows, cols):
    """Scaled, biased scores of one tile with masked entries at -inf: (..., bq, bk)."""
    s = qi @ kj.transpose(-2, -1)  # (..., bq, bk), qi is already scaled
    if bias is not None:  # in the accumulator dtype, like the scores
        s += bias[..., rows[0] : rows[1], cols[0] : cols[1]].to(s.dtype)
    if mask is not None:
        s.masked_fill_(~mask[..., rows[0] : rows[1], cols[0] : cols[1]], NEG_INF)
    return s


def _forward(q, k, v, mask, scale, bq, bk, on_tile=None, bias=None):
    """Tiled forward pass: output (..., T, Dv) and float32-or-wider log-sum-exp.

    ``on_tile(rows, cols, s, m, l)``, if given, is called after each tile with
    the tile's scores and the running statistics it left (chapter 12's diagram
    of the tiles, :func:`mha_book.viz.diagrams.online_softmax_tiles`, records them).
    """
    T, S, Dv = q.shape[-2], k.shape[-2], v.shape[-1]
    acc_dtype = _acc_dtype(q.dtype)
    out = q.new_empty(*q.shape[:-1], Dv)  # (..., T, Dv), the input dtype
    lse = q.new_empty(q.shape[:-1], dtype=acc_dtype)  # (..., T)
    for rows in _blocks(T, bq):
        qi = q[..., rows[0] : rows[1], :].to(acc_dtype) * scale  # (..., bq, D)
        m = qi.new_full(qi.shape[:-1], NEG_INF)  # (..., bq)
        l = qi.new_zeros(qi.shape[:-1])  # (..., bq)
        acc = qi.new_zeros(*qi.shape[:-1], Dv)  # (..., bq, Dv)
        for cols in _blocks(S, bk):
            kj = k[..., cols[0] : cols[1], :].to(acc_dtype)  # (..., bk, D)
            vj = v[..., cols[0] : cols[1], :].to(acc_dtype)  # (..., bk, Dv)
            s = _scores_tile(qi, kj, mask, bias, rows, cols)  # (..., bq, bk)
            m, l, acc = online_softmax_update(m, l, acc, s, vj)
            if on_tile is not None:
                on_tile(rows, cols, s, m, l)
        empty = l == 0  # (..., bq): fully masked rows
        out[..., rows[0] : rows[1], :] = (
            acc / l.masked_fill(empty, 1.0)[..., None]
        ).to(out.dtype)  # (..., bq, Dv), rounded once at the end
        lse[..., rows[0] : rows[1]] = (m + torch.log(l)).masked_fill(empty, 0.0)
    return out, lse


def _weights_tile(qi, kj, vj, do_i, lse_i, mask, bias, rows, cols):
    """One tile's weights ``P`` and their gradient ``dP``, recomputed: (..., bq, bk) each."""
    s = _scores_tile(qi, kj, mask, bias, rows, cols)  # (..., bq, bk)
    p = torch.exp(s - lse_i[..., None])  # (..., bq, bk): P = exp(S - L)
    dp = do_i @ vj.transpose(-2, -1)  # (..., bq, bk): dP = dO V^T
    return p, dp


def _backward(q, k, v, mask, bias, scale, lse, dout, bq, bk, bias_grad=False):
    """Tiled backward pass: recompute each tile of weights from the log-sum-exp.

    Each query block sweeps its key blocks twice: once to sum ``delta =
    rowsum(P * dP)``, once for ``dS = P * (dP - delta)`` and the gradients.
    Returns ``dq, dk, dv`` and ``dbias`` ``(..., T, S)`` (None unless ``bias_grad``).
    """
    acc_dtype = lse.dtype  # float32 for half inputs: so are the accumulators
    dq, dk, dv = (torch.zeros_like(x, dtype=acc_dtype) for x in (q, k, v))
    dbias = torch.zeros_like(bias, dtype=acc_dtype) if bias_grad else None
    dout = dout.to(acc_dtype)
    for rows in _blocks(q.shape[-2], bq):
        r = slice(*rows)
        qi = q[..., r, :].to(acc_dtype) * scale  # (..., bq, D)
        do_i, lse_i = dout[..., r, :], lse[..., r]  # (..., bq, Dv), (..., bq)
        # Sweep 1: delta = rowsum(P * dP). In exact arithmetic it is rowsum(dO * O),
        # FlashAttention's formula, which needs no sweep; but summed from the same
        # dP tiles as dS, it makes dP - delta exactly 0 where a row attends to one
        # key (P = 1): that row then passes exactly no gradient to q and k, as in
        # PyTorch's softmax backward, not the rounding noise of another product.
        delta = torch.zeros_like(lse_i)  # (..., bq)
        for cols in _blocks(k.shape[-2], bk):
            c = slice(*cols)
            kj = k[..., c, :].to(acc_dtype)  # (..., bk, D)
            vj = v[..., c, :].to(acc_dtype)  # (..., bk, Dv)
            p, dp = _weights_tile(qi, kj, vj, do_i, lse_i, mask, bias, rows, cols)
            delta += (p * dp).sum(dim=-1)  # (..., bq)
        # Sweep 2: the softmax backward rule, tile by tile.
        for cols in _blocks(k.shape[-2], bk):
            c = slice(*cols)
            kj = k[..., c, :].to(acc_dtype)  # (..., bk, D)
            vj = v[..., c, :].to(acc_dtype)  # (..., bk, Dv)
            p, dp = _weights_tile(qi, kj, vj, do_i, lse_i, mask, bias, rows, cols)
            dv[..., c, :] += p.transpose(-2, -1) @ do_i  # (..., bk, Dv)
            ds = p * (dp - delta[..., None])  # (..., bq, bk): softmax backward
            if dbias is not None:  # the bias enters the scores with weight 1
                dbias[..., r, c] = ds  # (..., bq, bk)
            dq[..., r, :] += (ds @ kj) * scale  # (..., bq, D)
            dk[..., c, :] += ds.transpose(-2, -1) @ qi  # (..., bk, D); qi is scaled
    dbias = None if dbias is None else dbias.to(bias.dtype)
    return dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), dbias


class _FlashAttention(torch.autograd.Function):
    """Autograd wrapper: saves O(T) statistics instead of the (T, S) weights."""

    @staticmethod
    def forward(ctx, q, k, v, mask, bias, scale, bq, bk):
        out, lse = _forward(q, k, v, mask, scale, bq, bk, bias=bias)
        ctx.save_for_backward(q, k, v, mask, bias, lse)  # not the (T, S) weights
        ctx.scale, ctx.bq, ctx.bk = scale, bq, bk
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, dout):
        q, k, v, mask, bias, lse = ctx.saved_tensors
        bias_grad = ctx.needs_input_grad[4]
        dq, dk, dv, dbias = _backward(
            q, k, v, mask, bias, ctx.scale, lse, dout, ctx.bq, ctx.bk, bias_grad
        )
        return dq, dk, dv, None, dbias, None, None, None


def flash_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    bias: torch.Tensor | None = None,
    block_size: int | tuple[int, int] = 128,
    scale: float | None = None,
) -> torch.Tensor:
    """Attention output computed tile by tile with an online softmax.

    Same result as ``scaled_dot_product_attention(q, k, v, mask)[0]`` (up to
    rounding) and the same gradients, but the memory it needs beyond its
    inputs and output is ``O(bq·bk)`` for the tiles plus ``O(T)`` statistics,
    instead of the ``O(T·S)`` scores and weights. It returns no weights: they
    never exist as a whole.

    Args:
        q: Queries.
        k: Keys.
        v: Values.
        mask: Optional bool mask, True = may attend, broadcastable to
            ``(..., T, S)``; it is read one tile at a time.
        bias: Optional finite float bias added to the scaled scores before
            the mask (e.g. ALiBi), read one tile at a time. Its gradient, if
            it requires one, is formed as a whole ``(..., T, S)`` tensor.
        block_size: Tile size: ``bq = bk = block_size``, or a pair
            ``(bq, bk)``. Blocks need not divide T or S; the last one is shorter.
        scale: Factor applied to ``q @ k^T``; default ``1 / sqrt(D)``.

    Shape:
        - q: ``(..., T, D)``
        - k: ``(..., S, D)``
        - v: ``(..., S, Dv)``
        - mask, bias: broadcastable to ``(..., T, S)``
        - output: ``(..., T, Dv)``, leading dims broadcast as in the reference

    Returns:
        The attention output; fully masked query rows are 0.

    Raises:
        TypeError: On a non-tensor input, mismatched dtypes, a non-bool mask
            or a non-float bias.
        ValueError: On mismatched shapes or devices, a bias with NaN or inf,
            or a bad ``block_size``.

    Example:
        >>> q = torch.randn(2, 8, 100, 64)
        >>> k = torch.randn(2, 8, 70, 64)
        >>> v = torch.randn(2, 8, 70, 32)
        >>> out = flash_attention(q, k, v, block_size=32)  # 4 x 3 tiles of <= 32 x 32
        >>> out.shape
        torch.Size([2, 8, 100, 32])
        >>> from mha_book.attention.scaled_dot_product import scaled_dot_product_attention
        >>> torch.allclose(out, scaled_dot_product_attention(q, k, v)[0], atol=1e-6)
        True
    """
    target = _check_qkv(q, k, v, mask, 0.0, scale, bias)  # (..., T, S)
    bq, bk = _check_block_size(block_size)
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else float(scale)
    *lead, T, S = target
    q = q.expand(*lead, T, q.shape[-1])  # (..., T, D), a view
    k = k.expand(*lead, S, k.shape[-1])  # (..., S, D)
    v = v.expand(*lead, S, v.shape[-1])  # (..., S, Dv)
    if mask is not None:
        mask = mask.expand(target)  # (..., T, S), a view: nothing is copied
    if bias is not None:  # a view too; autograd sums its gradient back to the shape
        bias = bias.expand(target)  # (..., T, S)
    return _FlashAttention.apply(q, k, v, mask, bias, scale, bq, bk)  # (..., T, Dv)
