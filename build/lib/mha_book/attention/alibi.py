"""ALiBi: attention with linear biases (Press, Smith and Lewis, 2022).

ALiBi adds no position vector to the tokens. Each head ``h`` adds
``-slope_h · distance`` to its scores instead, so a key further back weighs
less, at a rate that differs from head to head. The bias goes to any kernel,
or to :class:`~mha_book.attention.mha.MultiHeadAttention`, as ``bias=``.

Legend: H heads, T query length, S key length.

Example:
    >>> alibi_slopes(4)
    tensor([0.2500, 0.0625, 0.0156, 0.0039])
    >>> alibi_bias(8, 3)[0]  # head 0 of 8, slope 1/2
    tensor([[ 0.0000, -0.5000, -1.0000],
            [-0.5000,  0.0000, -0.5000],
            [-1.0000, -0.5000,  0.0000]])
"""

from __future__ import annotations

import math

import torch

from mha_book._checks import check_positive_int
from mha_book.attention.masks import _check_length

__all__ = ["alibi_slopes", "alibi_bias"]


def _power_of_two_slopes(n: int) -> list[float]:
    """The geometric sequence for ``n`` a power of two: ``2^(-8k/n)``, k = 1..n."""
    start = 2.0 ** (-8.0 / n)  # the paper's 2 ** (-2 ** -(log2(n) - 3))
    return [start**k for k in range(1, n + 1)]


def alibi_slopes(
    num_heads: int, *, device=None, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """The slope of each head, as in the paper's reference implementation.

    For ``n`` heads, ``n`` a power of two, the slopes are the geometric
    sequence that starts at ``2^(-8/n)`` with that same ratio: 1/2, 1/4, ...,
    1/256 for 8 heads. For other head counts, the slopes of the closest power
    of two below, ``p``, followed by every other slope of ``2p`` heads
    (the 1st, 3rd, ...) until there are ``n`` (Hugging Face's
    ``build_alibi_tensor`` does the same).

    Args:
        num_heads: Number of heads H.
        device: Device of the result.
        dtype: Dtype of the result (computed in float64 first).

    Shape:
        - output: ``(H,)``

    Example:
        >>> alibi_slopes(8).tolist()[:3], alibi_slopes(8)[-1].item() == 2**-8
        ([0.5, 0.25, 0.125], True)
        >>> alibi_slopes(6).tolist()  # 4 heads' slopes, then 1/2, 1/8 from 8 heads'
        [0.25, 0.0625, 0.015625, 0.00390625, 0.5, 0.125]
    """
    num_heads = check_positive_int(num_heads, "num_heads")
    closest = 2 ** math.floor(math.log2(num_heads))  # power of two <= num_heads
    slopes = _power_of_two_slopes(closest)
    slopes += _power_of_two_slopes(2 * closest)[0::2][: num_heads - closest]
    return torch.tensor(slopes, dtype=torch.float64).to(device=device, dtype=dtype)


def alibi_bias(
    num_heads: int,
    T: int,
    S: int | None = None,
    *,
    device=None,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """ALiBi's additive bias ``-slope_h · |i' - j|`` for every head.

    Queries and keys are aligned at the end, as in
    :func:`~mha_book.attention.masks.causal_mask`: query ``i`` sits at position
    ``i' = i + S - T``, so with a KV cache of ``S - T`` earlier keys the new
    queries get the rows of the full pass. A key before the query is penalised
    by its distance, the paper's ``-slope · (i' - j)``; a key after it (blocked
    by a causal mask) by the same distance, as a bidirectional model would use.
    Hugging Face's ``build_alibi_tensor`` adds ``slope · j`` instead, which
    differs from the paper's by a constant per row: the softmax is the same.

    Args:
        num_heads: Number of heads H.
        T: Query length.
        S: Key length; defaults to ``T``.
        device: Device of the result.
        dtype: Dtype of the result; pass the queries' dtype.

    Shape:
        - output: ``(H, T, S)``; ``[None]`` gives ``(1, H, T, S)`` for a module.

    Example:
        >>> b = alibi_bias(8, 2, 5)  # the last 2 of 5 positions
        >>> b.shape
        torch.Size([8, 2, 5])
        >>> b[0, 1]  # head 0 (slope 1/2), query at position 4
        tensor([-2.0000, -1.5000, -1.0000, -0.5000,  0.0000])
    """
    slopes = alibi_slopes(num_heads, dtype=torch.float64)  # (H,)
    T = _check_length(T, "T")
    S = T if S is None else _check_length(S, "S")
    query_pos = torch.arange(T, dtype=torch.float64) + (S - T)  # (T,)
    key_pos = torch.arange(S, dtype=torch.float64)  # (S,)
    distance = (query_pos[:, None] - key_pos[None, :]).abs()  # (T, S)
    bias = 0.0 - slopes[:, None, None] * distance  # (H, T, S); 0 - 0 is +0, not -0
    return bias.to(device=device, dtype=dtype)
