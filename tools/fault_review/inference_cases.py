"""Cases for chapter 17's designs: bounded and paged caches, latent attention,
FlexAttention, streaming, sink shares, the serving simulation and the figures."""

from __future__ import annotations

import torch

from mha_book.attention import flex
from mha_book.attention.latent import LatentAttention, LatentCache
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.paged import BlockPool, PagedKVCache
from mha_book.attention.window_caches import RollingKVCache, SinkKVCache
from mha_book.models.decoder import CausalDecoder, DecoderConfig
from mha_book.serving.simulation import sample_requests, simulate_serving
from mha_book.serving.sinks import sink_shares
from mha_book.serving.streaming import stream_losses
from mha_book.viz import diagrams
from tools.fault_review.outcomes import Api


def _step(cache_factory):
    """``forward_step`` of a small module with a fresh cache of one kind."""
    mha = MultiHeadAttention(16, 4, num_kv_heads=2).eval()

    def call(x):
        cache = cache_factory()
        mha.forward_step(torch.randn(2, 1, 16), cache)  # one cached token, batch 2
        return mha.forward_step(x, cache)[0]

    return call


def _paged_append(k, v):
    pool = BlockPool(capacity=16, block_size=4, num_kv_heads=2, head_dim=4)
    return PagedKVCache(pool).append(k, v)


def cache_apis() -> list[Api]:
    """The bounded caches and the paged one."""
    x = {"x": ("x", "k", "v")}
    return [
        Api("RollingKVCache", RollingKVCache, lambda: {"window": 4}),
        Api(
            "RollingKVCache.update",
            _step(lambda: RollingKVCache(3)),
            lambda: {"x": torch.randn(2, 5, 16)},
            x,
        ),  # fmt: skip
        Api("SinkKVCache", SinkKVCache, lambda: {"sinks": 1, "window": 3}),
        Api(
            "SinkKVCache.update",
            _step(lambda: SinkKVCache(1, 8)),
            lambda: {"x": torch.randn(2, 5, 16)},
            x,
        ),  # fmt: skip
        Api(
            "BlockPool",
            BlockPool,
            lambda: {"capacity": 16, "block_size": 4, "num_kv_heads": 2, "head_dim": 4},
            {"capacity": ("capacity", "block_size")},
        ),
        Api(
            "PagedKVCache.append",
            _paged_append,
            lambda: {"k": torch.randn(2, 5, 4), "v": torch.randn(2, 5, 4)},
        ),
    ]


def _latent_forward(absorbed):
    mla = LatentAttention(16, 2, head_dim=8, latent_dim=8, rope_dim=4)

    def call(x):
        with torch.no_grad():
            return mla(x, LatentCache(), absorbed=absorbed)

    return call


def latent_apis() -> list[Api]:
    """Latent attention."""
    return [
        Api(
            "LatentAttention",
            LatentAttention,
            lambda: {
                "embed_dim": 16,
                "num_heads": 2,
                "head_dim": 8,
                "latent_dim": 8,
                "rope_dim": 4,
            },  # fmt: skip
            {"latent_dim": ("latent_dim", "rope_dim"), "rope_dim": ("rope_dim",)},
        ),
        Api(
            "LatentAttention.forward",
            _latent_forward(False),
            lambda: {"x": torch.randn(2, 5, 16)},
        ),  # fmt: skip
        Api(
            "LatentAttention.forward(absorbed)",
            _latent_forward(True),
            lambda: {"x": torch.randn(2, 5, 16)},
        ),  # fmt: skip
    ]


def _qkv() -> dict[str, object]:
    return {"q": torch.randn(1, 2, 6, 4), "k": torch.randn(1, 2, 6, 4),
            "v": torch.randn(1, 2, 6, 4)}  # fmt: skip


def flex_apis() -> list[Api]:
    """The FlexAttention entry points."""
    return [
        Api(
            "flex_attend",
            lambda q, k, v: flex.flex_attend(q, k, v, mask_mod=flex.causal),
            _qkv,
        ),  # fmt: skip
        Api("sliding_window", flex.sliding_window, lambda: {"window": 3}),
        Api(
            "block_sparsity",
            flex.block_sparsity,
            lambda: {"mask_mod": flex.causal, "T": 256, "S": 256, "block_size": 128},
        ),  # fmt: skip
        Api(
            "dense_mask",
            flex.dense_mask,
            lambda: {"mask_mod": flex.causal, "T": 4, "S": 4},
        ),
    ]


def _tiny_decoder() -> CausalDecoder:
    torch.manual_seed(0)
    return CausalDecoder(DecoderConfig(12, 8, 2, 1, max_len=8, positions="rope")).eval()


def serving_apis() -> list[Api]:
    """Streaming, sink shares and the serving simulation."""
    model = _tiny_decoder()
    return [
        Api(
            "stream_losses",
            lambda ids, cache_size, sinks: stream_losses(
                model, ids, policy="sinks", cache_size=cache_size, sinks=sinks
            ),
            lambda: {"ids": torch.randint(0, 12, (2, 12)), "cache_size": 4, "sinks": 1},
        ),
        Api(
            "sink_shares",
            sink_shares,
            lambda: {
                "weights": [torch.full((1, 2, 4, 4), 0.25)],
                "first": 1,
                "skip": 1,
            },
            {"weights": ("weights", "weights[0]")},
        ),
        Api(
            "sample_requests",
            sample_requests,
            lambda: {"n": 5, "max_len": 64, "mean_output": 8, "seed": 0},
        ),  # fmt: skip
        Api(
            "simulate_serving",
            simulate_serving,
            lambda: {
                "requests": [(4, 3), (2, 5)],
                "capacity": 32,
                "max_len": 16,
                "reservation": "paged",
                "block_size": 4,
            },  # fmt: skip
            {
                "requests": ("requests", "requests[0]", "requests[1]"),
                "capacity": ("capacity", "block_size"),
            },  # fmt: skip
        ),
    ]


def figure_apis() -> list[Api]:
    """Chapter 17's figures."""

    def sequences():
        pool = BlockPool(16, 4, num_kv_heads=1, head_dim=2)
        a = PagedKVCache(pool)
        a.append(torch.zeros(1, 5, 2), torch.zeros(1, 5, 2))
        return [a]

    mla = LatentAttention(16, 2, head_dim=8, latent_dim=8, rope_dim=4)
    return [
        Api("ring_buffer", diagrams.ring_buffer, lambda: {"window": 3, "tokens": 5}),
        Api(
            "sink_window",
            diagrams.sink_window,
            lambda: {"sinks": 1, "window": 2, "tokens": 5},
        ),  # fmt: skip
        Api("block_table", diagrams.block_table, lambda: {"sequences": sequences()}),
        Api(
            "latent_data_flow",
            diagrams.latent_data_flow,
            lambda: {"module": mla, "x": torch.randn(1, 3, 16)},
        ),  # fmt: skip
    ]


def inference_apis() -> list[Api]:
    return [
        *cache_apis(),
        *latent_apis(),
        *flex_apis(),
        *serving_apis(),
        *figure_apis(),
    ]
