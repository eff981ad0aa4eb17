"""Cases for the figures drawn from the caller's tensors, modules and sizes
(mha_book.viz.diagrams), and for what a page shows beside them: the
explorer's payload, the shape table and the book's language."""

from __future__ import annotations

import torch

import mha_book
from mha_book.attention.trace import ShapeTrace
from mha_book.book import book_language
from mha_book.models.layers import DecoderLayer, EncoderLayer
from mha_book.viz import diagrams
from mha_book.viz.explorer import AttentionExplorer, explore
from tools.fault_review.outcomes import Api

_FORWARD = {
    "query": ("query", "embed_dim"),
    "key": ("key",),
    "value": ("value",),
    "module": ("module",),
}


def tensor_figure_apis() -> list[Api]:
    """The figures of a computation on tensors: scores, tiles, head splits."""

    def qkv() -> dict[str, object]:
        return {"q": torch.randn(3, 4), "k": torch.randn(4, 4), "v": torch.randn(4, 2)}

    return [
        Api("attention_matrices", diagrams.attention_matrices, qkv),
        Api(
            "online_softmax_tiles",
            diagrams.online_softmax_tiles,
            lambda: {**qkv(), "block_size": 2, "row": 1},
        ),
        Api(
            "head_split_layout",
            diagrams.head_split_layout,
            lambda: {"x": torch.randn(1, 3, 4), "num_heads": 2},
        ),
    ]


def module_figure_apis() -> list[Api]:
    """The figures of a layer's forward pass: data flow, heads, cache, blocks."""
    mha = mha_book.MultiHeadAttention(8, 2).eval()
    gqa = mha_book.MultiHeadAttention(16, 4, num_kv_heads=2).eval()
    encoder, decoder = EncoderLayer(8, 2, 16).eval(), DecoderLayer(8, 2, 16).eval()
    return [
        Api(
            "mha_data_flow",
            diagrams.mha_data_flow,
            lambda: {"module": mha, "query": torch.randn(1, 3, 8)},
            _FORWARD,
        ),
        Api(
            "parallel_heads",
            diagrams.parallel_heads,
            lambda: {"module": mha, "query": torch.randn(1, 3, 8)},
            _FORWARD,
        ),
        Api(
            "kv_cache_growth",
            diagrams.kv_cache_growth,
            lambda: {"module": gqa, "x": torch.randn(1, 3, 16)},
            {"x": ("x", "query", "embed_dim")},
        ),
        Api(
            "attention_patterns",
            diagrams.attention_patterns,
            lambda: {
                "encoder": encoder,
                "decoder": decoder,
                "src": torch.randn(1, 3, 8),
                "tgt": torch.randn(1, 2, 8),
                "src_mask": mha_book.padding_mask([2], 3),
            },
            {"src_mask": ("src_mask", "key_padding_mask", "mask")},
        ),
    ]


def sized_figure_apis() -> list[Api]:
    """The figures drawn from sizes alone."""
    return [
        Api("causal_alignment", diagrams.causal_alignment, lambda: {"T": 3, "S": 7}),
        Api(
            "head_columns",
            diagrams.head_columns,
            lambda: {"features": 8, "num_heads": 2},
        ),
        Api(
            "kv_head_sharing",
            diagrams.kv_head_sharing,
            lambda: {"num_heads": 4, "num_kv_heads": [4, 2, 1]},
            {"num_kv_heads": ("num_kv_heads", "num_kv_heads[0]", "num_kv_heads[2]")},
        ),
        Api(
            "mask_broadcast",
            diagrams.mask_broadcast,
            lambda: {"lengths": [2, 3], "T": 3, "num_heads": 2},
        ),
        Api(
            "rotary_rotation",
            diagrams.rotary_rotation,
            lambda: {"head_dim": 8, "positions": 6, "pairs": [0, 1]},
        ),
    ]


def page_apis() -> list[Api]:
    """The explorer made from its payload, the shape table, the language."""
    weights = torch.softmax(torch.randn(2, 2, 3, 3), dim=-1)  # (L, H, T, T)
    payload = explore(["a", "b", "c"], weights).payload
    return [
        Api(
            "AttentionExplorer",
            lambda payload: AttentionExplorer(payload)._repr_html_(),
            lambda: {"payload": dict(payload)},
        ),
        Api(
            "ShapeTrace",
            lambda rows, sizes: str(ShapeTrace(rows, sizes)),
            lambda: {
                "rows": [
                    ("query", "(B, T, E)", (2, 5, 8)),
                    ("heads", "(B, H, T, D)", (2, 2, 5, 4)),
                ],
                "sizes": {"B": 2, "T": 5},
            },
            {"rows": ("rows", "rows[0]", "rows[1]"), "sizes": ("sizes", "sizes['B']")},
        ),
        Api("book_language", book_language, lambda: {"default": "en"}),
    ]


def diagram_apis() -> list[Api]:
    return [
        *tensor_figure_apis(),
        *module_figure_apis(),
        *sized_figure_apis(),
        *page_apis(),
    ]
