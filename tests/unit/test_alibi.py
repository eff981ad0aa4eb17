"""Tests for mha_book.attention.alibi: the paper's slopes and the end-aligned bias.

The cross-checks against Hugging Face's BLOOM import it themselves
(:func:`bloom`), so the rest runs without transformers installed.
"""

import pytest
import torch

from mha_book.attention.alibi import alibi_bias, alibi_slopes
from mha_book.attention.masks import causal_mask
from mha_book.attention.scaled_dot_product import scaled_dot_product_attention

F64 = torch.float64


def bloom():
    """Hugging Face's BLOOM module, or a skip where transformers is not installed."""
    return pytest.importorskip("transformers.models.bloom.modeling_bloom")


# The paper's recipe, worked out by hand (Press, Smith and Lewis, 2022):
# n a power of two: start = ratio = 2^(-8/n), slopes start·ratio^i, i = 0..n-1;
# otherwise the slopes of p = 2^floor(log2 n) heads, then every other slope of
# 2p heads (the 1st, 3rd, ...) until there are n.
EXPECTED = {
    8: [2.0**-k for k in range(1, 9)],  # 1/2, 1/4, ..., 1/256
    12: [2.0**-k for k in range(1, 9)]  # the 8 of 8 heads, then 16 heads' 2^(-k/2)
    + [2.0 ** (-k / 2) for k in (1, 3, 5, 7)],  # for k = 1, 3, 5, 7
    6: [2.0 ** (-2 * k) for k in range(1, 5)]  # 4 heads: 1/4, 1/16, 1/64, 1/256
    + [2.0**-1, 2.0**-3],  # then 8 heads' 1st and 3rd: 1/2, 1/8
}


@pytest.mark.parametrize("n", sorted(EXPECTED))
def test_slopes_follow_the_paper(n):
    slopes = alibi_slopes(n, dtype=F64)
    assert slopes.shape == (n,) and slopes.dtype == F64
    assert slopes.tolist() == pytest.approx(EXPECTED[n], rel=1e-15)


def test_eight_heads_are_halves():
    assert alibi_slopes(8, dtype=F64).tolist() == [1 / 2**k for k in range(1, 9)]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 8, 12, 16, 20, 32, 40, 64])
def test_slopes_equal_hugging_face_build_alibi_tensor(n):
    # build_alibi_tensor(attention_mask (B, S), num_heads, dtype) returns
    # (B·H, 1, S) holding slope_h · position_j, the positions counted over the
    # real tokens of attention_mask: with a mask of ones, position 1 gives the slope.
    ones = torch.ones(1, 2, dtype=torch.long)
    hf = bloom().build_alibi_tensor(ones, n, torch.float32)
    assert hf.shape == (n, 1, 2)
    torch.testing.assert_close(alibi_slopes(n), hf[:, 0, 1], rtol=1e-6, atol=0)


def test_bias_is_minus_slope_times_distance():
    H, T, S = 6, 3, 7
    bias, slopes = alibi_bias(H, T, S, dtype=F64), alibi_slopes(H, dtype=F64)
    assert bias.shape == (H, T, S) and bias.dtype == F64
    for h in range(H):
        for i in range(T):
            for j in range(S):
                distance = abs(i + S - T - j)  # query i sits at position i + S - T
                assert bias[h, i, j] == -slopes[h] * distance
    assert not torch.signbit(bias[:, :, -1][:, -1]).any()  # a 0 is +0, printed 0.0


def test_bias_rows_follow_the_cache():
    # the last T rows of the full (S, S) bias: what a KV cache of S - T keys needs
    full = alibi_bias(4, 9)
    for T in range(1, 10):
        assert torch.equal(alibi_bias(4, T, 9), full[:, -T:])


def test_softmax_matches_hugging_face_under_a_causal_mask():
    # HF adds slope · j, the paper's bias plus slope · i' per row: softmax ignores it
    torch.manual_seed(0)
    H, T = 8, 6
    q, k, v = (torch.randn(1, H, T, 4, dtype=F64) for _ in range(3))
    ones = torch.ones(1, T, dtype=torch.long)
    hf = bloom().build_alibi_tensor(ones, H, F64).view(1, H, 1, T)  # (B, H, 1, S)
    _, ours = scaled_dot_product_attention(
        q, k, v, causal_mask(T), bias=alibi_bias(H, T, dtype=F64)[None]
    )
    _, theirs = scaled_dot_product_attention(q, k, v, causal_mask(T), bias=hf)
    assert (ours - theirs).abs().max() <= 1e-12


def test_device_and_dtype():
    b = alibi_bias(2, 3, device="cpu", dtype=torch.float16)
    assert b.dtype == torch.float16 and b.device.type == "cpu"
    assert alibi_slopes(3, dtype=torch.bfloat16).dtype == torch.bfloat16


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (
            lambda: alibi_slopes(0),
            ValueError,
            r"num_heads must be a positive int, got 0",
        ),
        (lambda: alibi_slopes(2.5), TypeError, r"num_heads must be a positive int"),
        (
            lambda: alibi_bias(4, -1),
            ValueError,
            r"T must be a non-negative int, got -1",
        ),
        (lambda: alibi_bias(4, 2, "3"), TypeError, r"S must be a non-negative int"),
    ],
)
def test_bad_input_names_the_argument(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
