"""Cases for the pieces the chapters take apart: the online-softmax step of
chapter 12, the shape trace of chapter 3, the decoder-only block, the FLOP
count, the figures drawn from parameters (mha_book.viz.diagrams), and a
measurement over seeds (mha_book.seeds)."""

from __future__ import annotations

import torch

import mha_book
from mha_book.attention.flash import online_softmax_update
from mha_book.attention.trace import trace_shapes
from mha_book.bench.timing import attention_flops
from mha_book.models.blocks import DecoderOnlyBlock
from mha_book.seeds import over_seeds
from mha_book.viz.diagrams.decoding import torch_is_causal_mask
from mha_book.viz.diagrams.positions import alibi_heads
from mha_book.viz.diagrams.registry import kernel_choice
from tools.fault_review.outcomes import Api


def parts_apis() -> list[Api]:
    block = DecoderOnlyBlock(12, 3, 24).eval()
    module = mha_book.MultiHeadAttention(12, 3).eval()
    stats = {"m": ("m", "l", "acc", "scores", "v")}
    for name in ("l", "acc", "scores", "v"):
        stats[name] = stats["m"]
    return [
        Api(
            "online_softmax_update",
            online_softmax_update,
            lambda: {
                "m": torch.full((3,), float("-inf")),
                "l": torch.zeros(3),
                "acc": torch.zeros(3, 5),
                "scores": torch.randn(3, 4),
                "v": torch.randn(4, 5),
            },
            stats,
        ),
        Api(
            "trace_shapes",
            lambda **kw: trace_shapes(module, **kw),
            lambda: {"query": torch.randn(2, 5, 12), "mask": mha_book.causal_mask(5)},
        ),
        Api(
            "DecoderOnlyBlock.forward",
            block,
            lambda: {"x": torch.randn(2, 5, 12), "mask": mha_book.causal_mask(5)},
        ),
        Api(
            "attention_flops",
            attention_flops,
            lambda: {"B": 2, "T": 5, "S": 7, "E": 12},
        ),
        Api("alibi_heads", alibi_heads, lambda: {"num_heads": 4, "T": 6}),
        Api("torch_is_causal_mask", torch_is_causal_mask, lambda: {"T": 3, "S": 5}),
        Api("kernel_choice", kernel_choice, lambda: {"tokens": 3}),
    ]


def measurement_apis() -> list[Api]:
    """A measurement over seeds: the function and the seeds it runs under."""
    return [
        Api(
            "over_seeds",
            over_seeds,
            lambda: {"measure": lambda seed: torch.rand(()).item(), "seeds": 3},
        ),
    ]
