"""Tests for mha_book.attention.scaled_dot_product: the explicit kernel and the fused variant."""

import math

import pytest
import torch
import torch.nn.functional as F
from attention_inputs import F64, random_qkv
from attention_inputs import random_mask as bernoulli_mask
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_book.attention.masks import causal_mask, padding_mask
from mha_book.attention.scaled_dot_product import (
    fused_attention,
    scaled_dot_product_attention,
)

qkv = random_qkv  # its default shapes are this file's


def random_mask(shape, seed=0, empty_rows=False):
    mask = bernoulli_mask(shape, keep=0.6, seed=seed)
    mask[..., 0] = True  # every row keeps at least one key
    if empty_rows:
        mask[..., 1, :] = False  # query 1 sees nothing
    return mask


# --- agreement with torch.nn.functional.scaled_dot_product_attention (float64) ---


@pytest.mark.parametrize(
    "kind", ["none", "random", "causal", "padding", "broadcast_heads"]
)
def test_matches_torch_sdpa(kind):
    q, k, v = qkv(T=4, S=6, D=8, Dv=8)
    mask = {
        "none": None,
        "random": random_mask((2, 3, 4, 6)),
        "causal": causal_mask(4, 6),
        "padding": padding_mask(torch.tensor([6, 2]), 6),
        "broadcast_heads": random_mask((2, 1, 4, 6)),
    }[kind]
    out, w = scaled_dot_product_attention(q, k, v, mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    assert (out - ref).abs().max() < 1e-12
    assert (fused_attention(q, k, v, mask) - ref).abs().max() < 1e-12
    assert w.shape == (2, 3, 4, 6)


def test_value_dim_differs_and_custom_scale():
    q, k, v = qkv(T=3, S=5, D=4, Dv=9)
    out, w = scaled_dot_product_attention(q, k, v, scale=0.3)
    ref_w = torch.softmax(q @ k.transpose(-2, -1) * 0.3, dim=-1)
    assert out.shape == (2, 3, 3, 9)
    assert (w - ref_w).abs().max() < 1e-12
    assert (out - ref_w @ v).abs().max() < 1e-12
    assert (fused_attention(q, k, v, scale=0.3) - out).abs().max() < 1e-12


def test_default_scale_is_inverse_sqrt_head_dim():
    q, k, v = qkv(D=16)
    _, w = scaled_dot_product_attention(q, k, v)
    _, w_explicit = scaled_dot_product_attention(q, k, v, scale=1 / math.sqrt(16))
    assert torch.equal(w, w_explicit)


def test_leading_dims_broadcast_like_torch():
    q, _, _ = qkv(H=4, S=5)
    k, v = (
        torch.randn(2, 1, 5, 6, dtype=F64),
        torch.randn(2, 1, 5, 7, dtype=F64),
    )  # shared by heads
    out, w = scaled_dot_product_attention(q, k, v)
    ref = F.scaled_dot_product_attention(q, k.expand(2, 4, 5, 6), v.expand(2, 4, 5, 7))
    assert w.shape == (2, 4, 4, 5)
    assert (out - ref).abs().max() < 1e-12


def test_rank_two_inputs():
    q, k, v = (
        torch.randn(3, 4, dtype=F64),
        torch.randn(5, 4, dtype=F64),
        torch.randn(5, 2, dtype=F64),
    )
    out, w = scaled_dot_product_attention(q, k, v, causal_mask(3, 5))
    assert out.shape == (3, 2) and w.shape == (3, 5)


def test_weights_sum_to_one_over_allowed_keys():
    q, k, v = qkv()
    mask = random_mask((2, 3, 4, 5), empty_rows=True)
    _, w = scaled_dot_product_attention(q, k, v, mask)
    sums = w.sum(-1)
    assert torch.allclose(
        sums[:, :, [0, 2, 3]], torch.ones_like(sums[:, :, [0, 2, 3]]), atol=1e-12
    )
    assert torch.all(w[~mask.expand_as(w)] == 0)


# --- fully masked rows: zeros, never NaN, in values and gradients ---


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, F64])
def test_fully_masked_rows_are_zero_with_finite_gradients(fused, dtype):
    q, k, v = qkv(dtype=dtype, requires_grad=True)
    mask = random_mask((2, 3, 4, 5), empty_rows=True)
    if fused:
        out = fused_attention(q, k, v, mask)
        loss = out.sum()
    else:
        out, w = scaled_dot_product_attention(q, k, v, mask)
        assert torch.all(w[:, :, 1] == 0) and not w.isnan().any()
        loss = out.sum() + (w * torch.randn_like(w)).sum()
    assert torch.all(out[:, :, 1] == 0) and not out.isnan().any()
    loss.backward()
    for t in (q, k, v):
        assert torch.isfinite(t.grad).all()
    assert torch.all(q.grad[:, :, 1] == 0)


@pytest.mark.parametrize("fused", [False, True])
def test_every_row_masked(fused):
    q, k, v = qkv(requires_grad=True)
    mask = torch.zeros(4, 5, dtype=torch.bool)
    out = (
        fused_attention(q, k, v, mask)
        if fused
        else scaled_dot_product_attention(q, k, v, mask)[0]
    )
    assert torch.all(out == 0)
    out.sum().backward()
    assert all(torch.all(t.grad == 0) for t in (q, k, v))


@pytest.mark.parametrize("fused", [False, True])
def test_gradcheck(fused):
    q, k, v = qkv(B=1, H=2, T=3, S=4, D=2, Dv=3, requires_grad=True)
    mask = random_mask((1, 2, 3, 4), empty_rows=True)
    if fused:
        fn = lambda q, k, v: fused_attention(q, k, v, mask)  # noqa: E731
    else:
        fn = lambda q, k, v: scaled_dot_product_attention(q, k, v, mask)  # noqa: E731
    assert torch.autograd.gradcheck(fn, (q, k, v))
    assert torch.autograd.gradcheck(
        lambda q, k, v: scaled_dot_product_attention(q, k, v), (q, k, v)
    )


# --- dropout: controlled by dropout_p alone ---


def test_dropout_applies_to_weights_and_output_uses_them():
    q, k, v = qkv(T=16, S=32)
    _, clean = scaled_dot_product_attention(q, k, v)
    torch.manual_seed(1)
    out, w = scaled_dot_product_attention(q, k, v, dropout_p=0.5)
    kept = w != 0
    assert 0 < kept.float().mean() < 1
    assert torch.allclose(w[kept], clean[kept] / 0.5, atol=1e-12)
    assert (out - w @ v).abs().max() < 1e-12


def test_no_dropout_is_deterministic():
    q, k, v = qkv()
    assert torch.equal(
        scaled_dot_product_attention(q, k, v)[0],
        scaled_dot_product_attention(q, k, v)[0],
    )
    assert torch.equal(fused_attention(q, k, v), fused_attention(q, k, v))


def test_fused_dropout_changes_output():
    q, k, v = qkv(T=16, S=32)
    torch.manual_seed(0)
    assert not torch.allclose(
        fused_attention(q, k, v, dropout_p=0.5), fused_attention(q, k, v)
    )


def test_no_grad_path_matches_grad_path():
    q, k, v = qkv(requires_grad=True)
    mask = random_mask((2, 3, 4, 5), empty_rows=True)
    out, w = scaled_dot_product_attention(q, k, v, mask)
    with torch.inference_mode():
        out2, w2 = scaled_dot_product_attention(
            q.detach(), k.detach(), v.detach(), mask
        )
    assert torch.equal(out.detach(), out2) and torch.equal(w.detach(), w2)


# --- errors: right type, message names the argument ---


@pytest.mark.parametrize("fn", [scaled_dot_product_attention, fused_attention])
@pytest.mark.parametrize(
    "args, kwargs, exc, match",
    [
        (([1.0], None, None), {}, TypeError, r"q must be a torch.Tensor, got list"),
        (
            (torch.zeros(4), None, None),
            {},
            ValueError,
            r"q must have shape \(\.\.\., T, D\)",
        ),
        (
            (None, torch.zeros(5, 7, dtype=F64), None),
            {},
            ValueError,
            r"k must have the head dim D of q \(6\)",
        ),
        (
            (None, None, torch.zeros(2, 3, 4, 7, dtype=F64)),
            {},
            ValueError,
            r"v must have the key length S of k \(5\)",
        ),
        (
            (None, torch.zeros(2, 3, 5, 6, dtype=torch.float32), None),
            {},
            TypeError,
            r"k must have the dtype of q \(torch.float64\), got torch.float32",
        ),
        (
            (None, None, None),
            {"mask": torch.ones(4, 5)},
            TypeError,
            r"mask must have dtype torch.bool",
        ),
        (
            (None, None, None),
            {"mask": torch.ones(2, 5, dtype=torch.bool)},
            ValueError,
            r"mask of shape \(2, 5\) does not broadcast to \(B, H, T, S\) = \(2, 3, 4, 5\)",
        ),
        (
            (None, None, None),
            {"dropout_p": 1.0},
            ValueError,
            r"dropout_p must be in \[0, 1\), got 1.0",
        ),
        (
            (None, None, None),
            {"dropout_p": -0.1},
            ValueError,
            r"dropout_p must be in \[0, 1\)",
        ),
        (
            (None, None, None),
            {"dropout_p": "0.1"},
            TypeError,
            r"dropout_p must be a float",
        ),
        (
            (None, None, None),
            {"scale": "0.1"},
            TypeError,
            r"scale must be a float or None",
        ),
        (
            (torch.zeros(2, 3, 4, 6, dtype=torch.long),) * 3,
            {},
            TypeError,
            r"q must have a floating-point dtype",
        ),
        (
            (
                torch.zeros(3, 4, 6, dtype=F64),
                torch.zeros(2, 5, 6, dtype=F64),
                torch.zeros(2, 5, 7, dtype=F64),
            ),
            {},
            ValueError,
            r"leading dims of q",
        ),
    ],
)
def test_errors(fn, args, kwargs, exc, match):
    defaults = qkv()
    args = [d if a is None else a for a, d in zip(args, defaults)]
    with pytest.raises(exc, match=match):
        fn(*args, **kwargs)


# --- property: any sizes, T != S, D != Dv ---


@settings(max_examples=25, deadline=None)
@given(
    B=st.integers(1, 3),
    H=st.integers(1, 4),
    T=st.integers(1, 7),
    S=st.integers(1, 7),
    D=st.integers(1, 8),
    Dv=st.integers(1, 8),
    masked=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_property_matches_torch(B, H, T, S, D, Dv, masked, seed):
    q, k, v = qkv(B, H, T, S, D, Dv, seed=seed)
    mask = random_mask((B, 1, T, S), seed=seed) if masked else None
    out, w = scaled_dot_product_attention(q, k, v, mask)
    ref_w = torch.softmax(
        (q @ k.transpose(-2, -1)) / math.sqrt(D)
        + (
            0
            if mask is None
            else torch.zeros(mask.shape, dtype=F64).masked_fill(~mask, -math.inf)
        ),
        dim=-1,
    )
    assert out.shape == (B, H, T, Dv) and w.shape == (B, H, T, S)
    assert (w - ref_w).abs().max() < 1e-12
    assert (out - ref_w @ v).abs().max() < 1e-12
    assert (fused_attention(q, k, v, mask) - out).abs().max() < 1e-12


def test_a_one_dimensional_key_mask_works_on_both_paths():
    from mha_book.attention.scaled_dot_product import fused_attention

    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, n, 4, dtype=torch.float64) for n in (5, 6, 6))
    mask = torch.tensor([True, True, False, True, False, True])  # (S,)
    explicit, _ = scaled_dot_product_attention(q, k, v, mask)
    fused = fused_attention(q, k, v, mask)
    full, _ = scaled_dot_product_attention(q, k, v, mask.expand(5, 6))
    torch.testing.assert_close(explicit, full)
    torch.testing.assert_close(fused, full)


# --- validate=False: the module checks once, then skips the kernel's checks ---


@pytest.mark.parametrize("fused", [False, True])
def test_skipping_validation_changes_nothing_on_valid_input(fused):
    q, k, v = qkv()
    mask = random_mask((2, 3, 4, 5), empty_rows=True)
    if fused:
        checked = fused_attention(q, k, v, mask)
        unchecked = fused_attention(q, k, v, mask, validate=False)
    else:
        checked = torch.cat(
            [t.flatten() for t in scaled_dot_product_attention(q, k, v, mask)]
        )
        unchecked = torch.cat(
            [
                t.flatten()
                for t in scaled_dot_product_attention(q, k, v, mask, validate=False)
            ]
        )
    assert torch.equal(checked, unchecked)


def test_the_module_still_rejects_what_the_kernel_no_longer_checks(monkeypatch):
    import mha_book.attention.scaled_dot_product as attention
    from mha_book.attention.mha import MultiHeadAttention

    calls = []
    monkeypatch.setattr(attention, "_check_qkv", lambda *args: calls.append(args))
    mha = MultiHeadAttention(8, 2, dtype=F64)
    x = torch.randn(2, 3, 8, dtype=F64)
    for need_weights in (True, False):
        mha(x, x, x, need_weights=need_weights)
        with pytest.raises(TypeError, match="mask must have dtype torch.bool"):
            mha(x, x, x, torch.ones(3, 3), need_weights=need_weights)
        with pytest.raises(
            ValueError, match=r"mask of shape \(2, 5\) does not broadcast"
        ):
            mha(x, x, x, torch.ones(2, 5, dtype=torch.bool), need_weights=need_weights)
    assert calls == []  # the kernels were not asked to check again
