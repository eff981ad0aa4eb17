"""The diagrams draw what the code computes (mha_book.diagrams)."""

import pytest
import torch

from mha_book.diagrams import (
    causal_alignment,
    kv_cache_growth,
    kv_head_sharing,
    torch_is_causal_mask,
)
from mha_book.masks import causal_mask
from mha_book.plot import smallest_text_pt


@pytest.mark.parametrize("T,S", [(1, 1), (3, 7), (5, 5), (6, 2)])
def test_pytorch_is_causal_is_the_top_left_triangle(T, S):
    top_left = torch.ones(T, S, dtype=torch.bool).tril()
    assert torch.equal(torch_is_causal_mask(T, S), top_left)
    assert torch.equal(torch_is_causal_mask(T, S), causal_mask(T, S)) == (T == S)


def test_the_alignment_diagram_draws_both_masks_legibly():
    fig, masks = causal_alignment(3, 7)
    assert torch.equal(masks["bottom_right"], causal_mask(3, 7))
    assert torch.equal(masks["top_left"], torch_is_causal_mask(3, 7))
    assert smallest_text_pt(fig) >= 10


def test_the_sharing_diagram_follows_repeat_kv():
    fig, reads = kv_head_sharing(6, (6, 3, 2, 1))
    assert reads == {
        6: [0, 1, 2, 3, 4, 5],
        3: [0, 0, 1, 1, 2, 2],
        2: [0, 0, 0, 1, 1, 1],
        1: [0] * 6,
    }
    assert smallest_text_pt(fig) >= 10
    with pytest.raises(ValueError, match="num_kv_heads must divide num_heads = 6"):
        kv_head_sharing(6, (4,))


def test_the_cache_diagram_records_the_shapes_of_real_decoding():
    from mha_book.module import MultiHeadAttention

    mha = MultiHeadAttention(16, 4, num_kv_heads=2).eval()
    fig, shapes = kv_cache_growth(mha, torch.randn(3, 5, 16))
    assert shapes == [(3, 2, t + 1, 4) for t in range(5)]
    assert smallest_text_pt(fig) >= 10
