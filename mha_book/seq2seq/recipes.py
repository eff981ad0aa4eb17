"""Chapter 16's trained date translator, as its chapter trains it, and a
differentiable loss to score its heads with.

:func:`date_translator` repeats the data preparation and the training call of
the page 16-cross-attention argument for argument, so that with
``MHA_BOOK_ARTIFACTS`` set (the book's build sets it) the artifact cache
(:mod:`mha_book.lm.artifacts`) serves the stored run instead of training
again. That page trains with the notebook kernel's thread count, one in the
book's build, so this function trains on one thread too: the count is part of
what the cache records. Change the page and this recipe together.

Legend: B examples, T = 10 target characters, V vocabulary size.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn

from mha_book.lm.training import torch_threads
from mha_book.seq2seq.dates import (
    FORMATS,
    DateExample,
    date_split,
    date_vocabulary,
    render_date,
)
from mha_book.seq2seq.training import train_translator
from mha_book.seq2seq.translator import (
    START,
    Translator,
    TranslatorConfig,
    encode_texts,
)

__all__ = ["TrainedDates", "date_translator", "held_out_examples", "translator_loss"]


@dataclass(frozen=True)
class TrainedDates:
    """Chapter 16's trained translator with its vocabulary and dates.

    Example:
        >>> from dataclasses import fields
        >>> [f.name for f in fields(TrainedDates)]
        ['model', 'vocab', 'train_dates', 'test_dates']
    """

    model: Translator
    vocab: list[str]
    train_dates: list
    test_dates: list


def date_translator() -> TrainedDates:
    """Chapter 16's model: E = 64, 4 heads, 2 encoder layers and 1 decoder
    layer, trained 300 steps of 64 random dates in random formats (about
    30 s on one thread when no stored run exists).
    """
    train_dates, test_dates = date_split()
    vocab = date_vocabulary()
    config = TranslatorConfig(
        len(vocab), embed_dim=64, num_heads=4, encoder_layers=2, decoder_layers=1
    )
    with torch_threads(1):
        trained, _ = train_translator(
            config, train_dates, vocab, steps=300, batch_size=64
        )
    return TrainedDates(trained.model.eval(), vocab, train_dates, test_dates)


def held_out_examples(
    dates: Sequence, per_format: int = 100, seed: int = 0
) -> list[DateExample]:
    """``per_format`` dates drawn at random for each format, as chapter 16's
    test draws them (its exact-match share is over these examples).

    Example:
        >>> import datetime
        >>> days = [datetime.date(2000, 1, d) for d in range(1, 11)]
        >>> len(held_out_examples(days, 3)), len(FORMATS)
        (18, 6)
    """
    rng = random.Random(seed)
    return [
        render_date(d, fmt)
        for fmt in FORMATS
        for d in rng.sample(list(dates), per_format)
    ]


def translator_loss(
    model: Translator, examples: Sequence[DateExample], vocab: list[str]
) -> torch.Tensor:
    """The mean cross-entropy of the right target characters, read with
    teacher forcing: a differentiable loss (nats per character).

    Shape:
        - output: ``()``

    Example:
        >>> import datetime
        >>> vocab = date_vocabulary()
        >>> model = Translator(TranslatorConfig(len(vocab), embed_dim=16))
        >>> ex = [render_date(datetime.date(2026, 12, 2), "en_long")]
        >>> translator_loss(model, ex, vocab).shape
        torch.Size([])
    """
    src = encode_texts([ex.source for ex in examples], vocab)  # (B, S)
    tgt = encode_texts([ex.target for ex in examples], vocab)  # (B, T)
    tgt_in = torch.cat([torch.full_like(tgt[:, :1], START), tgt[:, :-1]], 1)
    logits, _ = model(src, tgt_in)  # (B, T, V)
    return nn.functional.cross_entropy(logits.flatten(0, 1), tgt.flatten())
