"""Cases for positions: learned, rotary (RoPE), and the module with rope."""

from __future__ import annotations

import torch

import mha_book
from mha_book.attention.kv_cache import KVCache
from tools.fault_review.attention_cases import module_args
from tools.fault_review.outcomes import Api


def position_apis() -> list[Api]:
    """Learned and rotary positions, and the module with rope."""
    rope = mha_book.RotaryEmbedding(8, rotary_dim=4)
    rope_mha = mha_book.MultiHeadAttention(
        12, 3, num_kv_heads=1, rope=mha_book.RotaryEmbedding(4)
    )
    learned = mha_book.LearnedPositions(8, 6)
    x = torch.randn(2, 3, 5, 8)  # (B, H, T, D)
    return [
        *_learned_apis(learned),
        *_rotary_apis(rope, x),
        *_rope_module_apis(rope_mha),
    ]


def _learned_apis(learned: mha_book.LearnedPositions) -> list[Api]:
    return [
        Api(
            "LearnedPositions()",
            mha_book.LearnedPositions,
            lambda: {"max_len": 8, "embed_dim": 6},
        ),
        Api(
            "LearnedPositions.forward",
            learned,
            lambda: {"x": torch.randn(2, 5, 6), "offset": 2},
        ),
    ]


def _rotary_apis(rope: mha_book.RotaryEmbedding, x: torch.Tensor) -> list[Api]:
    """RotaryEmbedding and the functions under it, on ``x`` (B, H, T, D)."""
    return [
        Api(
            "RotaryEmbedding()",
            mha_book.RotaryEmbedding,
            lambda: {"head_dim": 8, "base": 10000.0, "rotary_dim": 4},
        ),
        Api(
            "RotaryEmbedding.__call__",
            rope,
            lambda: {"q": x.clone(), "k": x[:, :1].clone(), "offset": 2},
            {"q": ("q", "k"), "k": ("q", "k")},
        ),
        Api(
            "apply_rotary",
            mha_book.apply_rotary,
            lambda: {
                "x": x.clone(),
                "positions": torch.arange(5),
                "base": 10000.0,
                "rotary_dim": 4,
            },
            {"x": ("x",), "positions": ("positions",)},
        ),
        Api("rotate_half", mha_book.rotate_half, lambda: {"x": x.clone()}),
        Api(
            "rotary_frequencies",
            mha_book.rotary_frequencies,
            lambda: {"rotary_dim": 8, "base": 10000.0},
        ),
        Api(
            "rotary_cos_sin",
            mha_book.rotary_cos_sin,
            lambda: {"positions": torch.arange(5), "rotary_dim": 8, "base": 100.0},
        ),
    ]


def _rope_module_apis(rope_mha: mha_book.MultiHeadAttention) -> list[Api]:
    return [
        Api(
            "MultiHeadAttention.forward (rope)",
            rope_mha.eval(),
            lambda: module_args(mask=mha_book.causal_mask(5), need_weights=True),
            {a: ("query", "key", "value") for a in ("query", "key", "value")},
        ),
        Api(
            "MultiHeadAttention.forward_step (rope)",
            lambda **kw: rope_mha.forward_step(kv_cache=KVCache(), **kw),
            lambda: {"x": torch.randn(2, 5, 12), "need_weights": True},
        ),
    ]
