"""Decoding speed: tokens per second with and without a KV cache."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import torch
from torch import nn

from mha_book.bench.timing import time_call
from mha_book.kv_cache import KVCache
from mha_book.masks import causal_mask
from mha_book.module import MultiHeadAttention

__all__ = ["decode_speed"]


class _AttentionStack(nn.Module):
    """Residual causal self-attention layers: just enough model to time decoding."""

    def __init__(self, E: int, H: int, num_kv_heads: int, layers: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            MultiHeadAttention(E, H, num_kv_heads=num_kv_heads) for _ in range(layers)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """All positions of ``x`` (B, T, E) at once, causal mask."""
        mask = causal_mask(x.shape[1], device=x.device)  # (T, T)
        for layer in self.layers:
            x = x + layer(x, x, x, mask, need_weights=False)[0]  # (B, T, E)
        return x

    def step(self, x: torch.Tensor, caches: list[KVCache]) -> torch.Tensor:
        """Only the new positions ``x`` (B, T_new, E).

        The earlier ones are read from ``caches``.
        """
        for layer, cache in zip(self.layers, caches):
            x = x + layer.forward_step(x, cache, need_weights=False)[0]  # (B, T_new, E)
        return x


def decode_speed(
    num_kv_heads: Sequence[int] = (8, 2, 1),
    *,
    E: int = 256,
    H: int = 8,
    layers: int = 4,
    prompt: int = 32,
    new_tokens: int = 32,
    B: int = 1,
    repeats: int = 3,
    seed: int = 0,
) -> list[dict[str, float]]:
    """Decode ``new_tokens`` positions after a prompt, with and without a KV cache.

    For each value of ``num_kv_heads`` a stack of ``layers`` residual
    self-attention layers (float32, eval mode) produces the outputs at
    positions ``prompt, ..., prompt + new_tokens - 1`` of a fixed random input
    sequence, the way a decoder produces one token after another:

    - without a cache: at every step, a full causal pass over all tokens so far;
    - with a cache: one pass over the prompt (prefill), then one call per new
      token that projects only that token and attends to the cached keys.

    Each time is the median over ``repeats`` of the whole loop (prefill included).

    Returns:
        One dict per ``num_kv_heads``: ``num_kv_heads``, ``no_cache_s``,
        ``cache_s``, ``no_cache_tok_s``, ``cache_tok_s`` (new tokens per second),
        ``speedup``, ``max_diff`` (largest difference between the two ways'
        outputs), ``scale`` (largest output magnitude), ``cache_bytes`` (the
        caches after the last step, all layers).
    """
    results = []
    for Hkv in num_kv_heads:
        torch.manual_seed(seed)
        model = _AttentionStack(E, H, Hkv, layers).eval()
        x = torch.randn(B, prompt + new_tokens, E)  # (B, T, E): the whole sequence

        def without_cache():
            return torch.cat(
                [
                    model(x[:, : t + 1])[:, -1:]
                    for t in range(prompt, prompt + new_tokens)
                ],
                1,
            )

        def with_cache():
            caches = [KVCache() for _ in range(layers)]
            model.step(x[:, :prompt], caches)  # prefill
            outs = [
                model.step(x[:, t : t + 1], caches)
                for t in range(prompt, prompt + new_tokens)
            ]
            return torch.cat(outs, 1), caches

        with torch.inference_mode():
            ref, (out, caches) = without_cache(), with_cache()  # also the warm-up
            t_none = statistics.median(time_call(without_cache) for _ in range(repeats))
            t_cache = statistics.median(time_call(with_cache) for _ in range(repeats))
        results.append(
            {
                "num_kv_heads": Hkv,
                "no_cache_s": t_none,
                "cache_s": t_cache,
                "no_cache_tok_s": new_tokens / t_none,
                "cache_tok_s": new_tokens / t_cache,
                "speedup": t_none / t_cache,
                "max_diff": float((out - ref).abs().max()),
                "scale": float(ref.abs().max()),
                "cache_bytes": sum(c.nbytes for c in caches),
            }
        )
    return results
