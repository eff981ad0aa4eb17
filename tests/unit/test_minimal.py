"""The one-screen module of chapter 04 equals PyTorch's and the package's."""

import pytest
import torch
from torch import nn

from mha_book import MultiHeadAttention, causal_mask, flip_mask_convention
from mha_book.attention.minimal import MinimalMultiHeadAttention


def three_modules(E=32, H=4):
    torch.manual_seed(0)
    reference = nn.MultiheadAttention(E, H, batch_first=True, dtype=torch.float64)
    ours = MultiHeadAttention.from_torch(reference).eval()
    minimal = MinimalMultiHeadAttention(E, H).double()
    minimal.load_state_dict(ours.state_dict(), strict=True)  # the same four layers
    return reference.eval(), ours, minimal.eval()


@pytest.mark.parametrize("masked", [False, True])
def test_equals_nn_multihead_attention_and_the_package_module(masked):
    reference, ours, minimal = three_modules()
    x = torch.randn(2, 6, 32, dtype=torch.float64)
    memory = torch.randn(2, 9, 32, dtype=torch.float64)
    key = x if masked else memory
    mask = causal_mask(6) if masked else None  # True = may attend
    out, weights = minimal(x, key, key, mask)
    ref_out, ref_weights = reference(
        x,
        key,
        key,
        attn_mask=None if mask is None else flip_mask_convention(mask),
        need_weights=True,
        average_attn_weights=False,
    )
    torch.testing.assert_close(out, ref_out, rtol=0, atol=1e-12)
    torch.testing.assert_close(weights, ref_weights, rtol=0, atol=1e-12)
    our_out, our_weights = ours(x, key, key, mask)
    torch.testing.assert_close(out, our_out, rtol=0, atol=1e-12)
    torch.testing.assert_close(weights, our_weights, rtol=0, atol=1e-12)


def test_a_fully_masked_query_is_nan_here_and_zero_in_the_production_module():
    _, ours, minimal = three_modules()
    x = torch.randn(1, 3, 32, dtype=torch.float64)
    mask = torch.ones(3, 3, dtype=torch.bool)
    mask[1] = False  # query 1 may attend no key
    assert minimal(x, x, x, mask)[1][:, :, 1].isnan().all()
    assert (ours(x, x, x, mask)[1][:, :, 1] == 0).all()


def test_heads_must_divide_the_embedding():
    with pytest.raises(ValueError, match="num_heads must divide embed_dim"):
        MinimalMultiHeadAttention(10, 4)
