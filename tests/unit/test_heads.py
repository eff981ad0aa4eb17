"""Tests for mha_book.attention.heads."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_book.attention.heads import merge_heads, split_heads


def test_split_shape_and_is_a_view():
    x = torch.randn(2, 5, 12)
    h = split_heads(x, 3)
    assert h.shape == (2, 3, 5, 4)
    assert h.data_ptr() == x.data_ptr()


def test_head_h_owns_features_h_times_d():
    x = torch.arange(2 * 5 * 12.0).view(2, 5, 12)
    h = split_heads(x, 3)
    for head in range(3):
        assert torch.equal(h[:, head], x[..., head * 4 : (head + 1) * 4])


@settings(max_examples=25, deadline=None)
@given(
    B=st.integers(1, 3), T=st.integers(1, 6), H=st.integers(1, 5), D=st.integers(1, 5)
)
def test_round_trips(B, T, H, D):
    x = torch.randn(B, T, H * D)
    assert torch.equal(merge_heads(split_heads(x, H)), x)
    y = torch.randn(B, H, T, D)
    assert torch.equal(split_heads(merge_heads(y), H), y)
    assert merge_heads(y).shape == (B, T, H * D)


def test_merge_of_non_contiguous_input():
    y = torch.randn(2, 5, 3, 4).transpose(1, 2)  # (B, H, T, D) as a view
    assert torch.equal(merge_heads(y), y.transpose(1, 2).reshape(2, 5, 12))


@pytest.mark.parametrize(
    "x, num_heads, exc, match",
    [
        (
            torch.zeros(2, 5, 10),
            3,
            ValueError,
            r"x's last dim E must be divisible by num_heads, got E = 10 and num_heads = 3",
        ),
        (
            torch.zeros(5, 12),
            3,
            ValueError,
            r"x must have shape \(B, T, E\) \(3 dims\), got shape \(5, 12\)",
        ),
        (
            torch.zeros(2, 5, 12),
            0,
            ValueError,
            r"num_heads must be a positive int, got 0",
        ),
        (
            torch.zeros(2, 5, 12),
            2.0,
            TypeError,
            r"num_heads must be a positive int, got float",
        ),
        ([[1.0]], 1, TypeError, r"x must be a torch.Tensor, got list"),
    ],
)
def test_split_errors(x, num_heads, exc, match):
    with pytest.raises(exc, match=match):
        split_heads(x, num_heads)


@pytest.mark.parametrize(
    "x, exc, match",
    [
        (
            torch.zeros(2, 5, 12),
            ValueError,
            r"x must have shape \(B, H, T, D\) \(4 dims\), got shape \(2, 5, 12\)",
        ),
        ("x", TypeError, r"x must be a torch.Tensor, got str"),
    ],
)
def test_merge_errors(x, exc, match):
    with pytest.raises(exc, match=match):
        merge_heads(x)
