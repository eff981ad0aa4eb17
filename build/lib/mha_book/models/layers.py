"""Transformer encoder and decoder layers built around MultiHeadAttention.

Taught in chapter 06-applications: where multi-head attention sits inside a
Transformer. An encoder layer uses it once (self-attention); a decoder layer
uses it twice (causal self-attention, then cross-attention to the encoder's
output). All three calls are the same module; only the mask and the source of
the keys and values differ.

Legend: B batch, H heads, T query (target) length, S key (source) length,
D head dim, E = H·D (``embed_dim``). Masks are bool, True = may attend,
broadcastable to ``(B, H, T, S)``.

The sublayers follow :class:`torch.nn.TransformerEncoderLayer` and
:class:`torch.nn.TransformerDecoderLayer` (ReLU feed-forward, same attribute
names ``self_attn``, ``linear1``, ``linear2``, ``norm1``, ...), so weights can
be copied across one to one.
"""

from __future__ import annotations

import torch
from torch import nn

from mha_book._checks import (
    check_positive_int,
    check_probability,
    check_rank,
    check_same_dtype_device,
    check_tensor,
    fmt_shape,
)
from mha_book.attention._mask_checks import check_mask
from mha_book.attention.masks import causal_mask
from mha_book.attention.mha import MultiHeadAttention
from mha_book.models.blocks import FactoryKwargs, feed_forward, residual

__all__ = ["EncoderLayer", "DecoderLayer"]


def _check_sequence(x: object, name: str, embed_dim: int, length: str) -> torch.Tensor:
    """Raise unless ``x`` is a ``(B, length, E)`` tensor; return it."""
    x = check_tensor(x, name)
    symbols = f"(B, {length}, E) = (B, {length}, {embed_dim})"
    check_rank(x, name, 3, symbols)
    if x.shape[-1] != embed_dim:
        raise ValueError(f"{name} must have shape {symbols}, got {fmt_shape(x.shape)}")
    return x


class _Layer(nn.Module):
    """What both layers build, in ``nn.TransformerEncoderLayer``'s order (the same
    seed draws the same weights): the attention blocks, the feed-forward
    network, a LayerNorm and a dropout per sublayer. A layer names its
    attention blocks in ``ATTENTIONS``."""

    ATTENTIONS: tuple[str, ...] = ()
    # what every layer has, built by __init__ (setattr, one of each per sublayer)
    self_attn: MultiHeadAttention
    norm1: nn.LayerNorm
    norm2: nn.LayerNorm
    dropout1: nn.Dropout
    dropout2: nn.Dropout

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        ff_dim: int,
        *,
        dropout: float = 0.0,
        norm_first: bool = False,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        factory: FactoryKwargs = {"device": device, "dtype": dtype}
        attentions = self.ATTENTIONS
        self.embed_dim = check_positive_int(embed_dim, "embed_dim")
        self.ff_dim = check_positive_int(ff_dim, "ff_dim")
        dropout = check_probability(dropout, "dropout")
        if not isinstance(norm_first, bool):
            raise TypeError(
                f"norm_first must be a bool, got {type(norm_first).__name__}"
            )
        self.norm_first = norm_first
        for name in attentions:  # self_attn, then a decoder's cross_attn
            mha = MultiHeadAttention(embed_dim, num_heads, dropout=dropout, **factory)
            setattr(self, name, mha)
        self.linear1 = nn.Linear(embed_dim, ff_dim, **factory)  # E -> ff_dim
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(ff_dim, embed_dim, **factory)  # ff_dim -> E
        sublayers = range(1, len(attentions) + 2)  # each attention, then the FFN
        for i in sublayers:
            setattr(self, f"norm{i}", nn.LayerNorm(embed_dim, **factory))
        for i in sublayers:
            setattr(self, f"dropout{i}", nn.Dropout(dropout))

    def _ff_block(self, x: torch.Tensor) -> torch.Tensor:
        """Position-wise feed-forward network, the same for every token."""
        return feed_forward(x, self.linear1, self.linear2, torch.relu, self.dropout)


class EncoderLayer(_Layer):
    """One Transformer encoder layer: self-attention, then a feed-forward network.

    Each of the two sublayers is wrapped in a residual connection and a
    LayerNorm. Post-norm (the original Transformer, ``norm_first=False``)::

        x = norm1(x + dropout1(self_attn(x, x, x)))
        x = norm2(x + dropout2(feed_forward(x)))

    Pre-norm (``norm_first=True``, as in GPT-2 and ViT)::

        x = x + dropout1(self_attn(norm1(x), ...))
        x = x + dropout2(feed_forward(norm2(x)))

    The feed-forward network is ``linear2(dropout(relu(linear1(x))))``.

    Args:
        embed_dim: Model dimension E.
        num_heads: Number of heads H; must divide E.
        ff_dim: Hidden size of the feed-forward network (often 4·E).
        dropout: Dropout probability on the attention weights, inside the
            feed-forward network and on each sublayer's output (training mode only).
        norm_first: If True, apply LayerNorm before each sublayer (pre-norm).
        device: Device of the parameters.
        dtype: Dtype of the parameters.

    Example:
        >>> layer = EncoderLayer(64, 4, 256)
        >>> x = torch.randn(2, 10, 64)
        >>> y, w = layer(x)
        >>> y.shape, w.shape
        (torch.Size([2, 10, 64]), torch.Size([2, 4, 10, 10]))
    """

    ATTENTIONS = ("self_attn",)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Run the layer.

        Args:
            x: Input sequence.
            mask: Optional bool mask, True = may attend, broadcastable to
                ``(B, H, T, T)``; e.g. :func:`mha_book.attention.masks.padding_mask`.

        Shape:
            - x: ``(B, T, E)``
            - output: ``(B, T, E)``
            - weights: ``(B, H, T, T)``

        Returns:
            ``(output, weights)``: the new sequence and the self-attention weights.

        Raises:
            TypeError: If ``x`` is not a tensor, or its dtype differs from the
                parameters'.
            ValueError: If ``x`` is not ``(B, T, E)`` or the mask does not broadcast.
        """
        _check_sequence(x, "x", self.embed_dim, "T")
        check_same_dtype_device("the layer's parameters", self.linear1.weight, "x", x)
        pre = self.norm_first  # LayerNorm before each sublayer, or after each sum

        def self_attention(h):
            return self.self_attn(h, h, h, mask)  # (B, T, E), (B, H, T, T)

        x, weights = residual(
            x, self_attention, self.norm1, self.dropout1, norm_first=pre
        )
        x, _ = residual(x, self._ff_block, self.norm2, self.dropout2, norm_first=pre)
        return x, weights


class DecoderLayer(_Layer):
    """One Transformer decoder layer: self-attention, cross-attention, feed-forward.

    Multi-head attention appears twice:

    - ``self_attn``: queries, keys and values all come from the decoder input
      ``x``; a causal mask stops position ``t`` from seeing positions after ``t``.
    - ``cross_attn`` (encoder-decoder attention): queries come from the
      decoder, keys and values from the encoder output ``memory``.

    Post-norm (``norm_first=False``)::

        x = norm1(x + dropout1(self_attn(x, x, x, causal & self_mask)))
        x = norm2(x + dropout2(cross_attn(x, memory, memory, memory_mask)))
        x = norm3(x + dropout3(feed_forward(x)))

    Pre-norm (``norm_first=True``) applies ``norm1/2/3`` to the input of each
    sublayer instead, as in :class:`EncoderLayer`.

    Args:
        embed_dim: Model dimension E, of both the decoder input and ``memory``.
        num_heads: Number of heads H of both attention blocks; must divide E.
        ff_dim: Hidden size of the feed-forward network (often 4·E).
        dropout: Dropout probability (attention weights, feed-forward, sublayer
            outputs).
        norm_first: If True, apply LayerNorm before each sublayer (pre-norm).
        device: Device of the parameters.
        dtype: Dtype of the parameters.

    Example:
        >>> layer = DecoderLayer(64, 4, 256)
        >>> x, memory = torch.randn(2, 5, 64), torch.randn(2, 7, 64)
        >>> y, self_w, cross_w = layer(x, memory)
        >>> y.shape, self_w.shape, cross_w.shape
        (torch.Size([2, 5, 64]), torch.Size([2, 4, 5, 5]), torch.Size([2, 4, 5, 7]))
    """

    ATTENTIONS = ("self_attn", "cross_attn")
    cross_attn: MultiHeadAttention  # and a third sublayer: built by _Layer.__init__
    norm3: nn.LayerNorm
    dropout3: nn.Dropout

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Run the layer.

        The causal mask is always applied to the self-attention; ``self_mask``
        can only hide more keys (it is combined with ``&``).

        Args:
            x: Decoder input (the target sequence so far).
            memory: Encoder output (the source sequence).
            self_mask: Optional bool mask for the self-attention, True = may
                attend, broadcastable to ``(B, H, T, T)``, e.g. target padding.
            memory_mask: Optional bool mask for the cross-attention, True = may
                attend, broadcastable to ``(B, H, T, S)``, e.g.
                ``padding_mask(source_lengths, S)``.

        Shape:
            - x: ``(B, T, E)``
            - memory: ``(B, S, E)``
            - output: ``(B, T, E)``
            - self_weights: ``(B, H, T, T)``, zero above the diagonal
            - cross_weights: ``(B, H, T, S)``

        Returns:
            ``(output, self_weights, cross_weights)``.

        Raises:
            TypeError: If an input is not a tensor, or its dtype differs from the
                parameters'.
            ValueError: If ``x`` is not ``(B, T, E)``, ``memory`` not ``(B, S, E)``
                with the batch size of ``x``, or a mask does not broadcast.
        """
        _check_sequence(x, "x", self.embed_dim, "T")
        _check_sequence(memory, "memory", self.embed_dim, "S")
        if memory.shape[0] != x.shape[0]:
            raise ValueError(
                f"memory must have the batch size B of x ({x.shape[0]}), "
                f"got memory of shape {fmt_shape(memory.shape)}"
            )
        check_same_dtype_device("the layer's parameters", self.linear1.weight, "x", x)
        check_same_dtype_device("x", x, "memory", memory)
        B, T = x.shape[:2]
        S, H = memory.shape[1], self.self_attn.num_heads
        causal = causal_mask(T, device=x.device)  # (T, T)
        # Checked here, not only by the attention: self_mask joins the causal
        # mask first, and an error names the argument the caller passed.
        if self_mask is not None:
            check_mask(self_mask, (B, H, T, T), device=x.device, name="self_mask")
            causal = causal & self_mask  # (B, H, T, T) or a broadcastable shape
        if memory_mask is not None:
            check_mask(memory_mask, (B, H, T, S), device=x.device, name="memory_mask")
        pre = self.norm_first

        def self_attention(h):
            return self.self_attn(h, h, h, causal)  # (B, T, E), (B, H, T, T)

        def cross_attention(h):  # queries from the decoder, keys and values from memory
            return self.cross_attn(h, memory, memory, memory_mask)  # (B, H, T, S)

        x, self_weights = residual(
            x, self_attention, self.norm1, self.dropout1, norm_first=pre
        )
        x, cross_weights = residual(
            x, cross_attention, self.norm2, self.dropout2, norm_first=pre
        )
        x, _ = residual(x, self._ff_block, self.norm3, self.dropout3, norm_first=pre)
        return x, self_weights, cross_weights
