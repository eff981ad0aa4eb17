"""Tests for rotary position embeddings: the reference, the maths, the module."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_book.attention.kv_cache import KVCache
from mha_book.attention.masks import causal_mask
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.rope import (
    RotaryEmbedding,
    apply_rotary,
    rotary_cos_sin,
    rotary_frequencies,
)
from mha_book.attention.rope import rotate_half as our_rotate_half

F64 = torch.float64


def make(num_kv_heads=None, rope=True, E=32, H=4, seed=0):
    torch.manual_seed(seed)
    rope = RotaryEmbedding(E // H) if rope is True else rope
    m = MultiHeadAttention(E, H, num_kv_heads=num_kv_heads, rope=rope, dtype=F64)
    with torch.no_grad():
        for p in (m.q_proj, m.k_proj, m.v_proj, m.out_proj):
            p.bias.normal_()  # exercise the biases
    return m.eval()


# --- against Hugging Face transformers (skipped where it is not installed) ---
def hf(module: str):
    """``transformers.models.<module>``, or a skip where transformers is missing."""
    return pytest.importorskip(f"transformers.models.{module}")


def test_rotate_half_matches_transformers():
    x = torch.randn(2, 3, 5, 8)
    llama = hf("llama.modeling_llama")
    assert torch.equal(our_rotate_half(x), llama.rotate_half(x))


@pytest.mark.parametrize("base", [10000.0, 500000.0])
def test_full_rotary_matches_llama(base):
    llama = hf("llama.modeling_llama")
    B, H, T, D = 2, 4, 12, 16
    config = llama.LlamaConfig(
        hidden_size=H * D,
        num_attention_heads=H,
        head_dim=D,
        rope_parameters={"rope_type": "default", "rope_theta": base},
    )
    q, k = torch.randn(B, H, T, D), torch.randn(B, H, T, D)
    position_ids = torch.arange(T)[None].expand(B, T)  # (B, T)
    cos, sin = llama.LlamaRotaryEmbedding(config)(q, position_ids)  # (B, T, D) each
    ours_cos, ours_sin = rotary_cos_sin(torch.arange(T), D, base)  # (T, D)
    torch.testing.assert_close(ours_cos, cos[0], atol=1e-6, rtol=0)
    torch.testing.assert_close(ours_sin, sin[0], atol=1e-6, rtol=0)
    q_ref, k_ref = llama.apply_rotary_pos_emb(q, k, cos, sin)
    q_rot, k_rot = RotaryEmbedding(D, base=base)(q, k)
    torch.testing.assert_close(q_rot, q_ref, atol=1e-6, rtol=0)
    torch.testing.assert_close(k_rot, k_ref, atol=1e-6, rtol=0)


def test_partial_rotary_matches_gpt_neox():
    neox = hf("gpt_neox.modeling_gpt_neox")
    B, H, T, D, R = 2, 4, 12, 16, 4
    config = neox.GPTNeoXConfig(
        hidden_size=H * D,
        num_attention_heads=H,
        rope_parameters={
            "rope_type": "default",
            "rope_theta": 10000.0,
            "partial_rotary_factor": R / D,
        },
    )
    q, k = torch.randn(B, H, T, D), torch.randn(B, H, T, D)
    position_ids = torch.arange(3, 3 + T)[None].expand(B, T)  # (B, T), from 3
    cos, sin = neox.GPTNeoXRotaryEmbedding(config)(q, position_ids)  # (B, T, R) each
    assert cos.shape == (B, T, R)
    q_ref, k_ref = neox.apply_rotary_pos_emb(q, k, cos, sin)
    q_rot, k_rot = RotaryEmbedding(D, rotary_dim=R)(q, k, offset=3)
    torch.testing.assert_close(q_rot, q_ref, atol=1e-6, rtol=0)
    torch.testing.assert_close(k_rot, k_ref, atol=1e-6, rtol=0)
    assert torch.equal(q_rot[..., R:], q[..., R:])  # the rest passes unchanged


def test_frequencies_formula():
    theta = rotary_frequencies(8, base=100.0)
    expected = torch.tensor(
        [1.0, 100 ** (-2 / 8), 100 ** (-4 / 8), 100 ** (-6 / 8)], dtype=F64
    )
    torch.testing.assert_close(theta, expected, atol=1e-15, rtol=0)


# --- the maths: relative scores, norms ---


def test_scores_depend_only_on_the_offset():
    """<R(m) q, R(n) k> = <R(m + s) q, R(n + s) k> for every shift s."""
    torch.manual_seed(0)
    D = 16
    q, k = torch.randn(D, dtype=F64), torch.randn(D, dtype=F64)
    for rotary_dim in (16, 6):

        def score(m, n, rotary_dim=rotary_dim):
            qm = apply_rotary(q[None], torch.tensor([m]), rotary_dim=rotary_dim)
            kn = apply_rotary(k[None], torch.tensor([n]), rotary_dim=rotary_dim)
            return (qm @ kn.T).item()

        for m, n in [(0, 0), (3, 1), (1, 3), (7, 2), (20, 20)]:
            for shift in (1, 5, 100, 4096):
                assert abs(score(m + shift, n + shift) - score(m, n)) < 1e-10
        assert abs(score(3, 1) - score(1, 3)) > 1e-3  # but the sign of m - n matters


def test_rotations_preserve_norms_and_position_zero_is_identity():
    x = torch.randn(2, 3, 9, 8, dtype=F64)
    positions = torch.arange(9) * 37
    rotated = apply_rotary(x, positions)
    torch.testing.assert_close(rotated.norm(dim=-1), x.norm(dim=-1), atol=1e-12, rtol=0)
    pair_norms = lambda t: t[..., :4] ** 2 + t[..., 4:] ** 2  # noqa: E731
    torch.testing.assert_close(pair_norms(rotated), pair_norms(x), atol=1e-12, rtol=0)
    assert torch.equal(apply_rotary(x, torch.zeros(9, dtype=torch.long)), x)


# --- the module ---


@pytest.mark.parametrize("num_kv_heads", [None, 2, 1])  # MHA, GQA, MQA
def test_cached_decoding_equals_the_full_causal_pass(num_kv_heads):
    mha = make(num_kv_heads)
    x = torch.randn(2, 9, 32, dtype=F64)
    full, w_full = mha(x, x, x, causal_mask(9))  # (B, T, E), (B, H, T, T)

    cache = KVCache()
    steps = [mha.forward_step(x[:, t : t + 1], cache) for t in range(9)]
    out = torch.cat([o for o, _ in steps], dim=1)  # (B, T, E)
    torch.testing.assert_close(out, full, atol=1e-10, rtol=0)
    torch.testing.assert_close(steps[-1][1], w_full[:, :, -1:], atol=1e-10, rtol=0)

    cache = KVCache()  # a prefill of 4 tokens, then chunks of 3 and 2
    chunks = [
        mha.forward_step(x[:, a:b], cache)[0] for a, b in [(0, 4), (4, 7), (7, 9)]
    ]
    torch.testing.assert_close(torch.cat(chunks, dim=1), full, atol=1e-10, rtol=0)


def test_cached_keys_are_stored_rotated():
    mha = make(2)
    x = torch.randn(2, 5, 32, dtype=F64)
    cache = KVCache()
    mha.forward_step(x, cache)
    k = mha.k_proj(x).view(2, 5, 2, 8).transpose(1, 2)  # (B, Hkv, T, D)
    torch.testing.assert_close(
        cache.keys, apply_rotary(k, torch.arange(5)), atol=1e-12, rtol=0
    )


def test_rope_changes_the_output_and_breaks_permutation_equivariance():
    with_rope, without = make(rope=True), make(rope=None)  # same weights (seed)
    x = torch.randn(2, 7, 32, dtype=F64)
    assert (with_rope(x, x, x)[0] - without(x, x, x)[0]).abs().max() > 1e-3
    perm = torch.tensor([6, 5, 4, 3, 2, 1, 0])
    xp = x[:, perm]
    out, out_perm = with_rope(x, x, x)[0], with_rope(xp, xp, xp)[0]
    assert (out_perm - out[:, perm]).abs().max() > 1e-3
    # without rope the same shuffle is invisible (tests/unit/test_positions.py)
    torch.testing.assert_close(
        without(xp, xp, xp)[0], without(x, x, x)[0][:, perm], atol=1e-12, rtol=0
    )


@pytest.mark.parametrize("kernel", ["explicit", "fused", "flash"])
def test_every_kernel_sees_the_rotated_keys(kernel):
    mha = make(2)
    x = torch.randn(2, 6, 32, dtype=F64)
    ref = mha(x, x, x, causal_mask(6))[0]
    mha.kernel = kernel
    out = mha(x, x, x, causal_mask(6), need_weights=False)[0]
    torch.testing.assert_close(out, ref, atol=1e-10, rtol=0)


def test_batch_first_false_rotates_along_time():
    torch.manual_seed(0)
    rope = RotaryEmbedding(8)
    first = MultiHeadAttention(32, 4, rope=rope, dtype=F64).eval()
    second = MultiHeadAttention(32, 4, rope=rope, batch_first=False, dtype=F64).eval()
    second.load_state_dict(first.state_dict())
    x = torch.randn(2, 5, 32, dtype=F64)
    xt = x.transpose(0, 1)  # (T, B, E)
    torch.testing.assert_close(
        second(xt, xt, xt)[0].transpose(0, 1), first(x, x, x)[0], atol=1e-12, rtol=0
    )


def test_rope_adds_no_state():
    assert make(rope=True).state_dict().keys() == make(rope=None).state_dict().keys()


# --- bad input ---


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"head_dim": 8, "rotary_dim": 3}, ValueError, r"rotary_dim must be even"),
        (
            {"head_dim": 8, "rotary_dim": 10},
            ValueError,
            r"rotary_dim must be even and at most the head dim D = 8, got 10",
        ),
        ({"head_dim": 7}, ValueError, r"head_dim must be even to rotate all of it"),
        ({"head_dim": 8, "base": 0.0}, ValueError, r"base must be a finite float > 1"),
        ({"head_dim": 8, "base": -5.0}, ValueError, r"base must be .*, got -5.0"),
        ({"head_dim": 8, "base": float("nan")}, ValueError, r"base must be a finite"),
        (
            {"head_dim": 8, "base": "1e4"},
            TypeError,
            r"base must be a float > 1, got str",
        ),
        ({"head_dim": 8.0}, TypeError, r"head_dim must be a positive int, got float"),
        (
            {"head_dim": 8, "rotary_dim": 4.0},
            TypeError,
            r"rotary_dim must be a positive int, got float",
        ),
        ({"head_dim": 0}, ValueError, r"head_dim must be a positive int, got 0"),
    ],
)
def test_rotary_embedding_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        RotaryEmbedding(**kwargs)


def test_rotary_embedding_call_errors():
    rope = RotaryEmbedding(8)
    q = torch.randn(1, 2, 3, 8)
    with pytest.raises(
        ValueError, match=r"k must have head dim D = 8 .*got \(1, 2, 3, 6\)"
    ):
        rope(q, torch.randn(1, 2, 3, 6))
    with pytest.raises(ValueError, match=r"offset must be a non-negative int, got -1"):
        rope(q, q, offset=-1)
    with pytest.raises(TypeError, match=r"q must be a torch.Tensor, got list"):
        rope([1.0], q)


@pytest.mark.parametrize(
    "x, positions, kwargs, exc, match",
    [
        (torch.randn(3, 8), torch.arange(4), {}, ValueError, r"positions must have shape \(T,\) = \(3\)"),
        (torch.randn(3, 8), torch.arange(3.0), {}, TypeError, r"positions must be an integer tensor"),
        (torch.randn(3, 7), torch.arange(3), {}, ValueError, r"x's head dim D must be even"),
        (torch.randn(3, 8), torch.arange(3), {"rotary_dim": 5}, ValueError, r"rotary_dim must be even"),
        (torch.arange(24).view(3, 8), torch.arange(3), {}, TypeError, r"x must be a floating-point"),
        (torch.randn(8), torch.arange(1), {}, ValueError, r"x must have shape \(\.\.\., T, D\)"),
        (torch.randn(3, 8), torch.arange(3), {"base": 1.0}, ValueError, r"base must be a finite float > 1, got 1.0"),
    ],
)  # fmt: skip
def test_apply_rotary_errors(x, positions, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        apply_rotary(x, positions, **kwargs)


def test_module_rope_errors():
    with pytest.raises(
        TypeError, match=r"rope must be a mha_book.RotaryEmbedding or None, got bool"
    ):
        MultiHeadAttention(32, 4, rope=True)
    with pytest.raises(
        ValueError,
        match=r"rope must have the module's head_dim = .* = 8, got RotaryEmbedding\(head_dim=16\)",
    ):
        MultiHeadAttention(32, 4, rope=RotaryEmbedding(16))
    mha = make()
    q, kv = torch.randn(2, 3, 32, dtype=F64), torch.randn(2, 5, 32, dtype=F64)
    with pytest.raises(
        ValueError, match=r"key must have the length of query .* T = 3 and S = 5"
    ):
        mha(q, kv, kv)
    with pytest.raises(ValueError, match=r"to_torch needs rope=None"):
        mha.to_torch()


@settings(max_examples=15, deadline=None)
@given(
    cuts=st.lists(st.integers(1, 8), min_size=1, max_size=4, unique=True),
    num_kv_heads=st.sampled_from([None, 2, 1]),
    rotary_dim=st.sampled_from([8, 4, 2]),
)
def test_any_split_into_chunks_equals_the_full_pass(cuts, num_kv_heads, rotary_dim):
    mha = make(num_kv_heads, rope=RotaryEmbedding(8, rotary_dim=rotary_dim))
    x = torch.randn(1, 9, 32, dtype=F64)
    full = mha(x, x, x, causal_mask(9))[0]
    bounds = [0, *sorted(cuts), 9]
    cache = KVCache()
    chunks = [mha.forward_step(x[:, a:b], cache)[0] for a, b in zip(bounds, bounds[1:])]
    torch.testing.assert_close(torch.cat(chunks, dim=1), full, atol=1e-10, rtol=0)
