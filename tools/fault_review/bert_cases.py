"""Cases for the BERT encoder's front door (mha_book.models.bert), on a small
random configuration: the checks do not need the pretrained weights."""

from __future__ import annotations

import torch

from mha_book.models.bert import BertConfig, BertEncoder
from tools.fault_review.outcomes import Api


def bert_apis() -> list[Api]:
    config = BertConfig(
        vocab_size=11,
        hidden_size=8,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=16,
        max_position_embeddings=16,
        type_vocab_size=2,
        layer_norm_eps=1e-12,
    )
    encoder = BertEncoder(config).eval()
    return [
        Api(
            "BertEncoder.forward",
            encoder,
            lambda: {
                "input_ids": torch.randint(0, 11, (2, 5)),
                "attention_mask": torch.ones(2, 5, dtype=torch.long),
                "token_type_ids": torch.zeros(2, 5, dtype=torch.long),
                "head_mask": torch.ones(2, 2),
            },
        ),
    ]
