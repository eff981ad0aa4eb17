"""Splitting the embedding into heads and merging the heads back.

Taught in chapter 03-multi-head.

Legend: B batch, H heads, T sequence length, D head dim, E = H·D.

The E features of each token are cut into H consecutive blocks of D features;
head ``h`` owns features ``h*D : (h+1)*D``. Moving H in front of T lets every
head run attention independently as one batched matrix product.
"""

from __future__ import annotations

import torch

from mha_book._checks import check_positive_int, check_rank, check_tensor

__all__ = ["split_heads", "merge_heads"]


def split_heads(x: torch.Tensor, num_heads: int) -> torch.Tensor:
    """Cut the last dim into ``num_heads`` heads and move heads before time.

    Args:
        x: Projected queries, keys or values.
        num_heads: Number of heads H; must divide E.

    Shape:
        - x: ``(B, T, E)``
        - output: ``(B, H, T, D)`` with ``D = E // H`` (a view, not a copy)

    Returns:
        The per-head view of ``x``.

    Raises:
        TypeError: If ``x`` is not a tensor or ``num_heads`` not an int.
        ValueError: If ``x`` is not 3-D or E is not divisible by ``num_heads``.

    Example:
        >>> x = torch.randn(2, 10, 512)
        >>> split_heads(x, 8).shape
        torch.Size([2, 8, 10, 64])
        >>> torch.equal(merge_heads(split_heads(x, 8)), x)
        True
    """
    check_tensor(x, "x")
    check_rank(x, "x", 3, "(B, T, E)")
    H = check_positive_int(num_heads, "num_heads")
    B, T, E = x.shape
    if E % H != 0:
        raise ValueError(
            f"x's last dim E must be divisible by num_heads, got E = {E} and num_heads = {H}"
        )
    x = x.view(B, T, H, E // H)  # (B, T, H, D)
    return x.transpose(1, 2)  # (B, H, T, D)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`split_heads`: move heads after time and concatenate them.

    Args:
        x: Per-head tensor, e.g. the attention context.

    Shape:
        - x: ``(B, H, T, D)``
        - output: ``(B, T, E)`` with ``E = H·D`` (a copy unless no data has to move)

    Returns:
        The merged tensor.

    Raises:
        TypeError: If ``x`` is not a tensor.
        ValueError: If ``x`` is not 4-D.

    Example:
        >>> x = torch.randn(2, 8, 10, 64)
        >>> merge_heads(x).shape
        torch.Size([2, 10, 512])
        >>> torch.equal(split_heads(merge_heads(x), 8), x)
        True
    """
    check_tensor(x, "x")
    check_rank(x, "x", 4, "(B, H, T, D)")
    B, H, T, D = x.shape
    x = x.transpose(1, 2)  # (B, T, H, D)
    return x.reshape(B, T, H * D)  # (B, T, E)

