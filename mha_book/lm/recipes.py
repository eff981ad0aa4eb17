"""The book's two trained character models, as their chapters train them.

Chapter 17-inference reads the trained decoders of chapter 10 (Shakespeare,
learned positions) and chapter 15 (Tang poems, RoPE) again. These functions
repeat those pages' data preparation and training calls argument for argument,
so that with ``MHA_BOOK_ARTIFACTS`` set (the book's build sets it) the
artifact cache (:mod:`mha_book.lm.artifacts`) serves the stored runs instead
of training again. The pages keep their own cells, which teach the steps;
change one and its recipe here together.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mha_book.lm.charlm import CharTokenizer, split_ids
from mha_book.lm.corpus import load_shakespeare, load_tang_poems
from mha_book.lm.history import TrainHistory
from mha_book.lm.training import torch_threads, train
from mha_book.models.decoder import CausalDecoder, DecoderConfig

__all__ = ["TrainedModel", "shakespeare_decoder", "tang_poem_decoder"]


@dataclass(frozen=True)
class TrainedModel:
    """A trained decoder with its tokenizer, data and history."""

    model: CausalDecoder
    tokenizer: CharTokenizer
    train_ids: torch.Tensor
    val_ids: torch.Tensor
    history: TrainHistory


def _trained(config: DecoderConfig, train_ids, val_ids, **budget) -> tuple:
    torch.manual_seed(0)
    model = CausalDecoder(config)
    with torch_threads(2):
        history = train(
            model,
            train_ids,
            val_ids=val_ids,
            block_size=64,
            lr=1e-2,
            seed=0,
            cache=True,
            **budget,
        )
    return model.eval(), history


def shakespeare_decoder() -> TrainedModel:
    """Chapter 10's model: 3 layers of 4 heads, E = 48, learned positions.

    Trained 800 steps of 24 windows of 64 characters (about 12 s on two
    threads when no stored run exists).
    """
    text = load_shakespeare()
    tok = CharTokenizer.from_text(text)
    train_ids, val_ids = split_ids(tok.encode(text), val_fraction=0.1)
    config = DecoderConfig(
        vocab_size=tok.vocab_size, embed_dim=48, num_heads=4, num_layers=3, max_len=64
    )
    model, history = _trained(
        config, train_ids, val_ids, steps=800, batch_size=24, eval_every=80
    )
    return TrainedModel(model, tok, train_ids, val_ids, history)


def tang_poem_decoder() -> TrainedModel:
    """Chapter 15's model: 2 layers of 4 heads, E = 48, RoPE.

    Trained 600 steps of 16 windows of 64 characters of five-character verse,
    one poem per line; the last twentieth of the poems is held out.
    """
    poems = load_tang_poems()
    n_val = len(poems) // 20
    tok = CharTokenizer.from_text("\n".join(poems) + "\n")
    train_ids = tok.encode("\n".join(poems[:-n_val]) + "\n")  # (N,)
    val_ids = tok.encode("\n".join(poems[-n_val:]) + "\n")  # (M,)
    config = DecoderConfig(tok.vocab_size, 48, 4, 2, max_len=64, positions="rope")
    model, history = _trained(
        config,
        train_ids,
        val_ids,
        steps=600,
        batch_size=16,
        eval_every=150,
        eval_windows=64,
    )
    return TrainedModel(model, tok, train_ids, val_ids, history)
