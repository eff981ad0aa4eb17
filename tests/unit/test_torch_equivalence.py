"""MultiHeadAttention.from_torch / to_torch against torch.nn.MultiheadAttention.

Outputs and per-head weights must agree to 1e-12 in float64 and 1e-5 in float32,
with and without masks, for self- and cross-attention, packed and separate
projection layouts, with and without bias, and both batch layouts.
"""

import itertools

import pytest
import torch
from attention_inputs import torch_mha
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from mha_book.attention.masks import causal_mask, flip_mask_convention, padding_mask
from mha_book.attention.mha import MultiHeadAttention

TOL = {torch.float64: 1e-12, torch.float32: 1e-5}


def inputs(m, B, T, S, *, self_attention, seed=1):
    g = torch.Generator().manual_seed(seed)
    dt = m.out_proj.weight.dtype
    lead = (lambda L: (B, L)) if m.batch_first else (lambda L: (L, B))
    q = torch.randn(*lead(T), m.embed_dim, generator=g, dtype=dt)
    if self_attention:
        return q, q, q
    k = torch.randn(*lead(S), m.kdim, generator=g, dtype=dt)
    v = torch.randn(*lead(S), m.vdim, generator=g, dtype=dt)
    return q, k, v


def masks(kind, B, T, S, seed=2):
    """(our mask, torch kwargs) for the same masking; no row is fully masked."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, S + 1, (B,), generator=g)
    pad = padding_mask(lengths, S)  # (B, 1, 1, S)
    causal = causal_mask(T, S)  # (T, S), S >= T so every query keeps a key
    ours = {"none": None, "padding": pad, "causal": causal, "both": pad & causal}[kind]
    theirs = {}
    if kind in ("padding", "both"):
        theirs["key_padding_mask"] = flip_mask_convention(pad)[:, 0, 0, :]  # (B, S)
    if kind in ("causal", "both"):
        theirs["attn_mask"] = flip_mask_convention(causal)  # (T, S)
    return ours, theirs


def compare(theirs, ours, q, k, v, mask_kind, B, T, S):
    tol = TOL[q.dtype]
    mask, kwargs = masks(mask_kind, B, T, S)
    ref_out, ref_w = theirs(
        q, k, v, need_weights=True, average_attn_weights=False, **kwargs
    )
    out, w = ours(q, k, v, mask)
    assert w.shape == ref_w.shape == (B, ours.num_heads, T, S)
    assert (out - ref_out).abs().max() < tol
    assert (w - ref_w).abs().max() < tol
    fast, none = ours(q, k, v, mask, need_weights=False)
    assert none is None
    assert (fast - ref_out).abs().max() < tol


LAYOUTS = {"packed": {}, "separate": {"kdim": 5, "vdim": 7}}
GRID = list(
    itertools.product(
        [torch.float64, torch.float32],
        LAYOUTS,
        [True, False],
        [True, False],
        ["none", "padding", "causal", "both"],
    )
)


@pytest.mark.parametrize("dtype, layout, bias, batch_first, mask_kind", GRID)
def test_from_torch_matches(dtype, layout, bias, batch_first, mask_kind):
    B, T, S = 2, 3, 5
    theirs = torch_mha(
        12, 3, bias=bias, batch_first=batch_first, dtype=dtype, **LAYOUTS[layout]
    )
    ours = MultiHeadAttention.from_torch(theirs)
    assert (
        ours.q_proj.weight.dtype == dtype
        and ours.batch_first == batch_first
        and not ours.training
    )
    compare(
        theirs, ours, *inputs(theirs, B, T, S, self_attention=False), mask_kind, B, T, S
    )


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("mask_kind", ["none", "padding", "causal", "both"])
@pytest.mark.parametrize("batch_first", [True, False])
def test_self_attention_matches(dtype, mask_kind, batch_first):
    B, T = 3, 6
    theirs = torch_mha(16, 4, batch_first=batch_first, dtype=dtype)
    ours = MultiHeadAttention.from_torch(theirs)
    compare(
        theirs, ours, *inputs(theirs, B, T, T, self_attention=True), mask_kind, B, T, T
    )


@pytest.mark.parametrize("mask_kind", ["none", "padding"])
def test_matches_torch_native_fast_path(mask_kind):
    """Under inference_mode torch takes its fused C++ path; the results still agree."""
    B, T = 2, 5
    theirs = torch_mha(16, 4, dtype=torch.float32)
    ours = MultiHeadAttention.from_torch(theirs)
    x = inputs(theirs, B, T, T, self_attention=True)
    mask, kwargs = masks(mask_kind, B, T, T)
    with torch.inference_mode():
        ref, _ = theirs(*x, need_weights=False, **kwargs)
        fast, _ = ours(*x, mask, need_weights=False)
    if (
        mask_kind == "padding"
    ):  # the fused path returns a nested-tensor padding of 0 there
        keep = mask[:, 0, 0, :, None]
        ref, fast = ref * keep, fast * keep
    assert (fast - ref).abs().max() < TOL[torch.float32]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("batch_first", [True, False])
def test_to_torch_matches_and_round_trips(layout, bias, batch_first):
    torch.manual_seed(0)
    ours = MultiHeadAttention(
        12,
        3,
        bias=bias,
        batch_first=batch_first,
        dtype=torch.float64,
        dropout=0.25,
        **LAYOUTS[layout],
    ).eval()
    theirs = ours.to_torch()
    assert isinstance(theirs, nn.MultiheadAttention) and not theirs.training
    assert theirs._qkv_same_embed_dim == (layout == "packed")
    assert (theirs.in_proj_bias is not None) == bias and theirs.dropout == 0.25
    assert (
        theirs.batch_first == batch_first
        and theirs.out_proj.weight.dtype == torch.float64
    )
    compare(
        theirs, ours, *inputs(theirs, 2, 3, 4, self_attention=False), "both", 2, 3, 4
    )
    back = MultiHeadAttention.from_torch(theirs)
    for (name, a), (_, b) in zip(ours.state_dict().items(), back.state_dict().items()):
        assert torch.equal(a, b), name
    again = back.to_torch()
    for (name, a), (_, b) in zip(
        theirs.state_dict().items(), again.state_dict().items()
    ):
        assert torch.equal(a, b), name


def test_training_mode_is_carried_over():
    theirs = nn.MultiheadAttention(8, 2, dropout=0.1)
    assert MultiHeadAttention.from_torch(theirs.train()).training
    assert not MultiHeadAttention.from_torch(theirs.eval()).training
    assert MultiHeadAttention(8, 2).train().to_torch().training


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"add_bias_kv": True}, ValueError, r"module must have add_bias_kv=False"),
        ({"add_zero_attn": True}, ValueError, r"module must have add_zero_attn=False"),
    ],
)
def test_from_torch_refuses_unsupported_options(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, **kwargs))


def test_from_torch_refuses_other_modules():
    with pytest.raises(
        TypeError, match=r"module must be a torch.nn.MultiheadAttention, got Linear"
    ):
        MultiHeadAttention.from_torch(nn.Linear(2, 2))


@settings(max_examples=25, deadline=None)
@given(
    B=st.integers(1, 3),
    H=st.integers(1, 3),
    D=st.integers(1, 4),
    T=st.integers(1, 5),
    extra=st.integers(0, 3),
    kdim=st.one_of(st.none(), st.integers(1, 6)),
    vdim=st.one_of(st.none(), st.integers(1, 6)),
    batch_first=st.booleans(),
    bias=st.booleans(),
    mask_kind=st.sampled_from(["none", "padding", "causal", "both"]),
    seed=st.integers(0, 2**16),
)
def test_property_from_torch_matches(
    B, H, D, T, extra, kdim, vdim, batch_first, bias, mask_kind, seed
):
    S = T + extra  # S >= T keeps every causal row non-empty; T != S whenever extra > 0
    theirs = torch_mha(
        H * D, H, kdim=kdim, vdim=vdim, bias=bias, batch_first=batch_first, seed=seed
    )
    ours = MultiHeadAttention.from_torch(theirs)
    compare(
        theirs,
        ours,
        *inputs(theirs, B, T, S, self_attention=False, seed=seed),
        mask_kind,
        B,
        T,
        S,
    )
