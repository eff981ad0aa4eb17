"""The attention kernels by name: one signature, one registry.

Taught in chapter 04-implementation (the module picks a kernel), chapter
05-verification and chapter 12-flash-attention (the benchmark runs them all).

Every kernel has the signature of :class:`AttentionKernel`::

    kernel(q, k, v, mask=None, *, bias=None, dropout_p=0.0, scale=None,
           validate=True) -> (output, weights or None)

with q ``(B, H, T, D)``, k ``(B, H, S, D)``, v ``(B, H, S, Dv)``, a bool mask
(True = may attend) and a finite float ``bias`` added to the scaled scores
before the mask (ALiBi's, :mod:`mha_book.attention.alibi`), both broadcastable to
``(B, H, T, S)``, output ``(B, H, T, Dv)`` and weights ``(B, H, T, S)`` from
kernels that form them.
:class:`~mha_book.attention.mha.MultiHeadAttention` (``kernel=...``) and the
benchmark (:mod:`mha_book.bench`) both look kernels up in
:data:`ATTENTION_KERNELS`. Adding a kernel is one function with this
signature plus one line in that dict, as with Hugging Face's
``AttentionInterface``.

Example:
    >>> sorted(ATTENTION_KERNELS)
    ['explicit', 'flash', 'fused']
    >>> q = k = v = torch.randn(2, 4, 6, 8)
    >>> out, w = get_kernel("flash")(q, k, v)
    >>> out.shape, w
    (torch.Size([2, 4, 6, 8]), None)
"""

from __future__ import annotations

from typing import Protocol

import torch

from mha_book.attention.flash import flash_attention
from mha_book.attention.scaled_dot_product import (
    fused_attention,
    scaled_dot_product_attention,
)

__all__ = ["AttentionKernel", "ATTENTION_KERNELS", "get_kernel"]


class AttentionKernel(Protocol):
    """A kernel: ``(q, k, v, mask=None, *, bias, dropout_p, scale, validate)`` to
    ``(output, weights or None)``.

    The one signature every entry of :data:`ATTENTION_KERNELS` has; a kernel may
    take more keyword options with defaults of its own (the flash kernel's
    ``block_size``).
    """

    def __call__(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        mask: torch.Tensor | None = None,
        *,
        bias: torch.Tensor | None = None,
        dropout_p: float = 0.0,
        scale: float | None = None,
        validate: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]: ...


def fused_kernel(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    bias: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    scale: float | None = None,
    validate: bool = True,
) -> tuple[torch.Tensor, None]:
    """PyTorch's fused kernel (``F.scaled_dot_product_attention``): no weights."""
    out = fused_attention(
        q, k, v, mask, bias=bias, dropout_p=dropout_p, scale=scale, validate=validate
    )
    return out, None


def flash_kernel(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    bias: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    scale: float | None = None,
    validate: bool = True,
    block_size: int | tuple[int, int] = 128,
) -> tuple[torch.Tensor, None]:
    """The tiled kernel with an online softmax (chapter 12): no weights, no dropout.

    ``block_size`` is its own option: the tile size. It always checks its
    inputs (cheap next to its Python loop over tiles), so ``validate`` is
    accepted and ignored.
    """
    if dropout_p:
        raise ValueError(
            f"dropout_p must be 0 for the flash kernel (it has no dropout), got "
            f"{dropout_p}; use kernel='explicit' or 'fused' to train with dropout"
        )
    out = flash_attention(q, k, v, mask, bias=bias, scale=scale, block_size=block_size)
    return out, None


#: Every attention kernel by name; the module and the benchmark look here.
ATTENTION_KERNELS: dict[str, AttentionKernel] = {
    # scores, softmax and weighted sum written out; already has the signature
    "explicit": scaled_dot_product_attention,
    "fused": fused_kernel,
    "flash": flash_kernel,
}


def get_kernel(name: object) -> AttentionKernel:
    """The kernel registered under ``name``; a clear error for any other name.

    Example:
        >>> get_kernel("tiled")
        Traceback (most recent call last):
            ...
        ValueError: kernel must be one of ['explicit', 'flash', 'fused'], got 'tiled'
    """
    if not isinstance(name, str) or name not in ATTENTION_KERNELS:
        raise ValueError(
            f"kernel must be one of {sorted(ATTENTION_KERNELS)}, got {name!r}"
        )
    return ATTENTION_KERNELS[name]
