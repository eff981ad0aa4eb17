"""The classic traps of porting masks from nn.MultiheadAttention, each closed.

1. A per-sequence key mask ``(B, S)`` given as ``mask`` is read as ``(T, S)``
   when B == T. It has its own argument, ``key_mask``, and a refused ``(B, S)``
   mask says so.
2. A per-sequence ``(B, T, S)`` mask is read as per-head ``(H, T, S)`` when
   B == H. Masks of rank 3 are refused against 4-D scores, with the 4-D shape
   to use.
"""

import pytest
import torch
from torch import nn

from mha_book.attention.flash import flash_attention
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.masks import causal_mask, flip_mask_convention, padding_mask
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.scaled_dot_product import (
    fused_attention,
    scaled_dot_product_attention,
)
from mha_book.models.layers import DecoderLayer, EncoderLayer

F64 = torch.float64


def module_and_input(B, T, E=12, H=3, seed=0):
    torch.manual_seed(seed)
    mha = MultiHeadAttention(E, H, dtype=F64).eval()
    return mha, torch.randn(B, T, E, dtype=F64)


def real_keys(lengths, S):
    return padding_mask(torch.tensor(lengths), S)[:, 0, 0, :]  # (B, S)


# --- trap 1: (B, S) read as (T, S) ---


def test_key_mask_with_batch_equal_to_length_masks_each_sequence_own_keys():
    B = T = 4  # the shape of the trap: (B, S) == (T, S)
    mha, x = module_and_input(B, T)
    keys = real_keys([1, 2, 3, 4], T)  # (B, S)
    _, w = mha(x, x, x, key_mask=keys)
    _, w_4d = mha(x, x, x, mask=keys[:, None, None, :])
    torch.testing.assert_close(w, w_4d, rtol=0, atol=0)
    assert (w * ~keys[:, None, None, :]).sum() == 0  # no weight on padding keys
    # The same bools in `mask` are read as (T, S): query t of every sequence
    # would see t + 1 keys, which is not what the key mask means.
    _, w_trap = mha(x, x, x, mask=keys)
    assert (w_trap - w).abs().max() > 0.1


def test_key_mask_matches_nn_multihead_attention_key_padding_mask():
    B, T, E, H = 3, 3, 12, 3  # B == T again
    torch.manual_seed(1)
    theirs = nn.MultiheadAttention(E, H, batch_first=True, dtype=F64).eval()
    ours = MultiHeadAttention.from_torch(theirs)
    x = torch.randn(B, T, E, dtype=F64)
    keys = real_keys([1, 3, 2], T)
    out, w = ours(x, x, x, key_mask=keys)
    ref, w_ref = theirs(
        x,
        x,
        x,
        key_padding_mask=flip_mask_convention(keys),
        average_attn_weights=False,
    )
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(w, w_ref)


def test_key_mask_combines_with_mask():
    B, T = 2, 5
    mha, x = module_and_input(B, T)
    keys = real_keys([3, 5], T)
    _, w = mha(x, x, x, causal_mask(T), key_mask=keys)
    _, w_ref = mha(x, x, x, causal_mask(T) & keys[:, None, None, :])
    torch.testing.assert_close(w, w_ref, rtol=0, atol=0)


@pytest.mark.parametrize("need_weights", [True, False])
def test_key_mask_in_cached_decoding_equals_the_full_pass(need_weights):
    B, T = 2, 6
    mha, x = module_and_input(B, T)
    keys = real_keys([6, 4], T).flip(-1)  # left padding: sequence 1 starts at 2
    full, _ = mha(x, x, x, causal_mask(T), key_mask=keys)
    cache, steps = KVCache(), []
    for t in range(T):
        out, _ = mha.forward_step(
            x[:, t : t + 1], cache, need_weights=need_weights, key_mask=keys[:, : t + 1]
        )
        steps.append(out)
    real = keys[:, :, None]  # (B, T, 1): padding queries have no allowed key
    torch.testing.assert_close(torch.cat(steps, 1) * real, full * real)


def test_a_refused_batch_by_key_mask_names_key_mask():
    mha, x = module_and_input(2, 5)
    with pytest.raises(
        ValueError,
        match=r"mask of shape \(2, 5\) does not broadcast to \(B, H, T, S\) = "
        r"\(2, 3, 5, 5\); for a per-sequence \(B, S\) mask use key_mask=mask or "
        r"mask\[:, None, None, :\]$",
    ):
        mha(x, x, x, mask=real_keys([3, 5], 5))


def test_the_kernels_name_the_4d_form_of_a_batch_by_key_mask():
    q = k = v = torch.randn(2, 3, 5, 8)  # (B, H, T, D)
    with pytest.raises(
        ValueError,
        match=r"; for a per-sequence \(B, S\) mask use mask\[:, None, None, :\]$",
    ):
        scaled_dot_product_attention(q, k, v, real_keys([3, 5], 5))


@pytest.mark.parametrize(
    "key_mask, exc, match",
    [
        (
            torch.ones(2, 5),
            TypeError,
            r"key_mask must have dtype torch.bool \(True = may attend\), got "
            r"torch.float32; nn.MultiheadAttention's key_padding_mask is "
            r"True = blocked: use flip_mask_convention",
        ),
        (
            torch.ones(2, 1, 1, 5, dtype=torch.bool),
            ValueError,
            r"key_mask must have shape \(B, S\) = \(2, 5\) \(B from query, S from key\), "
            r"got \(2, 1, 1, 5\); "
            r"a \(B, 1, 1, S\) mask from padding_mask goes to mask instead",
        ),
        (
            torch.ones(5, 2, dtype=torch.bool),
            ValueError,
            r"key_mask must have shape \(B, S\) = \(2, 5\) \(B from query, S from key\), "
            r"got \(5, 2\)$",
        ),
        ([[True] * 5] * 2, TypeError, r"key_mask must be a torch.Tensor, got list"),
    ],
)
def test_bad_key_masks_are_named(key_mask, exc, match):
    mha, x = module_and_input(2, 5)
    with pytest.raises(exc, match=match):
        mha(x, x, x, key_mask=key_mask)


def test_forward_step_key_mask_must_cover_cached_and_new_keys():
    mha, x = module_and_input(2, 3)
    cache = KVCache()
    mha.forward_step(x[:, :2], cache)
    with pytest.raises(
        ValueError,
        match=r"key_mask must have shape \(B, S\) = \(2, 3\) "
        r"\(B from x, S = cached \+ new keys\), got \(2, 1\)",
    ):
        mha.forward_step(x[:, 2:], cache, key_mask=torch.ones(2, 1, dtype=torch.bool))


# --- trap 2: (B, T, S) read as (H, T, S) ---


def per_sequence_masks(B, T):
    g = torch.Generator().manual_seed(2)
    m = torch.rand(B, T, T, generator=g) < 0.6
    m[..., 0] = True  # every query sees at least its first key
    return m  # (B, T, S)


def test_a_rank_three_mask_is_refused_by_the_module_with_the_4d_shapes():
    B = H = 3  # the shape of the trap: (B, T, S) == (H, T, S)
    mha, x = module_and_input(B, 4, H=H)
    with pytest.raises(
        ValueError,
        match=r"mask of shape \(3, 4, 4\) is ambiguous: give it 2 dims \(T, S\) or "
        r"all 4 dims of \(B, H, T, S\) = \(3, 3, 4, 4\), with 1 on each axis it is "
        r"shared along: a per-sequence \(B, T, S\) mask is mask\[:, None\] = "
        r"\(B, 1, T, S\), a per-head \(H, T, S\) mask is mask\[None\] = \(1, H, T, S\)",
    ):
        mha(x, x, x, mask=per_sequence_masks(B, 4))


def test_the_4d_form_of_a_per_sequence_mask_masks_each_sequence():
    B = H = 3
    T = 4
    mha, x = module_and_input(B, T, H=H)
    m = per_sequence_masks(B, T)  # (B, T, S)
    _, w = mha(x, x, x, mask=m[:, None])  # (B, 1, T, S)
    for b in range(B):  # each sequence alone, with its own (T, S) mask
        _, w_b = mha(x[b : b + 1], x[b : b + 1], x[b : b + 1], mask=m[b])
        torch.testing.assert_close(w[b : b + 1], w_b)
    assert (w * ~m[:, None]).sum() == 0


@pytest.mark.parametrize(
    "kernel",
    [
        lambda q, k, v, m: scaled_dot_product_attention(q, k, v, m)[0],
        fused_attention,
        flash_attention,
    ],
    ids=["explicit", "fused", "flash"],
)
def test_every_kernel_refuses_a_rank_three_mask_against_4d_scores(kernel):
    q = k = v = torch.randn(3, 3, 4, 8)  # (B, H, T, D) with B == H
    with pytest.raises(ValueError, match=r"mask of shape \(3, 4, 4\) is ambiguous"):
        kernel(q, k, v, per_sequence_masks(3, 4))


def test_a_rank_three_mask_is_the_full_rank_for_3d_queries():
    q = k = v = torch.randn(3, 4, 8)  # (B, T, D): no head axis
    m = per_sequence_masks(3, 4)  # (B, T, S) is the full rank here
    _, w = scaled_dot_product_attention(q, k, v, m)
    assert (w * ~m).sum() == 0


def test_layers_refuse_rank_three_masks_too():
    torch.manual_seed(0)
    x = torch.randn(2, 4, 12)
    with pytest.raises(ValueError, match=r"mask of shape \(2, 4, 4\) is ambiguous"):
        EncoderLayer(12, 2, 24).eval()(x, per_sequence_masks(2, 4))
    with pytest.raises(
        ValueError, match=r"self_mask of shape \(2, 4, 4\) is ambiguous"
    ):
        DecoderLayer(12, 2, 24).eval()(x, x, self_mask=per_sequence_masks(2, 4))
