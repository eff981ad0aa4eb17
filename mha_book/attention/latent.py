"""Multi-head latent attention (MLA), DeepSeek-V2's way to shrink the KV cache.

Taught in chapter 17-inference, after DeepSeek-AI (2024), "DeepSeek-V2",
section 2.1.

Legend: B batch, T new tokens, S keys, E model dim, H heads, D head dim
(``head_dim``), C latent dim (``latent_dim``, the paper's d_c), R rope dim
(``rope_dim``, the paper's d_h^R).

Each token's keys and values are made from one small latent
``c = W_DKV x`` ``(C,)``: per head, ``k_h = W_UK,h c`` and ``v_h = W_UV,h c``.
RoPE cannot act on ``k_h`` (a rotation between ``W_UK`` and the query would
block the trick below), so a separate ``R``-wide key ``k_rope = RoPE(W_KR x)``,
shared by all heads, carries position; each query has a rotated part of
width R too. A head's score is ``(q_h · k_h + q_rope,h · k_rope) / sqrt(D + R)``.

The cache holds only ``c`` and ``k_rope``: ``C + R`` numbers per token and
layer, against ``2 · H · D`` for multi-head attention.

**Absorbed form.** ``q_h · (W_UK,h c) = (W_UK,hᵀ q_h) · c``: move ``W_UK`` onto
the query and score against the cached latents directly. Likewise the output
``W_O,h W_UV,h (Σ_j w_j c_j)``: the weighted sum is taken over latents and one
``(E, C)`` matrix per head maps it out. No per-head key or value is ever made.
Both forms are one module here; they agree to rounding.

DeepSeek-V2 also compresses the queries through a latent of their own, to save
activation memory in training; that does not change the cache and is left out.
"""

from __future__ import annotations

import weakref

import torch
from torch import nn

from mha_book._checks import check_positive_int, check_rank, check_tensor, fmt_shape
from mha_book.attention.heads import merge_heads, split_heads
from mha_book.attention.masks import causal_mask
from mha_book.attention.rope import apply_rotary

__all__ = ["LatentAttention", "LatentCache", "latent_cache_elements"]


def latent_cache_elements(latent_dim: int, rope_dim: int, num_layers: int) -> int:
    """Numbers MLA caches per token: ``(C + R) · L``.

    Example:
        >>> latent_cache_elements(512, 64, 60)  # DeepSeek-V2
        34560
    """
    C = check_positive_int(latent_dim, "latent_dim")
    R = check_positive_int(rope_dim, "rope_dim")
    return (C + R) * check_positive_int(num_layers, "num_layers")


class LatentCache:
    """The latents and rotated keys of one MLA layer, growing along the sequence.

    Attributes:
        latents: ``(B, S, C)`` or None while empty.
        rope_keys: ``(B, S, R)`` or None.
    """

    def __init__(self) -> None:
        self.latents: torch.Tensor | None = None
        self.rope_keys: torch.Tensor | None = None
        self._layer: weakref.ref | None = None  # the layer whose latents it holds

    def claim(self, layer: object) -> None:
        """Refuse a second layer (one cache per layer), as KVCache.claim does."""
        owner = self._layer  # a dead reference (layer freed) is not ``layer``
        if owner is not None and self.latents is not None and owner() is not layer:
            raise ValueError(
                "cache must belong to one layer: it holds the latents of another "
                "layer, got a second one (one LatentCache per layer)"
            )
        self._layer = weakref.ref(layer)

    @property
    def seq_len(self) -> int:
        """Cached tokens S."""
        return 0 if self.latents is None else self.latents.shape[1]

    @property
    def nbytes(self) -> int:
        """Memory held, in bytes."""
        if self.latents is None or self.rope_keys is None:
            return 0
        return sum(t.numel() * t.element_size() for t in (self.latents, self.rope_keys))

    def update(self, c: torch.Tensor, k_rope: torch.Tensor):
        """Append ``(B, T, C)`` latents and ``(B, T, R)`` keys; return all cached."""
        if self.latents is None or self.rope_keys is None:
            self.latents, self.rope_keys = c, k_rope
        else:
            if c.shape[0] != self.latents.shape[0]:
                raise ValueError(
                    f"x must have the batch size of the cache ({self.latents.shape[0]}), "
                    f"got {c.shape[0]}"
                )
            for name, new, held in (
                ("latent", c, self.latents),
                ("rope", k_rope, self.rope_keys),
            ):
                if new.shape[-1] != held.shape[-1] or new.dtype != held.dtype:
                    raise ValueError(
                        f"cache must belong to one layer: it holds {name} dim "
                        f"{held.shape[-1]} of {held.dtype}, this layer gives "
                        f"{new.shape[-1]} of {new.dtype} (one LatentCache per layer)"
                    )
            self.latents = torch.cat([self.latents, c], dim=1)  # (B, S + T, C)
            self.rope_keys = torch.cat([self.rope_keys, k_rope], dim=1)  # (B, S + T, R)
        return self.latents, self.rope_keys


class LatentAttention(nn.Module):
    """Causal multi-head latent attention; plain and absorbed forms.

    Args:
        embed_dim: Model dim E.
        num_heads: Heads H.
        head_dim: Per-head dim D of the non-rotated queries, keys and values.
        latent_dim: Latent dim C; the cache must be smaller than MHA's:
            ``C + R < 2 · H · D``.
        rope_dim: Rotated dim R of the queries and of the shared key; even.
        device: The device of the parameters.
        dtype: The dtype of the parameters.

    Example:
        >>> mla = LatentAttention(64, 4, head_dim=16, latent_dim=32, rope_dim=8)
        >>> x = torch.randn(2, 10, 64)
        >>> out = mla(x)
        >>> out.shape, torch.allclose(out, mla(x, absorbed=True), atol=1e-5)
        (torch.Size([2, 10, 64]), True)
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        *,
        head_dim: int,
        latent_dim: int,
        rope_dim: int,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        E, H = (
            check_positive_int(embed_dim, "embed_dim"),
            check_positive_int(num_heads, "num_heads"),
        )
        D, C = (
            check_positive_int(head_dim, "head_dim"),
            check_positive_int(latent_dim, "latent_dim"),
        )
        R = check_positive_int(rope_dim, "rope_dim")
        if R % 2:
            raise ValueError(f"rope_dim must be even (RoPE rotates pairs), got {R}")
        if C + R >= 2 * H * D:
            raise ValueError(
                f"latent_dim must leave the cache smaller than MHA's: latent_dim + "
                f"rope_dim < 2 · num_heads · head_dim = {2 * H * D}, got "
                f"latent_dim = {C}, rope_dim = {R}"
            )
        self.embed_dim, self.num_heads, self.head_dim = E, H, D
        self.latent_dim, self.rope_dim = C, R
        f = {"device": device, "dtype": dtype, "bias": False}
        self.q_proj = nn.Linear(E, H * (D + R), **f)  # each head: D plain, R rotated
        self.kv_down = nn.Linear(E, C, **f)  # W_DKV: the latent
        self.k_up = nn.Linear(C, H * D, **f)  # W_UK
        self.v_up = nn.Linear(C, H * D, **f)  # W_UV
        self.k_rope = nn.Linear(E, R, **f)  # W_KR: one rotated key for all heads
        self.out_proj = nn.Linear(H * D, E, **f)  # W_O

    def _queries(self, x: torch.Tensor, positions: torch.Tensor):
        """Plain and rotated queries ``(B, H, T, D)``, ``(B, H, T, R)``."""
        q = split_heads(self.q_proj(x), self.num_heads)  # (B, H, T, D + R)
        q_plain, q_rot = q.split([self.head_dim, self.rope_dim], dim=-1)
        return q_plain, apply_rotary(q_rot, positions)  # (B, H, T, D), (B, H, T, R)

    def _latents(self, x: torch.Tensor, positions: torch.Tensor):
        """Latents ``(B, T, C)`` and rotated shared keys ``(B, T, R)``."""
        return self.kv_down(x), apply_rotary(self.k_rope(x), positions)

    def forward(
        self,
        x: torch.Tensor,
        cache: LatentCache | None = None,
        *,
        absorbed: bool = False,
    ) -> torch.Tensor:
        """Causal self-attention of ``x``, after ``cache``'s tokens if one is given.

        Shape:
            - x: ``(B, T, E)``
            - output: ``(B, T, E)``; with ``cache``, the cache grows by T
        """
        x = check_tensor(x, "x")
        check_rank(x, "x", 3, f"(B, T, {self.embed_dim})")
        if x.shape[-1] != self.embed_dim or x.dtype != self.q_proj.weight.dtype:
            raise ValueError(
                f"x must be (B, T, E = {self.embed_dim}) of {self.q_proj.weight.dtype}, "
                f"got {fmt_shape(x.shape)} of {x.dtype}"
            )
        if cache is not None and not isinstance(cache, LatentCache):
            raise TypeError(
                f"cache must be a LatentCache or None, got {type(cache).__name__}"
            )
        if cache is not None:
            cache.claim(self)
        past = 0 if cache is None else cache.seq_len
        positions = torch.arange(past, past + x.shape[1], device=x.device)  # (T,)
        q_plain, q_rot = self._queries(x, positions)  # (B, H, T, D), (B, H, T, R)
        c, k_rot = self._latents(x, positions)  # (B, T, C), (B, T, R)
        if cache is not None:
            c, k_rot = cache.update(c, k_rot)  # (B, S, C), (B, S, R)
        T, S = x.shape[1], c.shape[1]
        rope_scores = q_rot @ k_rot[:, None].transpose(-2, -1)  # (B, H, T, S)
        if absorbed:
            return self._absorbed(
                q_plain, rope_scores, c, causal_mask(T, S, device=x.device)
            )
        k = split_heads(self.k_up(c), self.num_heads)  # (B, H, S, D)
        v = split_heads(self.v_up(c), self.num_heads)  # (B, H, S, D)
        scores = (q_plain @ k.transpose(-2, -1) + rope_scores) / (
            self.head_dim + self.rope_dim
        ) ** 0.5
        scores = scores.masked_fill(~causal_mask(T, S, device=x.device), float("-inf"))
        context = torch.softmax(scores, dim=-1) @ v  # (B, H, T, D)
        return self.out_proj(merge_heads(context))  # (B, T, E)

    def _absorbed(self, q_plain, rope_scores, c, mask) -> torch.Tensor:
        """Attention over the latents themselves: no per-head key or value."""
        H, D, C = self.num_heads, self.head_dim, self.latent_dim
        # A server folds W_UK into the query projection, and W_O W_UV into one
        # output matrix, once when it loads the weights; here, at every call.
        w_uk = self.k_up.weight.view(H, D, C)  # (H, D, C): W_UK,h
        q_latent = q_plain @ w_uk  # (B, H, T, C): W_UK,hᵀ q_h, in latent space
        scores = q_latent @ c[:, None].transpose(-2, -1) + rope_scores  # (B, H, T, S)
        scores = scores / (D + self.rope_dim) ** 0.5
        scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, H, T, S)
        context = weights @ c[:, None]  # (B, H, T, C): weighted sum of latents
        w_uv = self.v_up.weight.view(H, D, C)  # (H, D, C): W_UV,h
        w_o = self.out_proj.weight.view(self.embed_dim, H, D)  # (E, H, D): W_O,h
        w_out = w_o.transpose(0, 1) @ w_uv  # (H, E, C): W_O,h W_UV,h
        return torch.einsum("bhtc,hec->bte", context, w_out)  # (B, T, E)
