"""Attention sinks: how much of its attention a head gives to the first positions.

Taught in chapter 17-inference. Xiao et al. (2024) found that trained language
models put a large share of attention on the first token or two of a text,
whatever they say, and called them attention sinks. :func:`sink_shares`
measures that share per layer and head, next to what a head that spread its
attention evenly over its allowed keys would give.

Legend: L layers, H heads, B windows, T queries, S keys.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from mha_book._checks import check_positive_int, check_tensor, fmt_shape

__all__ = ["sink_shares"]


def sink_shares(
    weights: Sequence[torch.Tensor], *, first: int = 1, skip: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean weight on the first ``first`` keys, per layer and head, and its even share.

    Queries ``skip`` and later are averaged (the first ones cannot look
    anywhere else). The even share is what a head that spread its attention
    evenly over each query's allowed keys would give, ``min(first, n) / n``
    for a query with n allowed keys, counted as the keys with nonzero weight
    (a softmax gives every allowed key some weight; a causal query ``i`` has
    ``i + 1``).

    Args:
        weights: One ``(B, H, T, S)`` tensor of attention weights per layer.
        first: How many keys from the start count as the sink.
        skip: Queries left out from the start.

    Shape:
        - output: ``(shares, even)``, each ``(L, H)``

    Example:
        >>> w = torch.full((1, 2, 4, 4), 0.25)  # every key 1/4, not causal
        >>> shares, even = sink_shares([w], skip=1)
        >>> shares.tolist(), even.tolist()
        ([[0.25, 0.25]], [[0.25, 0.25]])
    """
    first = check_positive_int(first, "first")
    skip = check_positive_int(skip, "skip", allow_zero=True)
    if isinstance(weights, torch.Tensor) or not isinstance(weights, Sequence):
        raise TypeError(
            f"weights must be a sequence of (B, H, T, S) tensors, got {type(weights).__name__}"
        )
    if not weights:
        raise ValueError("weights must hold one tensor per layer, got none")
    shares, evens = [], []
    for i, w in enumerate(weights):
        w = check_tensor(w, f"weights[{i}]")
        if w.dim() != 4 or w.shape[-2] <= skip or w.shape[-1] < first:
            raise ValueError(
                f"weights[{i}] must be (B, H, T, S) with T > skip = {skip} and "
                f"S >= first = {first}, got {fmt_shape(w.shape)}"
            )
        rows = w[:, :, skip:].to(torch.float64)  # (B, H, T', S)
        if not torch.isfinite(rows).all():
            raise ValueError(f"weights[{i}] must be finite, got NaN or inf")
        sums = rows.sum(-1)  # (B, H, T'): 1 for attention weights
        if (rows < 0).any() or not torch.allclose(
            sums, torch.ones_like(sums), atol=1e-3
        ):
            raise ValueError(
                f"weights[{i}] must be attention weights (no negative entry, each "
                f"row summing to 1), got entries down to {rows.min().item():.3g} "
                f"and row sums from {sums.min().item():.4g} to {sums.max().item():.4g}: "
                "softmax the scores first"
            )
        shares.append(rows[..., :first].sum(-1).mean(dim=(0, 2)))  # (H,)
        allowed = (rows > 0).sum(-1).clamp(min=1).to(torch.float64)  # (B, H, T')
        evens.append((allowed.clamp(max=first) / allowed).mean(dim=(0, 2)))  # (H,)
    return torch.stack(shares), torch.stack(evens)  # (L, H) each
