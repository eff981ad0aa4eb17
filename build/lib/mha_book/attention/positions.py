"""Where am I? Position encodings added to token embeddings.

Taught in chapter 10-decoder-char-lm (the decoder can use learned or
sinusoidal absolute positions). Attention itself does not see the order of
its inputs; a model adds positions to the token embeddings so that it can.
(Rotary positions, which rotate queries and keys instead: :mod:`mha_book.attention.rope`.)

Legend: B batch, T sequence length, E = embed_dim.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from mha_book._checks import (
    check_positive_int,
    check_rank,
    check_same_dtype_device,
    check_tensor,
    fmt_shape,
)

__all__ = ["LearnedPositions", "sinusoidal_positions"]


def sinusoidal_positions(
    max_len: int, embed_dim: int, *, device=None, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    r"""The fixed position encodings of the original Transformer.

    .. math::

        PE_{p, 2i} = \sin(p / 10000^{2i/E}), \quad
        PE_{p, 2i+1} = \cos(p / 10000^{2i/E})

    Args:
        max_len: Number of positions.
        embed_dim: Model dimension E; must be even.
        device: Device of the result.
        dtype: Dtype of the result.

    Shape:
        - output: ``(max_len, E)``

    Returns:
        The table; row ``p`` is added to the embedding of the token at position ``p``.

    Example:
        >>> sinusoidal_positions(16, 8).shape
        torch.Size([16, 8])
    """
    check_positive_int(max_len, "max_len")
    check_positive_int(embed_dim, "embed_dim")
    if embed_dim % 2:
        raise ValueError(
            f"embed_dim must be even for sinusoidal positions, got {embed_dim}"
        )
    position = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    freq = torch.exp(
        torch.arange(0, embed_dim, 2, dtype=torch.float64)
        * (-math.log(10000.0) / embed_dim)
    )  # (E/2,)
    table = torch.empty(max_len, embed_dim, dtype=torch.float64)
    table[:, 0::2] = torch.sin(position * freq)  # (max_len, E/2)
    table[:, 1::2] = torch.cos(position * freq)  # (max_len, E/2)
    return table.to(device=device, dtype=dtype)


class LearnedPositions(nn.Module):
    """A trained ``(max_len, E)`` table of positions, added to the embeddings (GPT-2).

    Row ``p`` is learned for position ``p`` only, so the table cannot
    extrapolate: a sequence longer than ``max_len`` is an error, never a
    silent wrap. ``offset`` places the T tokens at ``offset .. offset + T - 1``,
    for cached decoding where earlier tokens came in earlier calls.

    Args:
        max_len: Number of positions the table holds.
        embed_dim: Model dimension E.
        device: Device of the table.
        dtype: Dtype of the table.

    Shape:
        - x: ``(B, T, E)``, with ``offset + T <= max_len``
        - output: ``(B, T, E)``

    Example:
        >>> pos = LearnedPositions(16, 8)
        >>> x = torch.zeros(2, 5, 8)
        >>> pos(x).shape, torch.equal(pos(x)[0], pos.weight[:5])
        (torch.Size([2, 5, 8]), True)
        >>> torch.equal(pos(x[:, :1], offset=5)[0, 0], pos.weight[5])  # token 6
        True
    """

    def __init__(self, max_len: int, embed_dim: int, *, device=None, dtype=None):
        super().__init__()
        self.max_len = check_positive_int(max_len, "max_len")
        self.embed_dim = check_positive_int(embed_dim, "embed_dim")
        factory = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(max_len, embed_dim, **factory))
        nn.init.normal_(self.weight, std=0.02)  # as GPT-2 and CausalDecoder

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Add the rows of positions ``offset .. offset + T - 1`` to ``x``."""
        check_tensor(x, "x")
        check_rank(x, "x", 3, f"(B, T, {self.embed_dim})")
        if x.shape[-1] != self.embed_dim:
            raise ValueError(
                f"x must have shape (B, T, {self.embed_dim}), got {fmt_shape(x.shape)}"
            )
        check_same_dtype_device("the table", self.weight, "x", x)
        offset = check_positive_int(offset, "offset", allow_zero=True)
        T = x.shape[1]
        if offset + T > self.max_len:
            raise ValueError(
                f"x has T = {T} tokens at offset = {offset}, past max_len = "
                f"{self.max_len}: learned positions cannot extrapolate beyond "
                "their table"
            )
        return x + self.weight[offset : offset + T]  # (B, T, E) + (T, E)

    def extra_repr(self) -> str:
        return f"max_len={self.max_len}, embed_dim={self.embed_dim}"
