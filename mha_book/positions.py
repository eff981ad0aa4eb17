"""Where am I? Position encodings added to token embeddings.

Taught in chapter 10-decoder-char-lm (the decoder can use learned or
sinusoidal absolute positions). Attention itself does not see the order of
its inputs; a model adds positions to the token embeddings so that it can.

Legend: E = embed_dim.
"""

from __future__ import annotations

import math

import torch

from mha_book._checks import check_positive_int

__all__ = ["sinusoidal_positions"]


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
