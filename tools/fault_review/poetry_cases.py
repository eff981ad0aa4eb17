"""Cases for the poetry helpers of chapter 15 (mha_book.lm.poetry)."""

from __future__ import annotations

import torch

import mha_book
from mha_book.lm import ngram, poetry
from tools.fault_review.outcomes import Api

QUATRAIN = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"


def poetry_apis(decoder: mha_book.CausalDecoder) -> list[Api]:
    """Verse checks, shares, the bigram baseline, sampling and the offset profile
    (``decoder``: a model of 11 tokens; the poems' tokenizer has a newline)."""
    tokenizer = mha_book.CharTokenizer("\n春风花草香江山丽迟日")  # 11 characters
    ids = torch.randint(0, 11, (200,))
    bigram = ngram.tuned_bigram(ids, vocab_size=11)
    return [
        Api("is_regular_verse", poetry.is_regular_verse, lambda: {"poem": QUATRAIN}),
        Api("form_share", poetry.form_share, lambda: {"poems": [QUATRAIN, "白日"]}),
        Api(
            "copy_share",
            poetry.copy_share,
            lambda: {"poems": [QUATRAIN], "corpus": [QUATRAIN, "白日"]},
        ),
        Api(
            "InterpolatedBigram()",
            ngram.InterpolatedBigram,
            lambda: {"ids": ids.clone(), "vocab_size": 11, "weight": 0.5},
        ),
        Api(
            "tuned_bigram",
            ngram.tuned_bigram,
            lambda: {"train_ids": ids.clone(), "vocab_size": 11},
        ),
        Api("InterpolatedBigram.loss", bigram.loss, lambda: {"ids": ids[:50].clone()}),
        Api(
            "generate_poems",
            lambda **kw: poetry.generate_poems(decoder, tokenizer, **kw),
            lambda: {"num": 2, "temperature": 0.8, "seed": 0, "max_chars": 6},
        ),
        Api(
            "offset_profile",
            lambda weights, max_offset: poetry.offset_profile([weights], max_offset),
            lambda: {
                "weights": torch.softmax(torch.randn(2, 3, 8, 8), dim=-1),
                "max_offset": 3,
            },
            {"weights": ("weights", "weights[0]")},
        ),
    ]
