"""Tests for the additive attention bias: every kernel, the module and its checks."""

import math

import pytest
import torch
from attention_inputs import F64, random_qkv
from attention_inputs import random_mask as bernoulli_mask

from mha_book.attention.alibi import alibi_bias
from mha_book.attention.flash import flash_attention
from mha_book.attention.kernels import ATTENTION_KERNELS
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.masks import causal_mask
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.scaled_dot_product import (
    fused_attention,
    scaled_dot_product_attention,
)

B, H, T, S, D = 2, 3, 5, 7, 4


def qkv(T=T, S=S, dtype=F64, seed=0):
    return random_qkv(B, H, T, S, D, D + 1, dtype=dtype, requires_grad=True, seed=seed)


def random_bias(shape, seed=1, dtype=F64):
    g = torch.Generator().manual_seed(seed)
    return (3 * torch.randn(shape, generator=g, dtype=dtype)).requires_grad_()


def random_mask(T=T, S=S, seed=2):
    mask = bernoulli_mask((B, 1, T, S), keep=0.6, seed=seed)
    mask[0, 0, 0] = False  # a fully masked row in the first sequence
    mask[:, :, -1] = False  # and the last query of every sequence
    return mask


def run(name, q, k, v, mask, bias):
    """Output and gradients of q, k, v and the bias (a leaf) through one kernel."""
    kw = {"block_size": (2, 3)} if name == "flash" else {}  # several tiles
    out, _ = ATTENTION_KERNELS[name](q, k, v, mask, bias=bias, **kw)
    grad = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).view(out.shape)
    return (out, *torch.autograd.grad(out, (q, k, v, bias), grad))


# --- every kernel: the same output and gradients as the explicit one ---


@pytest.mark.parametrize("name", sorted(ATTENTION_KERNELS))
@pytest.mark.parametrize("with_mask", [False, True])
@pytest.mark.parametrize(
    "bias_shape", [(B, H, T, S), (1, H, T, S), (B, 1, T, S), (T, S), (S,)]
)
def test_every_kernel_with_a_bias_matches_explicit(name, with_mask, bias_shape):
    q, k, v = qkv()
    bias, mask = random_bias(bias_shape), random_mask() if with_mask else None
    ours = run(name, q, k, v, mask, bias)
    ref = run("explicit", q, k, v, mask, bias)
    assert ours[0].shape == (B, H, T, D + 1) and ours[4].shape == bias_shape
    for x, r in zip(ours, ref):
        assert not x.isnan().any()
        assert (x - r).abs().max() <= 1e-12  # float64, flash's usual tolerance too


@pytest.mark.parametrize("T_, S_", [(7, 3), (1, 9), (9, 9)])
def test_explicit_kernel_equals_softmax_of_biased_scores(T_, S_):
    q, k, v = qkv(T_, S_)
    bias, mask = random_bias((1, H, T_, S_)), random_mask(T_, S_)
    out, w = scaled_dot_product_attention(q, k, v, mask, bias=bias)
    scores = q @ k.transpose(-2, -1) / math.sqrt(D) + bias  # (B, H, T, S)
    expected_w = torch.softmax(scores.masked_fill(~mask, -math.inf), dim=-1)
    empty = ~mask.any(-1, keepdim=True)  # (B, 1, T, 1)
    expected_w = expected_w.masked_fill(empty, 0.0)  # fully masked rows: 0, not NaN
    assert (w - expected_w).abs().max() <= 1e-12
    assert (out - expected_w @ v).abs().max() <= 1e-12
    assert out[empty[..., 0].expand(B, H, T_)].abs().max() == 0


def test_flash_backward_with_a_constant_bias():
    # a bias that needs no gradient (ALiBi's) gets none; q, k, v still do
    q, k, v = qkv()
    bias = alibi_bias(H, T, S, dtype=F64)[None]  # (1, H, T, S)
    out = flash_attention(q, k, v, causal_mask(T, S), bias=bias, block_size=3)
    grads = torch.autograd.grad(out.sum(), (q, k, v))
    ref = scaled_dot_product_attention(q, k, v, causal_mask(T, S), bias=bias)[0]
    for g, r in zip(grads, torch.autograd.grad(ref.sum(), (q, k, v))):
        assert (g - r).abs().max() <= 1e-12
    assert bias.grad is None


def test_a_zero_bias_changes_nothing():
    q, k, v = qkv()
    mask = random_mask()
    for name, kernel in ATTENTION_KERNELS.items():
        with_zero = kernel(q, k, v, mask, bias=torch.zeros(T, S, dtype=F64))[0]
        assert (with_zero - kernel(q, k, v, mask)[0]).abs().max() <= 1e-14, name


def test_a_constant_per_row_bias_changes_nothing():
    q, k, v = qkv()
    shift = torch.randn(B, H, T, 1, dtype=F64).expand(B, H, T, S)  # softmax ignores it
    for name, kernel in ATTENTION_KERNELS.items():
        out = kernel(q, k, v, causal_mask(T, S), bias=shift)[0]
        ref = kernel(q, k, v, causal_mask(T, S))[0]
        assert (out - ref).abs().max() <= 1e-12, name


def test_flash_half_precision_with_a_bias_keeps_float32_accumulators():
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 33, 16) for _ in range(3))
    bias = alibi_bias(2, 33)[None]  # (1, H, T, S)
    ref = scaled_dot_product_attention(q, k, v, causal_mask(33), bias=bias)[0]
    half = [x.half() for x in (q, k, v, bias)]
    out = flash_attention(*half[:3], causal_mask(33), bias=half[3], block_size=8)
    assert out.dtype == torch.float16
    plain = scaled_dot_product_attention(*half[:3], causal_mask(33), bias=half[3])[0]
    # no worse than twice plain attention computed in float16
    assert (out.float() - ref).abs().max() <= 2 * (plain.float() - ref).abs().max()


# --- the bias's checks, next to the mask's ---


@pytest.mark.parametrize("kernel", [scaled_dot_product_attention, fused_attention])
@pytest.mark.parametrize(
    "bias, exc, match",
    [
        ([[0.0]], TypeError, r"bias must be a torch.Tensor, got list"),
        (
            torch.zeros(T, S, dtype=torch.int64),
            TypeError,
            r"bias must have a floating-point dtype, got torch.int64",
        ),
        (
            torch.zeros(T, S, dtype=torch.float32),
            TypeError,
            r"bias must have the dtype of q \(torch.float64\), got torch.float32",
        ),
        (
            torch.zeros(T, S + 1, dtype=F64),
            ValueError,
            r"bias of shape \(5, 8\) does not broadcast to \(B, H, T, S\) = "
            r"\(2, 3, 5, 7\)",
        ),
        (
            torch.zeros(H, T, S, dtype=F64),
            ValueError,
            r"bias of shape \(3, 5, 7\) is ambiguous.*bias\[None\] = \(1, H, T, S\)",
        ),
        (
            torch.full((T, S), math.nan, dtype=F64),
            ValueError,
            r"bias must be finite \(block keys with the bool mask\), got NaN or inf",
        ),
        (
            torch.full((T, S), -math.inf, dtype=F64),
            ValueError,
            r"bias must be finite",
        ),
    ],
)
def test_bad_bias_gives_a_clear_error(kernel, bias, exc, match):
    q, k, v = qkv()
    with pytest.raises(exc, match=match):
        kernel(q, k, v, bias=bias)


def test_flash_checks_the_bias_too():
    q, k, v = qkv()
    with pytest.raises(ValueError, match=r"bias must be finite"):
        flash_attention(q, k, v, bias=torch.full((T, S), math.inf, dtype=F64))


# --- the module passes the bias to its kernel ---


def make_module(num_kv_heads=None, kernel=None, seed=0):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(12, H, num_kv_heads=num_kv_heads, kernel=kernel)
    return mha.to(F64).eval()


def by_hand(mha, x, mem, mask, bias):
    """The module's forward with a bias, from its weights and plain torch ops."""
    q = mha.q_proj(x).view(B, -1, H, D).transpose(1, 2)  # (B, H, T, D)
    k = mha.k_proj(mem).view(B, -1, H, D).transpose(1, 2)  # (B, H, S, D)
    v = mha.v_proj(mem).view(B, -1, H, D).transpose(1, 2)  # (B, H, S, D)
    scores = q @ k.transpose(-2, -1) / math.sqrt(D) + bias  # (B, H, T, S)
    w = torch.softmax(scores.masked_fill(~mask, -math.inf), dim=-1)  # (B, H, T, S)
    context = (w @ v).transpose(1, 2).reshape(B, -1, 12)  # (B, T, E)
    return mha.out_proj(context), w


@pytest.mark.parametrize("kernel", [None, "explicit", "fused", "flash"])
def test_module_with_a_bias_equals_the_hand_computed_reference(kernel):
    mha = make_module(kernel=kernel)
    x, mem = torch.randn(B, T, 12, dtype=F64), torch.randn(B, S, 12, dtype=F64)
    bias = torch.randn(1, H, T, S, dtype=F64)
    mask = causal_mask(T, S)
    need = kernel in (None, "explicit")
    out, w = mha(x, mem, mem, mask, need_weights=need, bias=bias)
    ref_out, ref_w = by_hand(mha, x, mem, mask, bias)
    assert (out - ref_out).abs().max() <= 1e-12
    if need:
        assert (w - ref_w).abs().max() <= 1e-12


def test_module_bias_in_sequence_first_layout():
    mha = make_module()
    x = torch.randn(B, T, 12, dtype=F64)
    bias = alibi_bias(H, T, dtype=F64)[None]  # (1, H, T, T): the same in both layouts
    ref, _ = mha(x, x, x, causal_mask(T), bias=bias)
    mha.batch_first = False
    x_seq = x.transpose(0, 1)  # (T, B, E)
    out, _ = mha(x_seq, x_seq, x_seq, causal_mask(T), bias=bias)
    assert (out.transpose(0, 1) - ref).abs().max() <= 1e-12


@pytest.mark.parametrize("num_kv_heads", [H, 1])
@pytest.mark.parametrize("kernel", [None, "flash"])
def test_forward_step_with_alibi_equals_the_full_causal_pass(num_kv_heads, kernel):
    mha = make_module(num_kv_heads, kernel)
    need = kernel is None
    x = torch.randn(B, 9, 12, dtype=F64)
    full, full_w = mha(
        x,
        x,
        x,
        causal_mask(9),
        need_weights=need,
        bias=alibi_bias(H, 9, dtype=F64)[None],
    )
    cache, outs = KVCache(), []
    for a, b in [(0, 4), (4, 5), (5, 8), (8, 9)]:  # prefill 4 tokens, then 1, 3, 1
        bias = alibi_bias(H, b - a, b, dtype=F64)  # (H, T, past + T): the last rows
        out, w = mha.forward_step(x[:, a:b], cache, need_weights=need, bias=bias[None])
        outs.append(out)
        if need:
            assert (w - full_w[:, :, a:b, :b]).abs().max() <= 1e-10
    assert (torch.cat(outs, dim=1) - full).abs().max() <= 1e-10


def test_the_bias_changes_the_module_output():
    mha = make_module()
    x = torch.randn(B, T, 12, dtype=F64)
    plain, _ = mha(x, x, x, causal_mask(T))
    biased, _ = mha(x, x, x, causal_mask(T), bias=alibi_bias(H, T, dtype=F64)[None])
    assert (plain - biased).abs().max() > 1e-3  # it was not dropped on the way


def test_module_bias_errors_name_the_argument():
    mha = make_module()
    x = torch.randn(B, T, 12, dtype=F64)
    with pytest.raises(ValueError, match=r"bias of shape \(5, 6\) does not broadcast "):
        mha(x, x, x, bias=torch.zeros(T, T + 1, dtype=F64))
    with pytest.raises(TypeError, match=r"bias must have the dtype of query"):
        mha(x, x, x, bias=torch.zeros(T, T))
    with pytest.raises(TypeError, match=r"bias must have a floating-point dtype"):
        mha(x, x, x, bias=torch.zeros(T, T, dtype=torch.int32))
    with pytest.raises(ValueError, match=r"bias of shape \(3, 5, 5\) is ambiguous"):
        mha(x, x, x, bias=alibi_bias(H, T, dtype=F64))
    with pytest.raises(ValueError, match=r"bias must be finite"):
        mha(x, x, x, bias=torch.full((T, T), math.nan, dtype=F64))
    cache = KVCache()
    mha.forward_step(x[:, :2], cache)
    with pytest.raises(ValueError, match=r"= \(2, 3, 1, 3\)"):  # S = 2 cached + 1
        mha.forward_step(x[:, 2:3], cache, bias=torch.zeros(1, 2, dtype=F64))
    with pytest.raises(TypeError, match=r"bias must have the dtype of x"):
        mha.forward_step(x[:, 2:3], cache, bias=torch.zeros(1, 3))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_scores_past_the_range_stay_finite_in_every_kernel(dtype):
    """Scores of -20000 plus a bias of -60000 pass float16's range (65504): the
    explicit kernel added them in float16 and returned NaN, while the fused and
    flash kernels stayed finite. All three now agree."""
    D = 64
    q = torch.full((1, 1, 4, D), 50.0)
    k = torch.full((1, 1, 6, D), -50.0)  # each score: -50 * 50 * 64 / 8 = -20000
    k[..., 2, :] = -49.0  # one key a little closer
    v = torch.randn(1, 1, 6, D, generator=torch.Generator().manual_seed(0))
    bias = torch.full((4, 6), -60000.0)
    q, k, v, bias = (t.to(dtype) for t in (q, k, v, bias))
    reference = ATTENTION_KERNELS["fused"](
        q.float(), k.float(), v.float(), bias=bias.float()
    )[0]
    for name in ("explicit", "flash", "fused"):
        out = ATTENTION_KERNELS[name](q, k, v, bias=bias)[0]
        assert out.dtype == dtype and torch.isfinite(out).all(), name
        torch.testing.assert_close(
            out.float(), reference, atol=2e-2, rtol=2e-2, msg=name
        )
