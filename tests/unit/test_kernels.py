"""The kernel registry: one signature, every kernel selectable by the module and
run by the benchmark, and a new kernel added with one function and one line."""

import pytest
import torch
from attention_inputs import F64, random_qkv
from torch import nn

from mha_book.attention.kernels import ATTENTION_KERNELS, get_kernel
from mha_book.attention.masks import causal_mask, padding_mask
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.scaled_dot_product import (
    scaled_dot_product_attention as explicit_kernel,
)
from mha_book.bench import kernel_times

NAMES = sorted(ATTENTION_KERNELS)


def qkv(B=2, H=3, T=5, S=7, D=4):
    return random_qkv(B, H, T, S, D, D)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("masking", ["none", "causal", "padding with empty rows"])
def test_every_kernel_gives_the_explicit_output(name, masking):
    q, k, v = qkv()
    mask = {
        "none": None,
        "causal": causal_mask(5, 7),
        "padding with empty rows": padding_mask([0, 4], 7),  # sequence 0: no keys
    }[masking]
    out, weights = get_kernel(name)(q, k, v, mask)
    ref, ref_weights = explicit_kernel(q, k, v, mask)
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-12)
    assert weights is None or torch.equal(weights, ref_weights)


@pytest.mark.parametrize("name", NAMES)
def test_the_module_runs_every_kernel_like_nn_multihead_attention(name):
    torch.manual_seed(1)
    theirs = nn.MultiheadAttention(12, 3, batch_first=True, dtype=F64).eval()
    ours = MultiHeadAttention.from_torch(theirs)
    ours.kernel = name
    x = torch.randn(2, 6, 12, dtype=F64)
    mask = causal_mask(6)
    blocked = ~mask  # nn.MultiheadAttention: True = blocked
    ref, ref_weights = theirs(x, x, x, attn_mask=blocked, average_attn_weights=False)
    forms_weights = get_kernel(name)(*qkv(1, 1, 2, 2, 2))[1] is not None
    out, weights = ours(x, x, x, mask, need_weights=forms_weights)
    torch.testing.assert_close(out, ref, rtol=0, atol=1e-12)
    if forms_weights:
        torch.testing.assert_close(weights, ref_weights, rtol=0, atol=1e-12)


def test_the_default_chooses_by_need_weights():
    mha = MultiHeadAttention(12, 3).eval()
    x = torch.randn(2, 4, 12)
    assert mha.kernel is None
    assert mha(x, x, x)[1].shape == (2, 3, 4, 4)  # explicit
    assert mha(x, x, x, need_weights=False)[1] is None  # fused


@pytest.mark.parametrize("name", ["fused", "flash"])
def test_asking_weights_of_a_kernel_without_them_is_an_error(name):
    mha = MultiHeadAttention(12, 3, kernel=name).eval()
    x = torch.randn(2, 4, 12)
    with pytest.raises(
        ValueError,
        match=rf"need_weights=True, but kernel '{name}' forms no weights; "
        r"pass need_weights=False or use kernel='explicit'",
    ):
        mha(x, x, x)


def test_an_unknown_kernel_is_refused_when_the_module_is_built():
    with pytest.raises(
        ValueError,
        match=r"kernel must be one of \['explicit', 'flash', 'fused'\], got 'tiled'",
    ):
        MultiHeadAttention(12, 3, kernel="tiled")


def test_the_flash_kernel_refuses_dropout_in_training():
    mha = MultiHeadAttention(12, 3, dropout=0.1, kernel="flash").train()
    x = torch.randn(2, 4, 12)
    with pytest.raises(ValueError, match=r"dropout_p must be 0 for the flash kernel"):
        mha(x, x, x, need_weights=False)
    mha.eval()(x, x, x, need_weights=False)  # no dropout in eval mode: fine


def test_a_new_kernel_is_one_function_and_one_registry_line(monkeypatch):
    calls = []

    def toy_kernel(
        q, k, v, mask=None, *, bias=None, dropout_p=0.0, scale=None, validate=True
    ):
        """Softmax attention through float64, whatever the input dtype."""
        calls.append(tuple(q.shape))
        dtype, bias = q.dtype, None if bias is None else bias.double()
        q, k, v = q.double(), k.double(), v.double()
        out, weights = explicit_kernel(
            q, k, v, mask, bias=bias, dropout_p=dropout_p, scale=scale
        )
        return out.to(dtype), weights.to(dtype)

    monkeypatch.setitem(ATTENTION_KERNELS, "toy", toy_kernel)  # the one line

    mha = MultiHeadAttention(12, 3, kernel="toy").eval()
    x = torch.randn(2, 4, 12)
    out, weights = mha(x, x, x, causal_mask(4))
    assert calls == [(2, 3, 4, 4)]  # the module ran it
    ref = MultiHeadAttention(12, 3).eval()  # default kernels
    ref.load_state_dict(mha.state_dict())
    ref_out, ref_weights = ref(x, x, x, causal_mask(4))
    torch.testing.assert_close(out, ref_out)
    torch.testing.assert_close(weights, ref_weights)

    rows = kernel_times([8], 1, B=1, H=2, D=4, block_size=4)
    assert "toy" in rows[0] and rows[0]["toy"] > 0  # the benchmark listed it
