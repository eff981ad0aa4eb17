"""Tests for grouped-/multi-query attention (num_kv_heads, repeat_kv) and the KV cache."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_book.attention.heads import repeat_kv
from mha_book.attention.kv_cache import KVCache, kv_cache_bytes_per_token
from mha_book.attention.masks import causal_mask, padding_mask
from mha_book.attention.mha import MultiHeadAttention

F64 = torch.float64
KINDS = {"MHA": 4, "GQA": 2, "MQA": 1}  # num_kv_heads for H = 4


def make(num_kv_heads=None, E=16, H=4, batch_first=True, seed=0):
    torch.manual_seed(seed)
    m = MultiHeadAttention(
        E, H, num_kv_heads=num_kv_heads, batch_first=batch_first, dtype=F64
    )
    with torch.no_grad():
        for p in (m.q_proj, m.k_proj, m.v_proj, m.out_proj):
            p.bias.normal_()  # exercise the biases
    return m.eval()


# --- repeat_kv ---


@settings(max_examples=25, deadline=None)
@given(
    B=st.integers(1, 3),
    Hkv=st.integers(1, 4),
    n_rep=st.integers(1, 4),
    S=st.integers(1, 5),
    D=st.integers(1, 4),
)
def test_repeat_kv_shape_and_round_trip(B, Hkv, n_rep, S, D):
    x = torch.randn(B, Hkv, S, D)
    y = repeat_kv(x, n_rep)
    assert y.shape == (B, Hkv * n_rep, S, D)
    for h in range(Hkv * n_rep):
        assert torch.equal(y[:, h], x[:, h // n_rep])
    assert torch.equal(y.view(B, Hkv, n_rep, S, D)[:, :, -1], x)


def test_repeat_kv_one_is_identity_and_matches_repeat_interleave():
    x = torch.randn(2, 3, 5, 4)
    assert repeat_kv(x, 1) is x
    assert torch.equal(repeat_kv(x, 3), x.repeat_interleave(3, dim=1))


@pytest.mark.parametrize(
    "x, n_rep, exc, match",
    [
        (
            torch.zeros(2, 5, 4),
            2,
            ValueError,
            r"x must have shape \(B, Hkv, S, D\) \(4 dims\), got shape \(2, 5, 4\)",
        ),
        (
            torch.zeros(2, 2, 5, 4),
            0,
            ValueError,
            r"n_rep must be a positive int, got 0",
        ),
        (
            torch.zeros(2, 2, 5, 4),
            2.0,
            TypeError,
            r"n_rep must be a positive int, got float",
        ),
        ("x", 2, TypeError, r"x must be a torch.Tensor, got str"),
    ],
)
def test_repeat_kv_errors(x, n_rep, exc, match):
    with pytest.raises(exc, match=match):
        repeat_kv(x, n_rep)


# --- MultiHeadAttention(num_kv_heads=...) ---


@pytest.mark.parametrize("kind", list(KINDS))
def test_parameter_shapes(kind):
    m = MultiHeadAttention(16, 4, num_kv_heads=KINDS[kind], kdim=6)
    assert m.num_kv_heads == KINDS[kind] and m.head_dim == 4
    kv = KINDS[kind] * 4
    assert m.k_proj.weight.shape == (kv, 6) and m.v_proj.weight.shape == (kv, 16)
    assert m.q_proj.weight.shape == m.out_proj.weight.shape == (16, 16)
    n = sum(p.numel() for p in m.parameters())
    assert n == 2 * (16 * 16 + 16) + (6 * kv + kv) + (16 * kv + kv)


def test_default_is_standard_mha():
    a = MultiHeadAttention(16, 4)
    b = MultiHeadAttention(16, 4, num_kv_heads=4)
    assert a.num_kv_heads == 4
    assert {k: v.shape for k, v in a.state_dict().items()} == {
        k: v.shape for k, v in b.state_dict().items()
    }
    assert "num_kv_heads" not in repr(a) and "num_kv_heads=2" in repr(
        MultiHeadAttention(16, 4, num_kv_heads=2)
    )


@pytest.mark.parametrize("kind", ["GQA", "MQA"])
@pytest.mark.parametrize("need_weights", [True, False])
def test_gqa_equals_mha_with_tied_key_value_heads(kind, need_weights):
    """GQA is MHA whose key/value heads are copied across each group of query heads."""
    gqa = make(KINDS[kind])
    mha = make(None)
    n_rep, D = 4 // KINDS[kind], 4
    with torch.no_grad():
        mha.q_proj.load_state_dict(gqa.q_proj.state_dict())
        mha.out_proj.load_state_dict(gqa.out_proj.state_dict())
        for ours, full in ((gqa.k_proj, mha.k_proj), (gqa.v_proj, mha.v_proj)):
            full.weight.copy_(
                ours.weight.view(-1, D, 16).repeat_interleave(n_rep, 0).reshape(16, 16)
            )
            full.bias.copy_(
                ours.bias.view(-1, D).repeat_interleave(n_rep, 0).reshape(16)
            )
    q, kv = torch.randn(2, 5, 16, dtype=F64), torch.randn(2, 7, 16, dtype=F64)
    mask = padding_mask(torch.tensor([7, 3]), 7) & causal_mask(5, 7)
    out, w = gqa(q, kv, kv, mask, need_weights=need_weights)
    ref, ref_w = mha(q, kv, kv, mask, need_weights=need_weights)
    assert (out - ref).abs().max() < 1e-12
    if need_weights:
        assert w.shape == (2, 4, 5, 7) and (w - ref_w).abs().max() < 1e-12


def test_gqa_gradcheck():
    m = make(2, E=8, H=4)
    x = torch.randn(1, 3, 8, dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda x: m(x, x, x, causal_mask(3))[0], (x,))


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (
            {"num_kv_heads": 3},
            ValueError,
            r"num_kv_heads must divide num_heads, got num_heads = 4 and num_kv_heads = 3",
        ),
        (
            {"num_kv_heads": 8},
            ValueError,
            r"num_kv_heads must divide num_heads, got num_heads = 4 and num_kv_heads = 8",
        ),
        (
            {"num_kv_heads": 0},
            ValueError,
            r"num_kv_heads must be a positive int, got 0",
        ),
        (
            {"num_kv_heads": 2.0},
            TypeError,
            r"num_kv_heads must be a positive int, got float",
        ),
    ],
)
def test_num_kv_heads_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        MultiHeadAttention(16, 4, **kwargs)


def test_to_torch_needs_standard_mha():
    with pytest.raises(
        ValueError,
        match=r"to_torch needs num_kv_heads == num_heads .*"
        r"got num_heads = 4 and num_kv_heads = 2",
    ):
        MultiHeadAttention(16, 4, num_kv_heads=2).to_torch()
    theirs = MultiHeadAttention(16, 4, num_kv_heads=4).to_torch()
    assert MultiHeadAttention.from_torch(theirs).num_kv_heads == 4


# --- KV cache: decoding step by step equals one causal pass ---


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("need_weights", [True, False])
def test_token_by_token_equals_full_causal_pass(kind, need_weights):
    m = make(KINDS[kind])
    x = torch.randn(2, 9, 16, dtype=F64)
    full, full_w = m(x, x, x, causal_mask(9), need_weights=need_weights)
    cache = KVCache()
    for t in range(9):
        out, w = m.forward_step(x[:, t : t + 1], cache, need_weights=need_weights)
        assert out.shape == (2, 1, 16)
        assert (out - full[:, t : t + 1]).abs().max() < 1e-12
        if need_weights:
            assert w.shape == (2, 4, 1, t + 1)
            assert (w - full_w[:, :, t : t + 1, : t + 1]).abs().max() < 1e-12
    assert cache.seq_len == 9 and cache.keys.shape == (2, KINDS[kind], 9, 4)


@pytest.mark.parametrize("kind", list(KINDS))
def test_chunks_of_any_size_equal_full_pass(kind):
    m = make(KINDS[kind])
    x = torch.randn(2, 10, 16, dtype=F64)
    full, _ = m(x, x, x, causal_mask(10))
    cache, outs = KVCache(), []
    for a, b in [(0, 4), (4, 5), (5, 8), (8, 10)]:  # prefill 4 tokens, then 1, 3 and 2
        outs.append(m.forward_step(x[:, a:b], cache)[0])
    assert (torch.cat(outs, dim=1) - full).abs().max() < 1e-12


def test_padding_mask_combined_with_the_cache():
    m = make(2)
    x = torch.randn(2, 6, 16, dtype=F64)
    keep = padding_mask(torch.tensor([6, 6]), 6)  # (B, 1, 1, S)
    keep[1, ..., 1] = False  # sequence 1: token 1 is padding
    full, _ = m(x, x, x, causal_mask(6) & keep)
    cache = KVCache()
    out_a, _ = m.forward_step(x[:, :3], cache, keep[..., :3])
    out_b, _ = m.forward_step(x[:, 3:], cache, keep)
    assert (torch.cat([out_a, out_b], 1) - full).abs().max() < 1e-12


def test_sequence_first_layout():
    m = make(2, batch_first=False)
    x = torch.randn(7, 2, 16, dtype=F64)  # (T, B, E)
    full, _ = m(x, x, x, causal_mask(7))
    cache = KVCache()
    steps = [m.forward_step(x[t : t + 1], cache)[0] for t in range(7)]
    assert (torch.cat(steps, 0) - full).abs().max() < 1e-12


def test_gradients_flow_through_the_cache():
    m = make(1)
    x = torch.randn(1, 4, 16, dtype=F64, requires_grad=True)
    full, _ = m(x, x, x, causal_mask(4))
    g_full = torch.autograd.grad(full.sum(), x)[0]
    cache = KVCache()
    steps = torch.cat([m.forward_step(x[:, t : t + 1], cache)[0] for t in range(4)], 1)
    g_steps = torch.autograd.grad(steps.sum(), x)[0]
    assert (g_full - g_steps).abs().max() < 1e-12


def test_forward_step_errors():
    m = make(2)
    x = torch.randn(2, 3, 16, dtype=F64)
    with pytest.raises(
        TypeError, match=r"kv_cache must be a mha_book.KVCache, got NoneType"
    ):
        m.forward_step(x, None)
    with pytest.raises(
        ValueError, match=r"x must have shape \(B, T, 16\), got \(2, 3, 8\)"
    ):
        m.forward_step(x[..., :8], KVCache())
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, 16\) \(3 dims\)"):
        m.forward_step(x[0], KVCache())
    cache = KVCache()
    m.forward_step(x, cache)
    with pytest.raises(
        ValueError, match=r"x must have the batch size of kv_cache \(2\), got 1"
    ):
        m.forward_step(x[:1], cache)
    with pytest.raises(
        ValueError,
        match=r"mask of shape \(2, 1, 1, 3\) does not broadcast to "
        r"\(B, H, T, S\) = \(2, 4, 3, 6\)",
    ):
        m.forward_step(x, cache, padding_mask(torch.tensor([3, 3]), 3))
    with pytest.raises(
        ValueError,
        match=r"forward_step is self-attention and needs kdim == vdim == embed_dim, "
        r"got kdim = 8, vdim = 16, embed_dim = 16",
    ):
        MultiHeadAttention(16, 4, kdim=8, dtype=F64).forward_step(x, KVCache())
    with pytest.raises(TypeError, match=r"need_weights must be a bool, got int"):
        m.forward_step(x, KVCache(), need_weights=1)
    with pytest.raises(
        TypeError, match=r"x must have the dtype of the module's parameters"
    ):
        m.forward_step(x.float(), KVCache())


# --- KVCache on its own ---


def test_cache_appends_and_counts_bytes():
    cache = KVCache()
    assert cache.seq_len == 0 and cache.nbytes == 0 and "empty" in repr(cache)
    k1, v1 = torch.randn(2, 3, 4, 5), torch.randn(2, 3, 4, 6)
    k, v = cache.update(k1, v1)
    assert torch.equal(k, k1) and k is not k1 and v is not v1  # its own copies
    k2, v2 = torch.randn(2, 3, 1, 5), torch.randn(2, 3, 1, 6)
    k, v = cache.update(k2, v2)
    assert k.shape == (2, 3, 5, 5) and v.shape == (2, 3, 5, 6)
    assert torch.equal(k, torch.cat([k1, k2], 2)) and torch.equal(
        v, torch.cat([v1, v2], 2)
    )
    assert cache.seq_len == 5 and cache.nbytes == (2 * 3 * 5 * 5 + 2 * 3 * 5 * 6) * 4
    assert repr(cache) == "KVCache(seq_len=5, keys.shape=(2, 3, 5, 5))"
    cache.reset()
    assert cache.seq_len == 0 and cache.keys is None


def test_cache_errors():
    cache = KVCache()
    with pytest.raises(TypeError, match=r"k must be a torch.Tensor, got list"):
        cache.update([1.0], torch.zeros(1, 1, 1, 1))
    with pytest.raises(
        ValueError, match=r"v must have shape \(B, Hkv, T, D\) \(4 dims\)"
    ):
        cache.update(torch.zeros(1, 1, 1, 1), torch.zeros(1, 1, 1))
    with pytest.raises(
        ValueError, match=r"v must have the \(B, Hkv, T\) of k = \(1, 2, 3\)"
    ):
        cache.update(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 2, 4))
    with pytest.raises(TypeError, match=r"v must have the dtype of k"):
        cache.update(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4, dtype=F64))
    cache.update(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4))
    with pytest.raises(
        ValueError,
        match=r"k must have shape \(B, Hkv, T, D\) = \(1, 2, T, 4\) like the "
        r"cached ones, got \(1, 4, 1, 4\)",
    ):
        cache.update(torch.zeros(1, 4, 1, 4), torch.zeros(1, 4, 1, 4))
    with pytest.raises(TypeError, match=r"k must have the dtype of the cached tensors"):
        cache.update(
            torch.zeros(1, 2, 1, 4, dtype=F64), torch.zeros(1, 2, 1, 4, dtype=F64)
        )
    assert cache.seq_len == 3  # failed updates leave the cache as it was


def test_kv_cache_bytes_per_token():
    assert kv_cache_bytes_per_token(32, 8, 128) == 2 * 32 * 8 * 128 * 2
    assert kv_cache_bytes_per_token(1, 1, 1, bytes_per_element=4) == 8
    m = MultiHeadAttention(16, 4, num_kv_heads=2)
    cache = KVCache()
    with torch.no_grad():
        m.forward_step(torch.randn(3, 5, 16), cache)
    assert cache.nbytes == 3 * 5 * kv_cache_bytes_per_token(
        1, 2, 4, bytes_per_element=4
    )
    with pytest.raises(ValueError, match=r"num_kv_heads must be a positive int, got 0"):
        kv_cache_bytes_per_token(32, 0, 128)
