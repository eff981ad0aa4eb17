"""Cases for mha_book.attention: kernels, heads, masks, the module, the cache."""

from __future__ import annotations

import torch

import mha_book
from mha_book.attention.kv_cache import KVCache
from tools.fault_review.outcomes import Api


def _qkv(shape=(2, 3, 4, 8), dtype=torch.float32):
    torch.manual_seed(0)
    return {
        name: torch.randn(shape, dtype=dtype) for name in ("q", "k", "v")
    }  # (B, H, T, D) each


def module_args(**extra):
    torch.manual_seed(0)
    x = torch.randn(2, 5, 12)  # (B, T, E)
    return {"query": x, "key": x, "value": x, **extra}


def kernel_apis() -> list[Api]:
    """The three attention kernels: reference, fused and flash."""
    qkv_names = {a: ("q", "k", "v") for a in ("q", "k", "v")}
    return [
        Api(
            "scaled_dot_product_attention",
            mha_book.scaled_dot_product_attention,
            lambda: {
                **_qkv(),
                "mask": mha_book.causal_mask(4),
                "bias": torch.randn(4, 4),
                "dropout_p": 0.1,
                "scale": 0.5,
            },
            qkv_names,
        ),
        Api(
            "fused_attention",
            mha_book.fused_attention,
            lambda: {
                **_qkv(),
                "mask": mha_book.causal_mask(4),
                "bias": torch.randn(4, 4),
                "scale": 0.5,
            },
            qkv_names,
        ),
        Api(
            "flash_attention",
            mha_book.flash_attention,
            lambda: {
                **_qkv(),
                "mask": mha_book.causal_mask(4),
                "bias": torch.randn(4, 4),
                "block_size": 2,
                "scale": 0.5,
            },
            qkv_names,
        ),
    ]


def head_apis() -> list[Api]:
    """Splitting, merging and repeating heads."""
    return [
        Api(
            "split_heads",
            mha_book.split_heads,
            lambda: {"x": torch.randn(2, 5, 12), "num_heads": 3},
        ),
        Api(
            "merge_heads", mha_book.merge_heads, lambda: {"x": torch.randn(2, 3, 5, 4)}
        ),
        Api(
            "repeat_kv",
            mha_book.repeat_kv,
            lambda: {"x": torch.randn(2, 3, 5, 4), "n_rep": 2},
        ),
    ]


def mask_apis() -> list[Api]:
    """Masks, their helpers and ALiBi biases."""
    return [
        Api("causal_mask", mha_book.causal_mask, lambda: {"T": 4, "S": 6}),
        Api(
            "padding_mask",
            mha_book.padding_mask,
            lambda: {"lengths": [3, 5], "max_len": 5},
        ),
        Api(
            "sliding_window_mask",
            mha_book.sliding_window_mask,
            lambda: {"T": 4, "window": 2, "S": 6},
        ),
        Api(
            "padded_causal_mask",
            mha_book.padded_causal_mask,
            lambda: {"lengths": [3, 5], "max_len": 5, "side": "left"},
        ),
        Api("alibi_slopes", mha_book.alibi_slopes, lambda: {"num_heads": 6}),
        Api(
            "alibi_bias",
            mha_book.alibi_bias,
            lambda: {"num_heads": 4, "T": 3, "S": 5},
        ),
        Api(
            "flip_mask_convention",
            mha_book.flip_mask_convention,
            lambda: {"mask": mha_book.causal_mask(4)},
        ),
    ]


def module_apis() -> list[Api]:
    """MultiHeadAttention: construction, forward and one decoding step."""
    mha = mha_book.MultiHeadAttention(12, 3).eval()
    step_mha = mha_book.MultiHeadAttention(12, 3).eval()
    return [
        Api(
            "MultiHeadAttention()",
            mha_book.MultiHeadAttention,
            lambda: {
                "embed_dim": 12,
                "num_heads": 3,
                "num_kv_heads": 3,
                "dropout": 0.1,
                "kdim": 6,
                "vdim": 6,
            },
        ),
        Api(
            "MultiHeadAttention.forward",
            mha,
            lambda: module_args(
                mask=mha_book.causal_mask(5),
                key_mask=torch.ones(2, 5, dtype=torch.bool),
                bias=torch.randn(5, 5),
                need_weights=True,
            ),
            {a: ("query", "key", "value") for a in ("query", "key", "value")},
        ),
        Api(
            "MultiHeadAttention.forward_step",
            lambda **kw: step_mha.forward_step(kv_cache=KVCache(), **kw),
            lambda: {
                "x": torch.randn(2, 5, 12),
                "mask": mha_book.causal_mask(5),
                "key_mask": torch.ones(2, 5, dtype=torch.bool),
                "bias": torch.randn(5, 5),
                "need_weights": True,
            },
        ),
    ]


def cache_apis() -> list[Api]:
    """The KV cache and its size per token."""
    return [
        Api(
            "KVCache.update",
            lambda **kw: KVCache().update(**kw),
            lambda: {"k": torch.randn(2, 3, 1, 4), "v": torch.randn(2, 3, 1, 4)},
            {"k": ("k", "v"), "v": ("k", "v")},
        ),
        Api(
            "kv_cache_bytes_per_token",
            mha_book.kv_cache_bytes_per_token,
            lambda: {
                "num_layers": 2,
                "num_kv_heads": 4,
                "head_dim": 8,
                "bytes_per_element": 2,
            },
        ),
    ]
