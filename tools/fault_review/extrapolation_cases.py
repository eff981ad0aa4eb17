"""Cases for chapter 14's experiment, train short and test long
(mha_book.lm.extrapolation), at a size that trains in a moment."""

from __future__ import annotations

import torch

from mha_book.lm.extrapolation import train_short_test_long
from tools.fault_review.outcomes import Api


def extrapolation_apis() -> list[Api]:
    ids = torch.randint(0, 11, (200,), generator=torch.Generator().manual_seed(0))
    return [
        Api(
            "train_short_test_long",
            train_short_test_long,
            lambda: {
                "train_ids": ids.clone(),
                "val_ids": ids[:80].clone(),
                "vocab_size": 11,
                "schemes": ("alibi",),
                "train_len": 8,
                "factors": (1, 2),
                "embed_dim": 8,
                "num_heads": 2,
                "num_layers": 1,
                "steps": 2,
                "batch_size": 2,
                "lr": 1e-2,
                "seed": 0,
            },
        ),
    ]
