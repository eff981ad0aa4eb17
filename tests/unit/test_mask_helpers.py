"""Tests for mha_book.attention.mask_helpers: sliding window and padded causal masks."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_book.attention.mask_helpers import padded_causal_mask, sliding_window_mask
from mha_book.attention.masks import causal_mask
from mha_book.attention.mha import MultiHeadAttention

F64 = torch.float64


def window_by_loops(T, window, S):
    mask = torch.zeros(T, S, dtype=torch.bool)
    for i in range(T):
        position = i + S - T  # the query's position among the keys
        for j in range(S):
            mask[i, j] = position - window < j <= position
    return mask


@settings(max_examples=60, deadline=None)
@given(T=st.integers(0, 9), S=st.integers(0, 9), window=st.integers(1, 11))
def test_sliding_window_against_loops(T, S, window):
    mask = sliding_window_mask(T, window, S)
    assert mask.dtype == torch.bool and mask.shape == (T, S)
    assert torch.equal(mask, window_by_loops(T, window, S))


def test_sliding_window_defaults_and_limits():
    assert torch.equal(sliding_window_mask(5, 5), causal_mask(5))  # window >= S
    assert torch.equal(sliding_window_mask(4, 1), torch.eye(4, dtype=torch.bool))
    assert sliding_window_mask(3, 2, device="cpu").device.type == "cpu"


def padded_by_loops(lengths, max_len, side):
    mask = torch.zeros(len(lengths), 1, max_len, max_len, dtype=torch.bool)
    for b, n in enumerate(lengths):
        first = 0 if side == "right" else max_len - n  # the first real token
        for i in range(first, first + n):
            for j in range(first, i + 1):
                mask[b, 0, i, j] = True
    return mask


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    max_len=st.integers(0, 8),
    side=st.sampled_from(["left", "right"]),
)
def test_padded_causal_mask_against_loops(data, max_len, side):
    lengths = data.draw(st.lists(st.integers(0, max_len), min_size=1, max_size=4))
    mask = padded_causal_mask(torch.tensor(lengths), max_len, side)
    assert mask.dtype == torch.bool and mask.shape == (
        len(lengths),
        1,
        max_len,
        max_len,
    )
    assert torch.equal(mask, padded_by_loops(lengths, max_len, side))


def test_padding_query_rows_attend_nothing():
    mask = padded_causal_mask([2, 4], 4, side="left")
    assert not mask[0, 0, :2].any()  # the two padding queries of sequence 0
    assert mask[0, 0, 2:].any(-1).all() and mask[1, 0].any(-1).all()


@pytest.mark.parametrize("side", ["left", "right"])
def test_padded_batch_equals_each_sequence_alone(side):
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2).to(F64).eval()
    lengths, max_len = [3, 6, 1], 6
    x = torch.randn(3, max_len, 8, dtype=F64)
    out, _ = mha(x, x, x, padded_causal_mask(lengths, max_len, side))
    for b, n in enumerate(lengths):
        real = slice(0, n) if side == "right" else slice(max_len - n, max_len)
        alone, _ = mha(x[b : b + 1, real], *[x[b : b + 1, real]] * 2, causal_mask(n))
        assert (out[b : b + 1, real] - alone).abs().max() <= 1e-12
        padding = torch.ones(max_len, dtype=torch.bool)
        padding[real] = False
        # padding queries are fully masked: zero context, so only out_proj's bias
        assert torch.equal(
            out[b, padding], mha.out_proj.bias.expand(int(padding.sum()), 8)
        )


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (
            lambda: sliding_window_mask(4, 0),
            ValueError,
            r"window must be a positive int, got 0",
        ),
        (
            lambda: sliding_window_mask(4, 1.5),
            TypeError,
            r"window must be a positive int, got float",
        ),
        (
            lambda: sliding_window_mask(-1, 2),
            ValueError,
            r"T must be a non-negative int, got -1",
        ),
        (
            lambda: padded_causal_mask([1, 2], 3, side="middle"),
            ValueError,
            r"side must be 'left' or 'right', got 'middle'",
        ),
        (
            lambda: padded_causal_mask([1, 4], 3),
            ValueError,
            r"lengths must lie in \[0, max_len\] = \[0, 3\], got \[1, 4\]",
        ),
        (
            lambda: padded_causal_mask(torch.tensor([1.0]), 3),
            TypeError,
            r"lengths must have an integer dtype",
        ),
    ],
)
def test_bad_input_names_the_argument(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
