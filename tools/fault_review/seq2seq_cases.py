"""Cases for the date translator of chapter 16 (mha_book.seq2seq)."""

from __future__ import annotations

import datetime

import torch

from mha_book.seq2seq.dates import date_split, date_vocabulary, render_date
from mha_book.seq2seq.measures import silenced, translate
from mha_book.seq2seq.translator import Translator, TranslatorConfig, encode_texts
from tools.fault_review.outcomes import Api


def _silenced_forward(model: Translator):
    def call(heads, src):
        with silenced(model, heads):
            return model(src, torch.tensor([[1, 5]]))[0]

    return call


def _config_arguments() -> dict[str, object]:
    return {"vocab_size": 20, "embed_dim": 16, "num_heads": 4, "bottleneck": False}


def data_apis() -> list[Api]:
    """The dates, their split and their ids."""
    vocab = date_vocabulary()
    return [
        Api(
            "render_date",
            render_date,
            lambda: {"date": datetime.date(2026, 12, 2), "fmt": "zh_words"},
        ),
        Api("date_split", date_split, lambda: {"test_every": 10, "seed": 0}),
        Api(
            "encode_texts",
            lambda texts: encode_texts(texts, vocab),
            lambda: {"texts": ["2026年12月2日", "Dec. 2, 2026"]},
            {"texts": ("texts", "texts[0]", "texts[1]")},
        ),
    ]


def model_apis() -> list[Api]:
    """The model, its decoding and its silenced heads."""
    vocab = date_vocabulary()
    model = Translator(TranslatorConfig(len(vocab), embed_dim=16)).eval()
    return [
        Api(
            "TranslatorConfig",
            lambda vocab_size, embed_dim, num_heads, bottleneck: TranslatorConfig(
                vocab_size, embed_dim, num_heads, bottleneck=bottleneck
            ),
            _config_arguments,
            {"num_heads": ("num_heads", "embed_dim")},
        ),
        Api(
            "Translator.forward",
            model,
            lambda: {
                "src": torch.tensor([[5, 6, 7, 0]]),
                "tgt": torch.tensor([[1, 8]]),
            },
            {"src": ("src", "vocab_size"), "tgt": ("tgt", "vocab_size")},
        ),
        Api(
            "Translator.greedy",
            model.greedy,
            lambda: {"src": torch.tensor([[5, 6, 7]]), "steps": 4, "cached": True},
        ),
        Api(
            "translate",
            lambda sources: translate(model, sources, vocab),
            lambda: {"sources": ["2026年12月2日"]},
            {"sources": ("texts", "texts[0]", "sources")},
        ),
        Api(
            "silenced",
            _silenced_forward(model),
            lambda: {"heads": [(0, 1)], "src": torch.tensor([[5, 6]])},
            {"heads": ("heads", "layer", "head")},
        ),
    ]


def seq2seq_apis() -> list[Api]:
    return [*data_apis(), *model_apis()]
