"""Multi-head attention on one screen: the module as a reader first writes it.

Taught at the start of chapter 04-implementation, before the production
module :class:`mha_book.attention.mha.MultiHeadAttention`. It has the five steps and
nothing else: four projections, split into heads, scaled dot-product
attention with a bool mask (True = may attend), merge, output projection.
It does not check its inputs, chooses no kernel, has no grouped-query heads,
no KV cache and no dropout, and a query whose keys are all masked gets NaN
weights (the production module defines that row as zeros). Given the same
weights it equals ``torch.nn.MultiheadAttention`` and the production module;
the chapter and ``tests/unit/test_minimal.py`` check both.

Legend: B batch, T query length, S key length, H heads, D = E / H head dim.
"""

from __future__ import annotations

import math

from torch import nn

__all__ = ["MinimalMultiHeadAttention"]


class MinimalMultiHeadAttention(nn.Module):
    """Multi-head attention in about forty lines, batch first, without checks.

    Args:
        embed_dim: Model dimension E.
        num_heads: Number of heads H; must divide E.

    Shape:
        - query: ``(B, T, E)``; key and value: ``(B, S, E)``
        - mask: bool, True = may attend, broadcastable to ``(B, H, T, S)``
        - output: ``(B, T, E)``; weights: ``(B, H, T, S)``

    Example:
        >>> import torch
        >>> mha = MinimalMultiHeadAttention(64, 8)
        >>> x = torch.randn(2, 5, 64)
        >>> out, w = mha(x, x, x)
        >>> out.shape, w.shape
        (torch.Size([2, 5, 64]), torch.Size([2, 8, 5, 5]))
    """

    def __init__(self, embed_dim: int, num_heads: int) -> None:
        super().__init__()
        if embed_dim % num_heads:
            raise ValueError(
                f"num_heads must divide embed_dim, got {num_heads} and {embed_dim}"
            )
        self.num_heads, self.head_dim = num_heads, embed_dim // num_heads
        self.q_proj = nn.Linear(embed_dim, embed_dim)  # W^Q
        self.k_proj = nn.Linear(embed_dim, embed_dim)  # W^K
        self.v_proj = nn.Linear(embed_dim, embed_dim)  # W^V
        self.out_proj = nn.Linear(embed_dim, embed_dim)  # W^O

    def forward(self, query, key, value, mask=None):
        """Return ``(output, weights)``; see the class docstring for shapes."""
        B, T, E = query.shape
        S, H, D = key.shape[1], self.num_heads, self.head_dim
        # 1-2. project, then split E into H heads of D features:
        # (B, T, E) -> (B, T, H, D) -> (B, H, T, D)
        q = self.q_proj(query).view(B, T, H, D).transpose(1, 2)
        k = self.k_proj(key).view(B, S, H, D).transpose(1, 2)  # (B, H, S, D)
        v = self.v_proj(value).view(B, S, H, D).transpose(1, 2)  # (B, H, S, D)
        # 3. attend: every query against every key, in every head at once
        scores = q @ k.transpose(-2, -1) / math.sqrt(D)  # (B, H, T, S)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))  # False: no access
        weights = scores.softmax(dim=-1)  # (B, H, T, S), rows sum to 1
        context = weights @ v  # (B, H, T, D)
        # 4. merge: (B, H, T, D) -> (B, T, H, D) -> (B, T, E)
        context = context.transpose(1, 2).reshape(B, T, E)
        # 5. mix the heads
        return self.out_proj(context), weights
