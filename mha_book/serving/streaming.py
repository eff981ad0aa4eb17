"""Streaming a trained decoder far past its training length, as StreamingLLM does.

Taught in chapter 17-inference, after Xiao et al. (2024), "Efficient
Streaming Language Models with Attention Sinks". A decoder reads one long
text token by token with a cache of fixed size C, under one of four policies:

- ``"dense"``: no eviction, a cache that grows with the text (positions
  past C are ones the model never trained on; ``cache_size`` is unused);
- ``"window"``: the last C tokens (:class:`~mha_book.attention.window_caches.SinkKVCache`
  with no sinks): once token C arrives, the first token is gone;
- ``"sinks"``: the first ``sinks`` tokens and the last ``C - sinks``;
- ``"recompute"``: no cache; every token is predicted by a fresh pass over
  the last C tokens (the paper's "sliding window with re-computation"), the
  costly reference: every token's keys come from exactly the context a
  training window gives.

Positions count inside the cache (the paper's rule), so a model trained on
windows of C tokens never sees a position it was not trained on. That needs
relative positions: RoPE, ALiBi, or none; learned or sinusoidal position
vectors are added to the embeddings and cannot be moved later.

Legend: B streams, N tokens per stream, C cache size, E model dim, V vocabulary.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import cast

import torch

from mha_book._checks import check_positive_int, check_token_ids
from mha_book.attention.alibi import alibi_bias
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.window_caches import SinkKVCache
from mha_book.lm.artifacts import cached, shared_out
from mha_book.lm.training import torch_threads
from mha_book.models.blocks import DecoderOnlyBlock
from mha_book.models.decoder import CausalDecoder

__all__ = ["POLICIES", "decoder_step", "stream_losses", "stream_policies"]

#: What a streamed decoder keeps of the past (see :func:`stream_losses`).
POLICIES = ("dense", "window", "sinks", "recompute")


def _check_streamable(model: object) -> CausalDecoder:
    if not isinstance(model, CausalDecoder):
        raise TypeError(f"model must be a CausalDecoder, got {type(model).__name__}")
    if model.config.positions not in ("rope", "alibi", "none"):
        raise ValueError(
            "model must use relative positions (positions 'rope', 'alibi' or 'none') "
            "to stream with positions inside the cache, got positions = "
            f"{model.config.positions!r}"
        )
    return model


@torch.no_grad()
def decoder_step(
    model: CausalDecoder, idx: torch.Tensor, caches: list[KVCache]
) -> torch.Tensor:
    """Logits of new tokens after the cached ones: one cache per block.

    Each block runs :meth:`~mha_book.models.blocks.DecoderOnlyBlock.forward_step`;
    with ALiBi, the bias is made over the keys each cache will hold.

    Shape:
        - idx: ``(B, T)`` new token ids
        - output: ``(B, T, V)``

    Example:
        >>> from mha_book.models.decoder import DecoderConfig
        >>> model = CausalDecoder(DecoderConfig(20, 16, 2, 2, max_len=8, positions="alibi"))
        >>> caches = [KVCache(), KVCache()]
        >>> idx = torch.randint(0, 20, (3, 6))
        >>> steps = [decoder_step(model.eval(), idx[:, t : t + 1], caches) for t in range(6)]
        >>> torch.allclose(torch.cat(steps, dim=1), model(idx)[0], atol=1e-5)
        True
    """
    model = _check_streamable(model)
    check_token_ids(idx, "idx", 2, "(B, T)", vocab_size=model.config.vocab_size)
    if not isinstance(caches, list) or len(caches) != len(model.blocks):
        raise ValueError(
            f"caches must be a list of {len(model.blocks)} KVCache (one per block), "
            f"got {caches!r:.60}"
        )
    return model.lm_head(model.norm(_hidden(model, idx, caches)))  # (B, T, V)


def _blocks(model: CausalDecoder) -> list[DecoderOnlyBlock]:
    return cast(list[DecoderOnlyBlock], list(model.blocks))  # an nn.ModuleList of them


def _hidden(model: CausalDecoder, idx: torch.Tensor, caches: list[KVCache]):
    """The last block's outputs ``(B, T, E)`` for new tokens ``idx`` ``(B, T)``."""
    T, H = idx.shape[1], model.config.num_heads
    x = model.tok_emb(idx)  # (B, T, E)
    for block, cache in zip(_blocks(model), caches):
        bias = None
        if model.config.positions == "alibi":  # over the keys after this step
            S = cache.seq_len + T
            bias = alibi_bias(H, T, S, device=x.device, dtype=x.dtype)[None]
        x = block.forward_step(x, cache, bias)  # (B, T, E)
    return x


@torch.no_grad()
def _stream_logits(
    model: CausalDecoder, ids: torch.Tensor, policy: str, C: int, sinks: int
) -> torch.Tensor:
    """The logits ``(B, N - 1, V)`` of :func:`stream_losses`, in eval mode."""
    if policy == "recompute":
        return _recomputed_logits(model, ids, C)  # (B, N - 1, V)
    kept = sinks if policy == "sinks" else 0
    rope = _blocks(model)[0].self_attn.rope
    caches: list[KVCache] = [
        KVCache() if policy == "dense" else SinkKVCache(kept, C - kept, rope)
        for _ in model.blocks
    ]
    steps = [
        decoder_step(model, ids[:, t : t + 1], caches)  # (B, 1, V)
        for t in range(ids.shape[1] - 1)
    ]
    return torch.cat(steps, dim=1)  # (B, N - 1, V)


def stream_losses(
    model: CausalDecoder,
    ids: torch.Tensor,
    *,
    policy: str,
    cache_size: int,
    sinks: int = 4,
) -> torch.Tensor:
    """Loss of every next-token prediction while streaming ``ids``.

    Args:
        model: A trained decoder with relative positions.
        ids: B streams of N tokens each.
        policy: One of :data:`POLICIES`.
        cache_size: Tokens the cache holds, C (sinks included).
        sinks: First tokens kept by ``"sinks"``; fewer than C.

    Shape:
        - ids: ``(B, N)``
        - output: ``(B, N - 1)``; entry ``t`` is the loss (nats) of predicting
          token ``t + 1`` after reading tokens ``0 .. t``

    Example:
        >>> from mha_book.models.decoder import DecoderConfig
        >>> model = CausalDecoder(DecoderConfig(20, 16, 2, 1, max_len=8, positions="rope"))
        >>> ids = torch.randint(0, 20, (2, 30))
        >>> a = stream_losses(model.eval(), ids, policy="window", cache_size=8)
        >>> b = stream_losses(model, ids, policy="recompute", cache_size=8)
        >>> a.shape, torch.allclose(a[:, :8], b[:, :8], atol=1e-5)  # the same until eviction
        (torch.Size([2, 29]), True)
    """
    model = _check_streamable(model)
    check_token_ids(ids, "ids", 2, "(B, N)", vocab_size=model.config.vocab_size)
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")
    C = check_positive_int(cache_size, "cache_size")
    if C > model.max_len:
        raise ValueError(
            f"cache_size must be at most the model's max_len = {model.max_len}, got {C}"
        )
    sinks = check_positive_int(sinks, "sinks", allow_zero=True)
    if policy == "sinks" and sinks >= C:
        raise ValueError(f"sinks must be fewer than cache_size = {C}, got {sinks}")
    if ids.shape[1] < 2:
        raise ValueError(
            f"ids must hold at least 2 tokens per stream, got {ids.shape[1]}"
        )
    was_training = model.training
    model.eval()
    try:
        logits = _stream_logits(model, ids, policy, C, sinks)  # (B, N - 1, V)
    finally:
        model.train(was_training)  # the caller's mode, as charlm.evaluate does
    targets = ids[:, 1:]  # (B, N - 1)
    losses = torch.nn.functional.cross_entropy(
        logits.transpose(1, 2), targets, reduction="none"
    )  # (B, N - 1)
    return losses


def _recomputed_logits(model: CausalDecoder, ids: torch.Tensor, C: int) -> torch.Tensor:
    """Each token's logits from a fresh pass over the last C tokens: ``(B, N - 1, V)``."""
    B, N = ids.shape
    first, _ = model(ids[:, : min(C, N - 1)])  # (B, min(C, N-1), V): no window full yet
    if N - 1 <= C:
        return first
    windows = ids[:, : N - 1].unfold(1, C, 1)[:, 1:]  # (B, N - C - 1, C)
    last = [_last_logits(model, chunk) for chunk in windows.reshape(-1, C).split(512)]
    rest = torch.cat(last).reshape(B, N - C - 1, -1)  # (B, N - C - 1, V)
    return torch.cat([first, rest], dim=1)  # (B, N - 1, V)


def _last_logits(model: CausalDecoder, idx: torch.Tensor) -> torch.Tensor:
    """The logits after the last token of each window, ``(b, V)``: one causal
    pass (a prefill into caches that are then dropped), the head applied once
    per window instead of at all C positions (V is large for the poems)."""
    x = _hidden(model, idx, [KVCache() for _ in model.blocks])  # (b, C, E)
    return model.lm_head(model.norm(x[:, -1]))  # (b, V)


def stream_policies(
    model: CausalDecoder,
    ids: torch.Tensor,
    *,
    cache_size: int,
    sinks: int = 4,
    policies: tuple[str, ...] = POLICIES,
) -> dict[str, torch.Tensor]:
    """:func:`stream_losses` for every policy, each on one thread, stored once.

    Each run goes through the artifact cache (:mod:`mha_book.lm.artifacts`),
    and two processes that need the same runs (the book's two editions)
    share them out: each takes the runs the other is not working on.

    Returns:
        ``{policy: losses (B, N - 1)}`` in the order of ``policies``.

    Example:
        >>> from mha_book.models.decoder import DecoderConfig
        >>> model = CausalDecoder(DecoderConfig(20, 16, 2, 1, max_len=8, positions="rope"))
        >>> runs = stream_policies(model.eval(), torch.randint(0, 20, (2, 12)), cache_size=4,
        ...                        sinks=1, policies=("window", "sinks"))
        >>> list(runs), runs["sinks"].shape
        (['window', 'sinks'], torch.Size([2, 11]))
    """
    for policy in policies:
        if policy not in POLICIES:
            raise ValueError(f"policies must be among {POLICIES}, got {policy!r}")
    key = (asdict(model.config), model.state_dict(), ids, cache_size, sinks)

    def fetch(policy: str, wait: bool) -> torch.Tensor:
        def run() -> torch.Tensor:
            with torch_threads(1):
                return stream_losses(
                    model, ids, policy=policy, cache_size=cache_size, sinks=sinks
                )

        def save(losses: torch.Tensor, path: Path) -> None:
            torch.save(losses, path)

        def load(path: Path) -> torch.Tensor:
            return torch.load(path, weights_only=True)

        losses, _ = cached(
            "streaming", (policy, key), run, save=save, load=load, wait=wait,
            kind=torch.Tensor,
        )  # fmt: skip
        return losses

    return shared_out(policies, fetch)
