"""Decoding speed: tokens per second with and without a KV cache."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from functools import partial

import torch
from torch import nn

from mha_book._checks import check_positive_int, check_positive_ints
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.masks import causal_mask
from mha_book.attention.mha import MultiHeadAttention
from mha_book.bench.timing import interleaved_times, paired_ratio

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
            assert isinstance(layer, MultiHeadAttention)  # what __init__ stacked
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
    clock: str = "wall",
) -> list[dict[str, float]]:
    """Decode ``new_tokens`` positions after a prompt, with and without a KV cache.

    For each value of ``num_kv_heads`` a stack of ``layers`` residual
    self-attention layers (float32, eval mode) produces the outputs at
    positions ``prompt, ..., prompt + new_tokens - 1`` of a fixed random input
    sequence, the way a decoder produces one token after another:

    - without a cache: at every step, a full causal pass over all tokens so far;
    - with a cache: one pass over the prompt (prefill), then one call per new
      token that projects only that token and attends to the cached keys.

    Each time is of the whole loop (prefill included). All the variants,
    ``num_kv_heads`` with and without a cache, are timed in ``repeats``
    interleaved rounds (:func:`~mha_book.bench.timing.interleaved_times`):
    each round runs every variant once, in a shuffled order. A time is the
    median over the rounds, a speed-up the median of the per-round ratios
    (:func:`~mha_book.bench.timing.paired_ratio`). Threads: as many as torch
    uses now; ``clock``: see :data:`~mha_book.bench.timing.CLOCKS`.

    Returns:
        One dict per ``num_kv_heads``, with ``num_kv_heads``, ``no_cache_s``,
        ``cache_s``, ``no_cache_tok_s``, ``cache_tok_s`` (new tokens per second),
        ``speedup``, ``max_diff`` (largest difference between the two ways'
        outputs), ``scale`` (largest output magnitude), ``cache_bytes`` (the
        caches after the last step, all layers).
    """
    num_kv_heads = check_positive_ints(num_kv_heads, "num_kv_heads")
    for name, n in (("layers", layers), ("prompt", prompt), ("new_tokens", new_tokens)):
        check_positive_int(n, name)
    check_positive_int(B, "B")
    check_positive_int(repeats, "repeats")
    check_positive_int(seed, "seed", allow_zero=True)
    calls, checks = {}, {}
    for Hkv in num_kv_heads:
        torch.manual_seed(seed)
        model = _AttentionStack(E, H, Hkv, layers).eval()
        x = torch.randn(B, prompt + new_tokens, E)  # (B, T, E): the whole sequence
        calls[Hkv, False] = partial(_without_cache, model, x, prompt)
        calls[Hkv, True] = partial(_with_cache, model, x, prompt, layers)
        with torch.inference_mode():
            ref, (out, caches) = calls[Hkv, False](), calls[Hkv, True]()
        checks[Hkv] = ref, out, caches
    names = {f"{Hkv} {cache}": call for (Hkv, cache), call in calls.items()}
    with torch.inference_mode():
        times = interleaved_times(names, repeats, clock=clock)
    results = []
    for Hkv in num_kv_heads:
        ref, out, caches = checks[Hkv]
        t_none = statistics.median(times[f"{Hkv} False"])
        t_cache = statistics.median(times[f"{Hkv} True"])
        speedup = paired_ratio(times[f"{Hkv} False"], times[f"{Hkv} True"])[0]
        results.append(
            {
                "num_kv_heads": Hkv,
                "no_cache_s": t_none,
                "cache_s": t_cache,
                "no_cache_tok_s": new_tokens / t_none,
                "cache_tok_s": new_tokens / t_cache,
                "speedup": speedup,
                "max_diff": float((out - ref).abs().max()),
                "scale": float(ref.abs().max()),
                "cache_bytes": sum(c.nbytes for c in caches),
            }
        )
    return results


def _without_cache(model: _AttentionStack, x: torch.Tensor, prompt: int):
    """The outputs at positions ``prompt, ...``: a full causal pass per position."""
    return torch.cat(
        [model(x[:, : t + 1])[:, -1:] for t in range(prompt, x.shape[1])], 1
    )  # (B, new_tokens, E)


def _with_cache(model: _AttentionStack, x: torch.Tensor, prompt: int, layers: int):
    """The same outputs: prefill, then one step per position; and the caches."""
    caches = [KVCache() for _ in range(layers)]
    model.step(x[:, :prompt], caches)  # prefill
    outs = [model.step(x[:, t : t + 1], caches) for t in range(prompt, x.shape[1])]
    return torch.cat(outs, 1), caches  # (B, new_tokens, E)
