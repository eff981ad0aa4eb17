"""Splitting the embedding into heads and merging the heads back.

Taught in chapter 03-multi-head; :func:`repeat_kv` (key/value heads shared by
groups of query heads) in chapter 13-mqa-gqa-kv-cache.

Legend: B batch, H heads, Hkv key/value heads, T sequence length, S key
length, D head dim, E = H·D.

The E features of each token are cut into H consecutive blocks of D features;
head ``h`` owns features ``h*D : (h+1)*D``. Moving H in front of T lets every
head run attention independently as one batched matrix product.
"""

from __future__ import annotations

import torch

from mha_book._checks import check_positive_int, check_rank, check_tensor

__all__ = ["split_heads", "merge_heads", "repeat_kv"]


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
            "x's last dim E must be divisible by num_heads, "
            f"got E = {E} and num_heads = {H}"
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


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """Repeat every key/value head ``n_rep`` times, for grouped-query attention.

    With ``H = Hkv · n_rep`` query heads and ``Hkv`` key/value heads, query
    head ``h`` uses key/value head ``h // n_rep``: consecutive groups of
    ``n_rep`` query heads share one key/value head (as ``repeat_kv`` in
    Hugging Face transformers). ``n_rep = 1`` is standard multi-head attention
    and returns ``x`` itself; ``Hkv = 1`` is multi-query attention.

    Args:
        x: Per-head keys or values.
        n_rep: How many query heads share each key/value head.

    Shape:
        - x: ``(B, Hkv, S, D)``
        - output: ``(B, Hkv·n_rep, S, D)`` (a copy unless ``n_rep == 1``)

    Returns:
        The repeated tensor.

    Raises:
        TypeError: If ``x`` is not a tensor or ``n_rep`` not an int.
        ValueError: If ``x`` is not 4-D or ``n_rep`` is not positive.

    Example:
        >>> x = torch.randn(2, 2, 10, 64)  # B=2, Hkv=2, S=10, D=64
        >>> y = repeat_kv(x, 4)  # H = 8 query heads, 4 per key/value head
        >>> y.shape
        torch.Size([2, 8, 10, 64])
        >>> torch.equal(y.view(2, 2, 4, 10, 64)[:, :, 0], x)  # one copy per group
        True
        >>> torch.equal(y[:, 5], x[:, 5 // 4])  # query head 5 reads key/value head 1
        True
    """
    check_tensor(x, "x")
    check_rank(x, "x", 4, "(B, Hkv, S, D)")
    n_rep = check_positive_int(n_rep, "n_rep")
    if n_rep == 1:
        return x
    B, Hkv, S, D = x.shape
    x = x[:, :, None, :, :].expand(B, Hkv, n_rep, S, D)  # (B, Hkv, n_rep, S, D), a view
    return x.reshape(B, Hkv * n_rep, S, D)  # (B, H, S, D)
