"""The two pieces every Transformer layer repeats, written once.

Taught in chapter 06-applications; used by :class:`~mha_book.layers.EncoderLayer`,
:class:`~mha_book.layers.DecoderLayer`,
:class:`~mha_book.decoder.DecoderOnlyBlock` and
:class:`~mha_book.pretrained.BertLayer`.

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

import torch
from torch import nn

__all__ = ["feed_forward", "residual"]


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
    sublayer: Callable[[torch.Tensor], object],
    norm: nn.Module,
    dropout: nn.Module | None = None,
    *,
    norm_first: bool,
) -> tuple[torch.Tensor, object]:
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
