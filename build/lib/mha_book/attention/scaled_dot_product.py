"""Scaled dot-product attention, written out step by step.

Taught in chapter 02-scaled-dot-product; chapter 04-implementation uses the
fused variant, chapter 07-troubleshooting explains fully masked rows.

Legend: B batch, H heads, T query length, S key length, D head dim, Dv value
dim, E = H·D. Leading dimensions ``...`` are usually ``(B, H)``.

Mask convention (one for the whole package): a ``torch.bool`` tensor where
True means "this query may attend to this key", as in
:func:`torch.nn.functional.scaled_dot_product_attention`.

An additive ``bias`` (float, finite, broadcastable to ``(..., T, S)``, such
as ALiBi's, :mod:`mha_book.attention.alibi`) is added to the scaled scores before the
mask: ``scores = q·kᵀ·scale + bias``. It only shifts scores; blocking a key
is the mask's job.

Fully masked rows (a query with no allowed key) are defined as zeros: their
output row, their weights row and every gradient flowing through them are 0,
never NaN.

Dropout is controlled by ``dropout_p`` alone: the functions are pure and apply
dropout whenever ``dropout_p > 0``. A module passes ``dropout_p=0.0`` when it is
in eval mode (see :class:`mha_book.attention.mha.MultiHeadAttention`).
"""

from __future__ import annotations

import math
import numbers

import torch
import torch.nn.functional as F

from mha_book._checks import (
    check_probability,
    check_rank,
    check_same_dtype_device,
    check_tensor,
    fmt_shape,
)
from mha_book.attention._mask_checks import check_bias, check_mask

__all__ = ["scaled_dot_product_attention", "fused_attention"]


def _check_qkv(q, k, v, mask, dropout_p, scale, bias=None) -> tuple[int, ...]:
    """Validate the kernel inputs; return the shape of the scores ``(..., T, S)``."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_tensor(x, name)
        check_rank(
            x, name, 2, "(..., T, D)" if name == "q" else "(..., S, D)", at_least=True
        )
    if not q.is_floating_point():
        raise TypeError(f"q must have a floating-point dtype, got {q.dtype}")
    check_same_dtype_device("q", q, "k", k)
    check_same_dtype_device("q", q, "v", v)
    if q.shape[-1] == 0:  # the default scale is 1 / sqrt(D)
        raise ValueError(
            "q must have a head dim D >= 1 as its last dim, "
            f"got shape {fmt_shape(q.shape)}"
        )
    if k.shape[-1] != q.shape[-1]:
        raise ValueError(
            f"k must have the head dim D of q ({q.shape[-1]}) as its last dim, "
            f"got k of shape {fmt_shape(k.shape)}"
        )
    if v.shape[-2] != k.shape[-2]:
        raise ValueError(
            f"v must have the key length S of k ({k.shape[-2]}) "
            "as its second-to-last dim, "
            f"got v of shape {fmt_shape(v.shape)}"
        )
    lead = q.shape[:-2]
    try:
        if not lead == k.shape[:-2] == v.shape[:-2]:
            lead = torch.broadcast_shapes(lead, k.shape[:-2], v.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"leading dims of q {fmt_shape(q.shape)}, k {fmt_shape(k.shape)} and "
            f"v {fmt_shape(v.shape)} do not broadcast"
        ) from None
    target = (*lead, q.shape[-2], k.shape[-2])
    if mask is not None:
        check_mask(mask, target, device=q.device)
    if bias is not None:
        check_bias(bias, target, q)
    check_probability(dropout_p, "dropout_p")
    if scale is not None and (
        isinstance(scale, bool) or not isinstance(scale, numbers.Real)
    ):
        raise TypeError(f"scale must be a float or None, got {type(scale).__name__}")
    if scale is not None and not math.isfinite(scale):
        # nan or inf would turn every output into NaN
        raise ValueError(f"scale must be a finite number or None, got {scale}")
    return target


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    bias: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    scale: float | None = None,
    validate: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Attention weights and output, computed explicitly.

    .. math:: \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{D}} + \mathrm{bias}\right) V

    Args:
        q: Queries.
        k: Keys.
        v: Values.
        mask: Optional bool mask, True = may attend. Must broadcast to the
            scores ``(..., T, S)``, e.g. ``(T, S)`` from :func:`causal_mask`
            or ``(B, 1, 1, S)`` from :func:`padding_mask`.
        bias: Optional finite float bias added to the scaled scores before
            the mask, e.g. :func:`~mha_book.attention.alibi.alibi_bias`; same dtype and
            device as ``q``, same shape rule as ``mask``.
        dropout_p: Dropout probability on the weights, in ``[0, 1)``. Dropout
            is applied whenever it is positive; pass 0 in evaluation.
        scale: Factor applied to ``q @ k^T``; default ``1 / sqrt(D)``.
        validate: Check the arguments first. Callers that have checked them
            already, like :class:`~mha_book.attention.mha.MultiHeadAttention`, pass
            False to save the time on every call.

    Shape:
        - q: ``(..., T, D)``
        - k: ``(..., S, D)``
        - v: ``(..., S, Dv)``
        - mask, bias: broadcastable to ``(..., T, S)``
        - output: ``(..., T, Dv)``
        - weights: ``(..., T, S)``

    Returns:
        ``(output, weights)``. The weights are the ones used to compute the
        output (after dropout, if any). In a row with at least one allowed key
        they sum to 1 when ``dropout_p == 0``; in a fully masked row the weights
        and the output are 0.

    Raises:
        TypeError: On a non-tensor input, mismatched dtypes, a non-bool mask
            or a non-float bias.
        ValueError: On mismatched shapes or devices, ``dropout_p`` outside
            ``[0, 1)`` or a bias with NaN or inf.

    Example:
        >>> q = torch.randn(2, 8, 10, 64)
        >>> k = torch.randn(2, 8, 12, 64)
        >>> v = torch.randn(2, 8, 12, 32)
        >>> out, w = scaled_dot_product_attention(q, k, v)
        >>> out.shape, w.shape
        (torch.Size([2, 8, 10, 32]), torch.Size([2, 8, 10, 12]))
    """
    if validate:
        _check_qkv(q, k, v, mask, dropout_p, scale, bias)
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else float(scale)

    # --- 1. scores: how well each query matches each key ---
    # Scale q (T·D numbers), not the scores (T·S): one pass either way, over
    # fewer numbers whenever S > D, the usual case.
    scores = (q * scale) @ k.transpose(-2, -1)  # (..., T, S)
    if bias is not None:  # an additive bias (e.g. ALiBi) shifts the scores
        if scores.dtype in (torch.float16, torch.bfloat16):
            # In half precision the sum can pass float16's range (-20000 plus a
            # bias of -60000 is -inf, and a row of -inf makes softmax NaN):
            # add, and take the softmax, in float32, as PyTorch's kernels do.
            scores = scores.float()  # (..., T, S)
        scores = scores + bias  # (..., T, S)

    # --- 2. mask: blocked keys get -inf, so softmax gives them weight 0 ---
    empty = None
    if mask is not None:
        scores.masked_fill_(
            ~mask, float("-inf")
        )  # (..., T, S), in place: scores is ours
        empty = ~mask.any(dim=-1, keepdim=True)  # (..., T, 1): rows with no allowed key
        if empty.any():
            # A row of -inf gives softmax 0/0 = NaN: make it finite here and zero
            # its weights after the softmax, so values and gradients stay finite.
            scores.masked_fill_(empty, 0.0)  # (..., T, S)
        else:
            empty = None

    # --- 3. softmax over the keys ---
    if scores.requires_grad:
        weights = torch.softmax(scores, dim=-1)  # (..., T, S)
    else:  # no autograd: reuse the scores' memory instead of allocating another (T, S)
        weights = torch.softmax(scores, dim=-1, out=scores)  # (..., T, S)
    if empty is not None:
        weights = weights.masked_fill(empty, 0.0)  # (..., T, S): fully masked rows -> 0

    weights = weights.to(q.dtype)  # (..., T, S): back to the inputs' dtype

    # --- 4. dropout on the weights (only when dropout_p > 0) ---
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p, training=True)  # (..., T, S)

    # --- 5. weighted sum of the values ---
    output = weights @ v  # (..., T, Dv)
    return output, weights


def fused_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    bias: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    scale: float | None = None,
    validate: bool = True,
) -> torch.Tensor:
    """Same output as :func:`scaled_dot_product_attention`, via PyTorch's fused kernel.

    Calls :func:`torch.nn.functional.scaled_dot_product_attention`, which never
    materialises the weights. Fully masked rows are zeroed explicitly (and
    their gradients with them), whatever the installed PyTorch version does.

    Args:
        q: Queries.
        k: Keys.
        v: Values.
        mask: Optional bool mask, True = may attend, broadcastable to ``(..., T, S)``.
        bias: Optional finite float bias added to the scaled scores, as in
            :func:`scaled_dot_product_attention`; it joins the mask in the one
            float ``attn_mask`` PyTorch's kernel takes.
        dropout_p: Dropout probability on the weights; applied when positive.
        scale: Factor applied to ``q @ k^T``; default ``1 / sqrt(D)``.
        validate: Check the arguments first. Callers that have checked them
            already, like :class:`~mha_book.attention.mha.MultiHeadAttention`, pass
            False to save the time on every call.

    Shape:
        - q: ``(..., T, D)``, k: ``(..., S, D)``, v: ``(..., S, Dv)``
        - output: ``(..., T, Dv)``

    Returns:
        The attention output.

    Example:
        >>> q = torch.randn(2, 8, 10, 64)  # T = 10
        >>> k = torch.randn(2, 8, 12, 64)  # S = 12
        >>> v = torch.randn(2, 8, 12, 64)
        >>> mask = torch.ones(10, 12, dtype=torch.bool).tril(diagonal=2)  # causal
        >>> fused_attention(q, k, v, mask).shape
        torch.Size([2, 8, 10, 64])
    """
    if validate:
        _check_qkv(q, k, v, mask, dropout_p, scale, bias)
    empty = None
    if mask is not None:
        if (
            mask.dim() < 2
        ):  # PyTorch's kernel wants at least (T, S); (S,) broadcasts to it
            mask = mask.expand(q.size(-2), k.size(-2))  # (T, S)
        empty = ~mask.any(dim=-1, keepdim=True)  # (..., T, 1)
        if empty.any():
            mask = mask | empty  # (..., T, S) let empty rows attend anywhere: finite
        else:
            empty = None
    if bias is not None:
        mask = _bias_with_mask(bias, mask, q.size(-2), k.size(-2))  # float (..., T, S)
    output = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale
    )  # (..., T, Dv)
    if empty is not None:
        output = output.masked_fill(empty, 0.0)  # (..., T, Dv) fully masked rows -> 0
    return output


def _bias_with_mask(
    bias: torch.Tensor, mask: torch.Tensor | None, T: int, S: int
) -> torch.Tensor:
    """One float ``attn_mask`` for PyTorch's kernel: ``bias`` where ``mask`` allows,
    ``-inf`` where it blocks. Fully masked rows arrive already opened (zeroed later).
    """
    if bias.dim() < 2:  # as for the mask: the kernel wants at least (T, S)
        bias = bias.expand(T, S)  # (T, S)
    if mask is None:
        return bias
    return torch.where(mask, bias, float("-inf"))  # (..., T, S)
