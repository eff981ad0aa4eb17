"""Tests for mha_book.attention.flash: the tiled kernel against the explicit reference kernel."""

import math

import pytest
import torch
from attention_inputs import F64, random_qkv
from attention_inputs import random_mask as bernoulli_mask
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils._python_dispatch import TorchDispatchMode

from mha_book.attention.flash import flash_attention, online_softmax_update
from mha_book.attention.heads import repeat_kv
from mha_book.attention.masks import causal_mask, padding_mask
from mha_book.attention.scaled_dot_product import scaled_dot_product_attention


def qkv(B=2, H=3, T=5, S=7, D=4, Dv=6, **kwargs):
    return random_qkv(B, H, T, S, D, Dv, **kwargs)


def random_mask(shape, seed=0, empty_row=None):
    mask = bernoulli_mask(shape, keep=0.5, seed=seed)
    if empty_row is not None:
        mask[..., empty_row, :] = False  # this query sees no key at all
    return mask


def reference(q, k, v, mask=None, scale=None):
    return scaled_dot_product_attention(q, k, v, mask, scale=scale)[0]


# --- forward: same numbers as the reference kernel ---


@settings(max_examples=40, deadline=None)
@given(
    B=st.integers(1, 2),
    H=st.integers(1, 3),
    T=st.integers(1, 13),
    S=st.integers(1, 13),
    D=st.integers(1, 6),
    Dv=st.integers(1, 6),
    bq=st.integers(1, 8),
    bk=st.integers(1, 8),
    mask_kind=st.sampled_from(["none", "random", "causal", "padding"]),
    seed=st.integers(0, 2**16),
)
def test_property_matches_reference_float64(B, H, T, S, D, Dv, bq, bk, mask_kind, seed):
    q, k, v = qkv(B, H, T, S, D, Dv, seed=seed)
    mask = {
        "none": None,
        "random": random_mask((B, 1, T, S), seed),
        "causal": causal_mask(T, S),  # T > S leaves the first queries with no key
        "padding": padding_mask(
            torch.randint(
                0, S + 1, (B,), generator=torch.Generator().manual_seed(seed)
            ),
            S,
        ),
    }[mask_kind]
    out = flash_attention(q, k, v, mask, block_size=(bq, bk))
    ref = reference(q, k, v, mask)
    assert out.shape == (B, H, T, Dv)
    assert not out.isnan().any()
    assert (out - ref).abs().max() <= 1e-12


@pytest.mark.parametrize(
    "block_size", [1, 3, 4, 16, (4, 5), (7, 2)]
)  # some divide T=16/S=20, some not
def test_float32_within_1e5_relative(block_size):
    q, k, v = qkv(B=2, H=2, T=16, S=20, D=8, Dv=8, dtype=torch.float32, seed=3)
    mask = padding_mask(torch.tensor([20, 9]), 20) & causal_mask(16, 20)
    out = flash_attention(q, k, v, mask, block_size=block_size)
    ref = reference(q, k, v, mask)
    assert out.dtype == torch.float32
    assert (out - ref).abs().max() <= 1e-5 * ref.abs().max()
    # and no worse than the float32 reference itself, against float64
    ref64 = reference(q.double(), k.double(), v.double(), mask)
    assert (out.double() - ref64).abs().max() <= 4 * (
        ref.double() - ref64
    ).abs().max() + 1e-6


def test_larger_float32_sequence():
    q, k, v = qkv(B=1, H=2, T=300, S=257, D=32, Dv=32, dtype=torch.float32, seed=5)
    out = flash_attention(q, k, v, causal_mask(300, 257), block_size=64)
    ref = reference(q, k, v, causal_mask(300, 257))
    assert (out - ref).abs().max() <= 1e-5 * ref.abs().max()


def test_fully_masked_rows_are_zero_without_nan():
    q, k, v = qkv(T=6, S=5)
    mask = random_mask((2, 3, 6, 5), empty_row=2)
    mask[1] = False  # the whole second sequence sees nothing
    out = flash_attention(q, k, v, mask, block_size=2)
    assert torch.all(out[:, :, 2] == 0) and torch.all(out[1] == 0)
    assert not out.isnan().any()
    assert (out - reference(q, k, v, mask)).abs().max() <= 1e-12


def test_broadcast_leading_dims_rank_two_and_scale():
    q, _, _ = qkv(H=4, T=5, S=7)
    k, v = (
        torch.randn(2, 1, 7, 4, dtype=F64),
        torch.randn(2, 1, 7, 6, dtype=F64),
    )  # shared by heads
    assert (
        flash_attention(q, k, v, block_size=3) - reference(q, k, v)
    ).abs().max() <= 1e-12
    q2, k2, v2 = (
        torch.randn(5, 3, dtype=F64),
        torch.randn(9, 3, dtype=F64),
        torch.randn(9, 2, dtype=F64),
    )
    out = flash_attention(q2, k2, v2, causal_mask(5, 9), block_size=4, scale=0.7)
    assert out.shape == (5, 2)
    assert (
        out - reference(q2, k2, v2, causal_mask(5, 9), scale=0.7)
    ).abs().max() <= 1e-12


def test_mask_broadcast_over_heads_and_queries():
    q, k, v = qkv(T=9, S=11)
    for mask in (
        padding_mask(torch.tensor([4, 11]), 11),
        random_mask((11,)),
        random_mask((2, 1, 9, 11)),
    ):
        out = flash_attention(q, k, v, mask, block_size=(2, 3))
        assert (out - reference(q, k, v, mask)).abs().max() <= 1e-12


def test_inference_mode_and_no_grad():
    q, k, v = qkv()
    with torch.inference_mode():
        out = flash_attention(q, k, v, block_size=2)
    assert (out - reference(q, k, v)).abs().max() <= 1e-12


# --- backward: against autograd through the reference kernel ---


@pytest.mark.parametrize("block_size", [1, 2, (3, 2)])
def test_gradcheck_tiny_float64(block_size):
    q, k, v = qkv(B=1, H=2, T=3, S=4, D=2, Dv=3, requires_grad=True)
    mask = random_mask((1, 2, 3, 4), seed=1, empty_row=1)
    mask[..., 0, 0] = True  # keep one key in row 0
    fn = lambda q, k, v: flash_attention(q, k, v, mask, block_size=block_size)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (q, k, v))
    assert torch.autograd.gradcheck(
        lambda q, k, v: flash_attention(q, k, v, block_size=block_size), (q, k, v)
    )


@pytest.mark.parametrize(
    "mask_kind", ["none", "causal", "padding_causal", "random_empty"]
)
def test_gradients_match_reference(mask_kind):
    q, k, v = qkv(B=2, H=3, T=40, S=33, D=8, Dv=5, requires_grad=True, seed=7)
    mask = {
        "none": None,
        "causal": causal_mask(40, 33),
        "padding_causal": padding_mask(torch.tensor([33, 12]), 33)
        & causal_mask(40, 33),
        "random_empty": random_mask((2, 3, 40, 33), seed=2, empty_row=5),
    }[mask_kind]
    g = torch.randn(2, 3, 40, 5, dtype=F64)
    ours = torch.autograd.grad(
        flash_attention(q, k, v, mask, block_size=(16, 8)), (q, k, v), g
    )
    theirs = torch.autograd.grad(reference(q, k, v, mask), (q, k, v), g)
    for a, b in zip(ours, theirs):
        assert torch.isfinite(a).all()
        assert (a - b).abs().max() <= 1e-11


def test_gradients_of_fully_masked_rows_are_zero():
    q, k, v = qkv(T=6, S=3, requires_grad=True)
    out = flash_attention(
        q, k, v, causal_mask(6, 3), block_size=2
    )  # queries 0..2 see no key
    out.square().sum().backward()
    assert torch.all(q.grad[:, :, :3] == 0)
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()


def test_gradients_with_broadcast_keys():
    q, _, _ = qkv(H=4, requires_grad=True)
    k = torch.randn(2, 1, 7, 4, dtype=F64, requires_grad=True)
    v = torch.randn(2, 1, 7, 6, dtype=F64, requires_grad=True)
    ours = torch.autograd.grad(flash_attention(q, k, v, block_size=3).sum(), (q, k, v))
    theirs = torch.autograd.grad(reference(q, k, v).sum(), (q, k, v))
    for a, b in zip(ours, theirs):
        assert a.shape == b.shape and (a - b).abs().max() <= 1e-12


# --- memory: no (T, S) tensor is ever created, forward or backward ---


class _LargestTensor(TorchDispatchMode):
    """Largest storage (in elements) created while active; views of ``inputs`` do not count."""

    def __init__(self, *inputs):
        super().__init__()
        self.largest = 0
        self.inputs = {t.untyped_storage().data_ptr() for t in inputs}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if (
                isinstance(t, torch.Tensor)
                and t.untyped_storage().data_ptr() not in self.inputs
            ):
                self.largest = max(
                    self.largest, t.untyped_storage().nbytes() // t.element_size()
                )
        return out


def test_never_materialises_the_scores():
    T, S, D, bs = 256, 192, 4, 32
    q, k, v = (torch.randn(1, 1, n, D, requires_grad=True) for n in (T, S, S))
    mask = causal_mask(
        T, S
    )  # the input mask is (T, S), but only bool tiles are read from it
    with _LargestTensor(q, k, v, mask) as mode:
        out = flash_attention(q, k, v, mask, block_size=bs)
        out.sum().backward()
    assert mode.largest <= max(bs * bs, T * D)  # tiles and (T, D)-sized tensors only
    with _LargestTensor(q, k, v, mask) as mode:
        reference(q, k, v, mask)
    assert mode.largest >= T * S  # the reference holds the whole score matrix


# --- the update step on its own ---


@settings(max_examples=25, deadline=None)
@given(S=st.integers(1, 20), bk=st.integers(1, 7), seed=st.integers(0, 2**16))
def test_online_softmax_update_equals_softmax(S, bk, seed):
    g = torch.Generator().manual_seed(seed)
    s, v = (
        torch.randn(3, S, generator=g, dtype=F64) * 5,
        torch.randn(S, 2, generator=g, dtype=F64),
    )
    s[0, : S // 2] = -math.inf  # row 0: its first keys are masked
    m, l, acc = (
        torch.full((3,), -math.inf, dtype=F64),
        torch.zeros(3, dtype=F64),
        torch.zeros(3, 2, dtype=F64),
    )
    for j in range(0, S, bk):
        m, l, acc = online_softmax_update(m, l, acc, s[:, j : j + bk], v[j : j + bk])
    assert torch.equal(m, s.amax(-1))
    assert (l - torch.exp(s - m[:, None]).sum(-1)).abs().max() <= 1e-12
    assert (acc / l[:, None] - torch.softmax(s, -1) @ v).abs().max() <= 1e-12


def test_online_softmax_update_all_masked_tile_keeps_state():
    m, l, acc = torch.full((2,), -math.inf), torch.zeros(2), torch.zeros(2, 3)
    m, l, acc = online_softmax_update(
        m, l, acc, torch.full((2, 4), -math.inf), torch.randn(4, 3)
    )
    assert torch.all(m == -math.inf) and torch.all(l == 0) and torch.all(acc == 0)
    assert not any(t.isnan().any() for t in (m, l, acc))


# --- errors ---


@pytest.mark.parametrize("block_size", [0, -1, 2.5, True, (2, 0), (1, 2, 3), "8", None])
def test_bad_block_size(block_size):
    q, k, v = qkv()
    with pytest.raises(
        ValueError,
        match=r"block_size must be a positive int or a pair \(block_q, block_k\) "
        r"of positive ints, got",
    ):
        flash_attention(q, k, v, block_size=block_size)


@pytest.mark.parametrize(
    "args, kwargs, exc, match",
    [
        (([1.0], None, None), {}, TypeError, r"q must be a torch.Tensor, got list"),
        (
            (None, torch.zeros(2, 3, 7, 5, dtype=F64), None),
            {},
            ValueError,
            r"k must have the head dim D of q \(4\)",
        ),
        (
            (None, None, None),
            {"mask": torch.ones(5, 7)},
            TypeError,
            r"mask must have dtype torch.bool",
        ),
        (
            (None, None, None),
            {"mask": torch.ones(2, 7, dtype=torch.bool)},
            ValueError,
            r"mask of shape \(2, 7\) does not broadcast to \(B, H, T, S\) = \(2, 3, 5, 7\)",
        ),
        (
            (None, None, None),
            {"scale": "0.1"},
            TypeError,
            r"scale must be a float or None",
        ),
    ],
)
def test_input_errors(args, kwargs, exc, match):
    args = [d if a is None else a for a, d in zip(args, qkv())]
    with pytest.raises(exc, match=match):
        flash_attention(*args, **kwargs)


# --- half precision: float32 statistics and accumulators, as in FlashAttention ---

HALF_SHAPES = [(7, 1), (1, 9), (33, 17), (17, 45), (65, 37)]  # (T, S): T != S


def _attend_all(kernel, q, k, v, mask, n_rep, grad):
    """Output and (dq, dk, dv) of one kernel, keys/values shared by n_rep heads."""
    leaves = [x.detach().requires_grad_() for x in (q, k, v)]
    qq, kk, vv = leaves[0], repeat_kv(leaves[1], n_rep), repeat_kv(leaves[2], n_rep)
    out = kernel(qq, kk, vv, mask)
    dq, dk, dv = torch.autograd.grad(out, leaves, grad.to(out.dtype))
    return out, dq, dk, dv


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("num_kv_heads", [4, 2, 1], ids=["MHA", "GQA", "MQA"])
@pytest.mark.parametrize("T, S", HALF_SHAPES)
def test_half_precision_is_as_accurate_as_plain_attention(
    dtype, causal, num_kv_heads, T, S
):
    # flash-attention's own rule: against a float64 reference, the tiled
    # kernel's error is at most 2x (output) and 3x (gradients) that of plain
    # attention computed in the same half dtype.
    torch.manual_seed(T * 100 + S)
    B, H, D = 2, 4, 16
    q = torch.randn(B, H, T, D).to(dtype)
    k = torch.randn(B, num_kv_heads, S, D).to(dtype)
    v = torch.randn(B, num_kv_heads, S, D).to(dtype)
    grad = torch.randn(B, H, T, D)
    mask = causal_mask(T, S) if causal else None
    n_rep = H // num_kv_heads

    def plain(q, k, v, mask):
        return scaled_dot_product_attention(q, k, v, mask)[0]

    def tiled(q, k, v, mask):
        return flash_attention(q, k, v, mask, block_size=8)  # several tiles

    ref = _attend_all(
        plain, q.double(), k.double(), v.double(), mask, n_rep, grad.double()
    )
    half = _attend_all(plain, q, k, v, mask, n_rep, grad)
    ours = _attend_all(tiled, q, k, v, mask, n_rep, grad)
    assert all(x.dtype == dtype for x in ours)
    for i, (name, factor) in enumerate([("out", 2), ("dq", 3), ("dk", 3), ("dv", 3)]):
        err = (ours[i].double() - ref[i]).abs().max().item()
        err_plain = (half[i].double() - ref[i]).abs().max().item()
        # rounding slack of the reference itself, as flash-attention adds
        slack = 2 * (ref[i] + 0.3 - 0.3 - ref[i]).abs().max().item()
        assert err <= factor * err_plain + slack, (name, err, err_plain, slack)
