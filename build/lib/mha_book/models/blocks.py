"""The two pieces every Transformer layer repeats, written once.

Taught in chapter 06-applications; used by :class:`~mha_book.models.layers.EncoderLayer`,
:class:`~mha_book.models.layers.DecoderLayer`, :class:`DecoderOnlyBlock` (below, the
block of chapter 10's causal decoder) and :class:`~mha_book.models.bert.BertLayer`.

- :func:`feed_forward`: the position-wise network
  ``linear2(dropout(activation(linear1(x))))``, the same for every token
  (nanoGPT's ``MLP``).
- :func:`residual`: a sublayer wrapped in a residual connection and a
  LayerNorm, before the sublayer (pre-norm) or after the sum (post-norm), as
  the Annotated Transformer's ``SublayerConnection``.

They are functions over the layer's own modules, not modules: the layers keep
PyTorch's attribute names (``linear1``, ``norm1``, ``dropout1``, ...), so
weights copy to and from ``nn.TransformerEncoderLayer`` by name.

Legend: B batch, T length, E = embed_dim, F = ff_dim.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import torch
from torch import nn

from mha_book._checks import check_positive_int, check_rank, check_tensor, fmt_shape
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.rope import RotaryEmbedding

__all__ = ["feed_forward", "residual", "DecoderOnlyBlock"]


class FactoryKwargs(TypedDict):
    """``device`` and ``dtype`` of a layer's parameters, passed on to its parts."""

    device: torch.device | str | int | None
    dtype: torch.dtype | None


def feed_forward(
    x: torch.Tensor,
    linear1: nn.Linear,
    linear2: nn.Linear,
    activation: Callable[[torch.Tensor], torch.Tensor],
    dropout: nn.Module | None = None,
) -> torch.Tensor:
    """The position-wise feed-forward network: expand, activate, project back.

    Shape:
        - x: ``(B, T, E)``
        - output: ``(B, T, E)``, through ``(B, T, F)``

    Example:
        >>> up, down = nn.Linear(8, 32), nn.Linear(32, 8)
        >>> feed_forward(torch.randn(2, 5, 8), up, down, torch.relu).shape
        torch.Size([2, 5, 8])
    """
    h = activation(linear1(x))  # (B, T, F)
    if dropout is not None:
        h = dropout(h)
    return linear2(h)  # (B, T, E)


def residual(
    x: torch.Tensor,
    sublayer: Callable[[torch.Tensor], torch.Tensor | tuple[torch.Tensor, Any]],
    norm: nn.Module,
    dropout: nn.Module | None = None,
    *,
    norm_first: bool,
) -> tuple[torch.Tensor, Any]:
    """``x`` plus a sublayer of ``x``, with its LayerNorm where the layer wants it.

    Pre-norm (``norm_first=True``): ``x + dropout(sublayer(norm(x)))``, so the
    residual path is a plain sum. Post-norm: ``norm(x + dropout(sublayer(x)))``,
    as in the original Transformer and BERT.

    Args:
        x: The layer's running representation.
        sublayer: Maps the (normalised) input to an output of the same shape,
            or to ``(output, extra)``; ``extra`` (attention weights) is passed on.
        norm: The sublayer's LayerNorm.
        dropout: Applied to the sublayer's output before the sum; None for none.
        norm_first: Pre-norm if True, post-norm if False.

    Shape:
        - x: ``(B, T, E)``
        - output: ``(B, T, E)``

    Returns:
        ``(x, extra)``, ``extra`` None for a sublayer that returns a tensor.

    Example:
        >>> norm, ff = nn.LayerNorm(8), nn.Linear(8, 8)
        >>> y, extra = residual(torch.randn(2, 5, 8), ff, norm, norm_first=True)
        >>> y.shape, extra
        (torch.Size([2, 5, 8]), None)
    """
    out = sublayer(norm(x) if norm_first else x)
    out, extra = out if isinstance(out, tuple) else (out, None)
    x = x + (out if dropout is None else dropout(out))  # (B, T, E)
    return (x if norm_first else norm(x)), extra


class DecoderOnlyBlock(nn.Module):
    """One pre-norm decoder-only block: causal self-attention, then a GELU MLP.

    Args:
        embed_dim: Model dimension E.
        num_heads: Number of heads H; must divide E.
        ff_dim: Hidden size of the feed-forward network (usually 4·E).
        dropout: Dropout on the attention weights and on each sublayer's output.
        rope: Rotary positions for the attention (:mod:`mha_book.attention.rope`), or None.
        device: Device of the parameters.
        dtype: Dtype of the parameters.

    Example:
        >>> block = DecoderOnlyBlock(32, 4, 128)
        >>> x = torch.randn(2, 6, 32)
        >>> from mha_book.attention.masks import causal_mask
        >>> y, w = block(x, causal_mask(6), need_weights=True)
        >>> y.shape, w.shape
        (torch.Size([2, 6, 32]), torch.Size([2, 4, 6, 6]))
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        ff_dim: int,
        *,
        dropout: float = 0.0,
        rope: RotaryEmbedding | None = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        check_positive_int(ff_dim, "ff_dim")
        factory: FactoryKwargs = {"device": device, "dtype": dtype}
        self.norm1 = nn.LayerNorm(embed_dim, **factory)
        self.self_attn = MultiHeadAttention(
            embed_dim, num_heads, dropout=dropout, rope=rope, **factory
        )
        self.norm2 = nn.LayerNorm(embed_dim, **factory)
        self.linear1 = nn.Linear(embed_dim, ff_dim, **factory)  # E -> ff_dim
        self.linear2 = nn.Linear(ff_dim, embed_dim, **factory)  # ff_dim -> E
        self.dropout = nn.Dropout(dropout)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor,
        need_weights: bool = False,
        bias: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Run the block.

        Args:
            x: Input sequence.
            mask: Bool mask, True = may attend, e.g. ``causal_mask(T)``.
            need_weights: Return the attention weights (explicit kernel) or
                ``None`` (PyTorch's fused kernel, faster for training).
            bias: Optional float bias added to the scores, e.g. ALiBi's
                ``alibi_bias(H, T)[None]`` (:mod:`mha_book.attention.alibi`).

        Shape:
            - x: ``(B, T, E)``
            - mask: broadcastable to ``(B, H, T, T)``
            - bias: broadcastable to ``(B, H, T, T)``, like ``mask``
            - output: ``(B, T, E)``
            - weights: ``(B, H, T, T)`` or None

        Returns:
            ``(output, weights)``.
        """

        _check_block_input(x, self.self_attn.embed_dim, self.norm1.weight.dtype)

        def self_attention(h):
            return self.self_attn(h, h, h, mask, need_weights=need_weights, bias=bias)

        def mlp(h):
            return feed_forward(h, self.linear1, self.linear2, nn.functional.gelu)

        # pre-norm: LayerNorm before each sublayer, the residual path a plain sum
        x, weights = residual(
            x, self_attention, self.norm1, self.dropout, norm_first=True
        )
        x, _ = residual(x, mlp, self.norm2, self.dropout, norm_first=True)
        return x, weights  # (B, T, E), (B, H, T, T) or None

    def forward_step(
        self,
        x: torch.Tensor,
        kv_cache: KVCache,
        bias: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Run the block on new tokens, its attention reading and filling ``kv_cache``.

        As :meth:`forward` with a causal mask, through
        :meth:`~mha_book.attention.mha.MultiHeadAttention.forward_step`.

        Shape:
            - x: ``(B, T, E)``, the new tokens
            - bias: ``(T, S)`` or 4-D over the cache's keys, or None
            - output: ``(B, T, E)``
        """
        _check_block_input(x, self.self_attn.embed_dim, self.norm1.weight.dtype)

        def self_attention(h):
            return self.self_attn.forward_step(
                h, kv_cache, need_weights=False, bias=bias
            )

        x, _ = residual(x, self_attention, self.norm1, self.dropout, norm_first=True)
        h = self.norm2(x)  # the MLP sublayer as in forward
        h = feed_forward(h, self.linear1, self.linear2, nn.functional.gelu)
        return x + self.dropout(h)  # (B, T, E)


def _check_block_input(x: object, embed_dim: int, dtype: torch.dtype) -> None:
    """Raise unless ``x`` is a ``(B, T, E)`` tensor of the block's dtype."""
    x = check_tensor(x, "x")
    check_rank(x, "x", 3, f"(B, T, {embed_dim})")
    if x.shape[-1] != embed_dim:
        raise ValueError(
            f"x must have shape (B, T, E) with E = {embed_dim}, got {fmt_shape(x.shape)}"
        )
    if x.dtype != dtype:
        raise TypeError(f"x must have the block's dtype {dtype}, got {x.dtype}")
