"""Input validation of :class:`~mha_book.attention.mha.MultiHeadAttention`.

The module checks everything once, on entry, in either layout
(``batch_first`` or not), and then calls its kernel with ``validate=False``.
Every message names the argument and says expected vs actual; the shared
pieces (tensor, rank, dtype, masks) live in :mod:`mha_book._checks`.

Legend: B batch, H heads, T query length, S key length, E = H·D.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mha_book._checks import (
    check_positive_int,
    check_rank,
    check_same_dtype_device,
    check_tensor,
    fmt_shape,
)
from mha_book.attention._mask_checks import check_bias, check_key_mask, check_mask
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.rope import RotaryEmbedding

if TYPE_CHECKING:
    from mha_book.attention.mha import MultiHeadAttention

__all__ = [
    "check_forward_inputs",
    "check_head_counts",
    "check_rope",
    "check_step_inputs",
]


def check_head_counts(
    embed_dim: object, num_heads: object, num_kv_heads: object
) -> tuple[int, int]:
    """``(head_dim, num_kv_heads)``: D = E / H, and Hkv (H when None).

    H must divide E and Hkv must divide H; a message names both numbers.

    Example:
        >>> check_head_counts(512, 8, None), check_head_counts(512, 8, 2)
        ((64, 8), (64, 2))
    """
    embed_dim = check_positive_int(embed_dim, "embed_dim")
    num_heads = check_positive_int(num_heads, "num_heads")
    if embed_dim % num_heads != 0:
        raise ValueError(
            "embed_dim must be divisible by num_heads, "
            f"got embed_dim = {embed_dim} "
            f"and num_heads = {num_heads}"
        )
    if num_kv_heads is None:
        return embed_dim // num_heads, num_heads
    num_kv_heads = check_positive_int(num_kv_heads, "num_kv_heads")
    if num_heads % num_kv_heads != 0:
        raise ValueError(
            f"num_kv_heads must divide num_heads, got num_heads = {num_heads} "
            f"and num_kv_heads = {num_kv_heads}"
        )
    return embed_dim // num_heads, num_kv_heads


def check_need_weights(need_weights: object) -> None:
    """Raise ``TypeError`` unless ``need_weights`` is a bool."""
    if not isinstance(need_weights, bool):
        raise TypeError(
            f"need_weights must be a bool, got {type(need_weights).__name__}"
        )


def check_rope(rope: object, head_dim: int) -> RotaryEmbedding | None:
    """``rope`` must be None or a ``RotaryEmbedding`` for heads of ``head_dim``."""
    if rope is not None and not isinstance(rope, RotaryEmbedding):
        raise TypeError(
            f"rope must be a mha_book.RotaryEmbedding or None, got {type(rope).__name__}"
        )
    if rope is not None and rope.head_dim != head_dim:
        raise ValueError(
            f"rope must have the module's head_dim = embed_dim / num_heads = "
            f"{head_dim}, got RotaryEmbedding(head_dim={rope.head_dim})"
        )
    return rope


def _check_features(mha, name: str, x: object, dim: int, length: str) -> None:
    """``x`` must be a 3-D tensor with ``dim`` features, in the module's layout."""
    x = check_tensor(x, name)
    symbols = f"(B, {length}, {dim})" if mha.batch_first else f"({length}, B, {dim})"
    check_rank(x, name, 3, symbols)
    if x.shape[-1] != dim:
        raise ValueError(f"{name} must have shape {symbols}, got {fmt_shape(x.shape)}")


def _check_masks(mha, mask, key_mask, B: int, T: int, S: int, device, source: str):
    if mask is not None:
        target = (B, mha.num_heads, T, S)
        check_mask(mask, target, device=device, key_mask_arg=True)
    if key_mask is not None:
        check_key_mask(key_mask, B, S, device=device, source=source)


def _check_bias(mha, bias, x, x_name: str, B: int, T: int, S: int) -> None:
    """An additive bias: float like ``x``, finite, broadcastable to ``(B, H, T, S)``."""
    if bias is not None:
        check_bias(bias, (B, mha.num_heads, T, S), x, x_name)


def check_forward_inputs(
    mha: MultiHeadAttention, query, key, value, mask, key_mask, need_weights, bias=None
) -> tuple[int, int, int]:
    """Validate the inputs of ``forward``; return ``(B, T, S)``."""
    b, t = (0, 1) if mha.batch_first else (1, 0)  # positions of B and of T / S
    _check_features(mha, "query", query, mha.embed_dim, "T")
    _check_features(mha, "key", key, mha.kdim, "S")
    _check_features(mha, "value", value, mha.vdim, "S")
    check_same_dtype_device(
        "the module's parameters", mha.q_proj.weight, "query", query
    )
    check_same_dtype_device("query", query, "key", key)
    check_same_dtype_device("query", query, "value", value)
    B, T, S = query.shape[b], query.shape[t], key.shape[t]
    for name, x in (("key", key), ("value", value)):
        if (x.shape[b], x.shape[t]) != (B, S):
            expected = [0, 0, x.shape[-1]]
            expected[b], expected[t] = B, S
            symbols = "(B, S, F)" if mha.batch_first else "(S, B, F)"
            raise ValueError(
                f"{name} must have shape {symbols} = {fmt_shape(expected)} "
                f"(B from query, S from key), got {fmt_shape(x.shape)}"
            )
    if mha.rope is not None and S != T:  # RoPE places q and k on one axis
        raise ValueError(
            f"key must have the length of query when the module has rope "
            f"(self-attention), got T = {T} and S = {S}; a cross-attention "
            "layer is built without rope"
        )
    source = "B from query, S from key"
    _check_masks(mha, mask, key_mask, B, T, S, query.device, source)
    _check_bias(mha, bias, query, "query", B, T, S)
    check_need_weights(need_weights)
    return B, T, S


def check_step_inputs(
    mha: MultiHeadAttention, x, kv_cache, mask, key_mask, need_weights, bias=None
) -> int:
    """Validate the inputs of ``forward_step``; return the cached length."""
    if not isinstance(kv_cache, KVCache):
        raise TypeError(
            f"kv_cache must be a mha_book.KVCache, got {type(kv_cache).__name__}"
        )
    if (mha.kdim, mha.vdim) != (mha.embed_dim, mha.embed_dim):
        raise ValueError(
            f"forward_step is self-attention and needs kdim == vdim == embed_dim, "
            f"got kdim = {mha.kdim}, vdim = {mha.vdim}, embed_dim = {mha.embed_dim}"
        )
    _check_features(mha, "x", x, mha.embed_dim, "T")
    check_same_dtype_device("the module's parameters", mha.q_proj.weight, "x", x)
    check_need_weights(need_weights)
    B, T = (x.shape[0], x.shape[1]) if mha.batch_first else (x.shape[1], x.shape[0])
    kv_cache.check_layer(mha.rope)
    kv_cache.claim(mha)  # one cache per layer
    past = kv_cache.seq_len
    cached = kv_cache.keys  # not None once past > 0
    if past and cached is not None and cached.shape[0] != B:
        raise ValueError(
            f"x must have the batch size of kv_cache ({cached.shape[0]}), got {B}"
        )
    if not kv_cache.accepts_masks:
        for name, given in (("mask", mask), ("key_mask", key_mask), ("bias", bias)):
            if given is not None:
                raise ValueError(
                    f"{name} must be None with a {type(kv_cache).__name__}: it makes "
                    f"its own mask over the keys it keeps, got a {type(given).__name__}"
                )
    source = "B from x, S = cached + new keys"
    _check_masks(mha, mask, key_mask, B, T, past + T, x.device, source)
    _check_bias(mha, bias, x, "x", B, T, past + T)
    return past
