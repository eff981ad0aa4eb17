"""Cases for mha_book.models, mha_book.lm and mha_book.viz."""

from __future__ import annotations

import torch

import mha_book
from mha_book.lm import charlm, training
from tools.fault_review.outcomes import Api


def small_decoder() -> mha_book.CausalDecoder:
    torch.manual_seed(0)
    return mha_book.CausalDecoder(mha_book.DecoderConfig(11, 8, 2, 1, 16)).eval()


def layer_apis() -> list[Api]:
    """The encoder and decoder layers, and the sinusoidal positions."""
    encoder = mha_book.EncoderLayer(12, 3, 24).eval()
    decoder_layer = mha_book.DecoderLayer(12, 3, 24).eval()
    return [
        Api(
            "EncoderLayer.forward",
            encoder,
            lambda: {"x": torch.randn(2, 5, 12), "mask": mha_book.causal_mask(5)},
        ),
        Api(
            "DecoderLayer.forward",
            decoder_layer,
            lambda: {
                "x": torch.randn(2, 5, 12),
                "memory": torch.randn(2, 7, 12),
                "self_mask": mha_book.causal_mask(5),
                "memory_mask": torch.ones(2, 1, 1, 7, dtype=torch.bool),
            },
            {"x": ("x", "memory"), "memory": ("x", "memory")},
        ),
        Api(
            "sinusoidal_positions",
            mha_book.sinusoidal_positions,
            lambda: {"max_len": 8, "embed_dim": 6},
        ),
    ]


def decoder_apis(decoder: mha_book.CausalDecoder) -> list[Api]:
    """DecoderConfig and CausalDecoder: construction, forward, generate."""
    ids = torch.randint(0, 11, (2, 6))  # (B, T)
    return [
        Api(
            "DecoderConfig()",
            mha_book.DecoderConfig,
            lambda: {
                "vocab_size": 11,
                "embed_dim": 8,
                "num_heads": 2,
                "num_layers": 1,
                "max_len": 16,
                "dropout": 0.1,
                "positions": "learned",
            },
        ),
        Api(
            "CausalDecoder()",
            mha_book.CausalDecoder,
            lambda: {"config": mha_book.DecoderConfig(11, 8, 2, 1, 16)},
        ),
        Api(
            "CausalDecoder.forward",
            decoder,
            lambda: {"idx": ids.clone(), "need_weights": True},
        ),
        Api(
            "CausalDecoder.generate",
            decoder.generate,
            lambda: {"idx": ids.clone(), "max_new_tokens": 3, "temperature": 0.8},
        ),
    ]


def tokenizer_apis(tokenizer: mha_book.CharTokenizer) -> list[Api]:
    """The character tokenizer, both ways."""
    return [
        Api(
            "CharTokenizer.encode",
            tokenizer.encode,
            lambda: {"text": "abc"},
        ),
        Api(
            "CharTokenizer.decode",
            tokenizer.decode,
            lambda: {"ids": torch.tensor([0, 1, 2])},
        ),
    ]


def lm_apis(
    decoder: mha_book.CausalDecoder, tokenizer: mha_book.CharTokenizer
) -> list[Api]:
    """Batches, loss, evaluation and sampling of the character LM."""
    corpus = torch.randint(0, 11, (200,))
    return [
        Api(
            "get_batch",
            charlm.get_batch,
            lambda: {"ids": corpus.clone(), "batch_size": 4, "block_size": 8},
        ),
        Api(
            "evaluate",
            lambda **kw: charlm.evaluate(decoder, **kw),
            lambda: {"ids": corpus.clone(), "block_size": 8, "batch_size": 4},
        ),
        Api(
            "lm_loss",
            charlm.lm_loss,
            lambda: {
                "logits": torch.randn(2, 6, 11),
                "targets": torch.randint(0, 11, (2, 6)),
            },
            {"logits": ("logits", "targets"), "targets": ("logits", "targets")},
        ),
        Api(
            "split_ids",
            charlm.split_ids,
            lambda: {"ids": corpus.clone(), "val_fraction": 0.1},
        ),
        Api(
            "sample",
            lambda **kw: training.sample(decoder, tokenizer, **kw),
            lambda: {"prompt": "ab", "num_chars": 3, "temperature": 0.8},
        ),
    ]


def viz_apis() -> list[Api]:
    """The attention heatmap and the explorer."""
    return [
        Api(
            "plot_attention",
            mha_book.plot_attention,
            lambda: {"weights": torch.rand(2, 3, 3), "ncols": 2},
        ),
        Api(
            "explore",
            mha_book.explore,
            lambda: {
                "tokens": ["a", "b", "c"],
                "attentions": torch.softmax(torch.randn(2, 3, 3, 3), dim=-1),
                "title": "t",
                "layer": 1,
                "head": 2,
            },
        ),
    ]
