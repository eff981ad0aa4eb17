"""Tests for mha_book.attention.masks."""

from contextlib import nullcontext

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_book.attention.masks import causal_mask, flip_mask_convention, padding_mask


def test_padding_mask_shape_values_and_broadcast():
    m = padding_mask(torch.tensor([1, 3, 0]), 4)
    assert m.dtype == torch.bool and m.shape == (3, 1, 1, 4)
    assert m[:, 0, 0].tolist() == [
        [True, False, False, False],
        [True, True, True, False],
        [False] * 4,
    ]
    assert torch.broadcast_shapes(m.shape, (3, 8, 5, 4)) == (3, 8, 5, 4)


def test_padding_mask_accepts_a_list_and_keeps_device():
    assert torch.equal(padding_mask([2, 1], 3), padding_mask(torch.tensor([2, 1]), 3))
    assert padding_mask(torch.tensor([2]), 3).device == torch.device("cpu")


@pytest.mark.parametrize(
    "lengths, max_len, exc, match",
    [
        (
            torch.tensor([1.0, 2.0]),
            3,
            TypeError,
            r"lengths must have an integer dtype, got torch.float32",
        ),
        (
            torch.tensor([[1, 2]]),
            3,
            ValueError,
            r"lengths must have shape \(B,\), got shape \(1, 2\)",
        ),
        (
            torch.tensor([1, 4]),
            3,
            ValueError,
            r"lengths must lie in \[0, max_len\] = \[0, 3\], got \[1, 4\]",
        ),
        (torch.tensor([-1]), 3, ValueError, r"lengths must lie in"),
        (
            torch.tensor([1]),
            -1,
            ValueError,
            r"max_len must be a non-negative int, got -1",
        ),
        (
            torch.tensor([1]),
            2.0,
            TypeError,
            r"max_len must be a non-negative int, got float",
        ),
    ],
)
def test_padding_mask_errors(lengths, max_len, exc, match):
    with pytest.raises(exc, match=match):
        padding_mask(lengths, max_len)


def test_causal_square_is_lower_triangle_and_matches_is_causal():
    assert torch.equal(causal_mask(5), torch.ones(5, 5, dtype=torch.bool).tril())
    q, k, v = (torch.randn(2, 3, 5, 4, dtype=torch.float64) for _ in range(3))
    a = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(5))
    b = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    assert (a - b).abs().max() < 1e-12


@pytest.mark.parametrize("T, S", [(1, 1), (2, 5), (5, 2), (3, 3), (4, 7), (0, 3)])
def test_causal_is_bottom_right_aligned(T, S):
    m = causal_mask(T, S)
    assert m.shape == (T, S) and m.dtype == torch.bool
    for i in range(T):
        for j in range(S):
            assert bool(m[i, j]) == (j <= i + (S - T))
    if T and S:
        from torch.nn.attention.bias import causal_lower_right

        with pytest.warns(UserWarning) if T > S else nullcontext():
            ref = causal_lower_right(T, S)._materialize()
        assert torch.equal(m, ref)


def test_causal_device_argument():
    assert causal_mask(2, device="cpu").device == torch.device("cpu")


@pytest.mark.parametrize(
    "args, exc, match",
    [
        ((-1,), ValueError, r"T must be a non-negative int, got -1"),
        ((True,), TypeError, r"T must be a non-negative int, got bool"),
        ((3, 2.5), TypeError, r"S must be a non-negative int, got float"),
    ],
)
def test_causal_errors(args, exc, match):
    with pytest.raises(exc, match=match):
        causal_mask(*args)


def test_masks_combine_with_and():
    m = padding_mask(torch.tensor([2, 4]), 4) & causal_mask(3, 4)
    assert m.shape == (2, 1, 3, 4) and m.dtype == torch.bool
    assert m[0, 0].tolist() == [[True, True, False, False]] * 3
    assert m[1, 0].tolist() == causal_mask(3, 4).tolist()


@settings(max_examples=25, deadline=None)
@given(T=st.integers(0, 6), S=st.integers(0, 6))
def test_flip_is_self_inverse(T, S):
    m = causal_mask(T, S)
    assert torch.equal(flip_mask_convention(flip_mask_convention(m)), m)
    assert not (flip_mask_convention(m) & m).any()


@pytest.mark.parametrize(
    "bad, exc, match",
    [
        (
            torch.zeros(2, 2),
            TypeError,
            r"mask must have dtype torch.bool, got torch.float32",
        ),
        ([[True]], TypeError, r"mask must be a torch.Tensor, got list"),
    ],
)
def test_flip_errors(bad, exc, match):
    with pytest.raises(exc, match=match):
        flip_mask_convention(bad)


def test_flip_converts_to_multihead_attention_convention():
    torch.manual_seed(0)
    mha = torch.nn.MultiheadAttention(
        8, 2, batch_first=True, dtype=torch.float64
    ).eval()
    x = torch.randn(2, 4, 8, dtype=torch.float64)
    ours = padding_mask(torch.tensor([2, 4]), 4)
    _, w = mha(
        x,
        x,
        x,
        key_padding_mask=flip_mask_convention(ours)[:, 0, 0, :],
        attn_mask=flip_mask_convention(causal_mask(4)),
        average_attn_weights=False,
    )
    allowed = (ours & causal_mask(4)).expand(2, 2, 4, 4)
    assert torch.all(w[~allowed] == 0) and torch.all(w[allowed] > 0)
