"""Chapter 17's designs, each against the plain form it replaces: rolling and
sink caches, the paged cache, latent attention, FlexAttention; then the
streaming, the sink shares and the serving simulation."""

import warnings

import pytest
import torch

from mha_book.attention import flex
from mha_book.attention.alibi import alibi_bias
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.latent import LatentAttention, LatentCache
from mha_book.attention.mask_helpers import sliding_window_mask
from mha_book.attention.masks import causal_mask, padding_mask
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.paged import BlockPool, PagedKVCache
from mha_book.attention.rope import RotaryEmbedding
from mha_book.attention.scaled_dot_product import scaled_dot_product_attention
from mha_book.attention.window_caches import RollingKVCache, SinkKVCache
from mha_book.models.decoder import CausalDecoder, DecoderConfig
from mha_book.serving.simulation import (
    RESERVATIONS,
    sample_requests,
    simulate_serving,
)
from mha_book.serving.sinks import sink_shares
from mha_book.serving.streaming import decoder_step, stream_losses

F64 = torch.float64


def _module(num_kv_heads, rope):
    torch.manual_seed(0)
    rotary = RotaryEmbedding(8) if rope else None
    return MultiHeadAttention(32, 4, num_kv_heads=num_kv_heads, rope=rotary, dtype=F64)


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])
@pytest.mark.parametrize("rope", [False, True])
@pytest.mark.parametrize("chunks", [[1] * 20, [7, 2, 1, 1, 1, 8], [20], [3, 1, 16]])
def test_rolling_cache_equals_the_windowed_full_pass(num_kv_heads, rope, chunks):
    mha, W = _module(num_kv_heads, rope).eval(), 5
    x = torch.randn(2, 20, 32, dtype=F64)
    full, _ = mha(x, x, x, sliding_window_mask(20, W))  # (B, T, E)
    cache, outs, t = RollingKVCache(W), [], 0
    for n in chunks:
        outs.append(mha.forward_step(x[:, t : t + n], cache)[0])
        t += n
    assert (torch.cat(outs, dim=1) - full).abs().max() < 1e-10
    assert cache.keys.shape == (2, num_kv_heads, W, 8)  # never more than W slots
    assert (cache.seq_len, cache.cached_len) == (20, W)


def test_rolling_cache_refuses_masks_and_bad_windows():
    mha, cache = _module(4, False), RollingKVCache(3)
    x = torch.randn(1, 2, 32, dtype=F64)
    with pytest.raises(ValueError, match="mask must be None with a RollingKVCache"):
        mha.forward_step(x, cache, causal_mask(2))
    with pytest.raises(ValueError, match="bias must be None"):
        mha.forward_step(x, cache, bias=alibi_bias(4, 2, dtype=F64)[None])
    with pytest.raises(ValueError, match="window must be a positive int, got 0"):
        RollingKVCache(0)
    with pytest.raises(ValueError, match="k must have"):
        cache.update(torch.randn(1, 4, 1, 8), torch.randn(1, 4, 1, 8))
        cache.update(torch.randn(1, 2, 1, 8), torch.randn(1, 2, 1, 8))


def test_sink_cache_keeps_the_first_tokens_at_their_cache_positions():
    mha = _module(2, True).eval()
    x = torch.randn(2, 20, 32, dtype=F64)
    # a window too large to evict: the growing cache
    big = SinkKVCache(2, 100, rope=mha.rope)
    steps = [mha.forward_step(x[:, t : t + 1], big)[0] for t in range(20)]
    full, _ = mha(x, x, x, causal_mask(20))
    assert (torch.cat(steps, dim=1) - full).abs().max() < 1e-10
    # after 14 evictions: the last output is attention over the kept tokens,
    # rotated at positions 0..5 in the cache (one layer: keys have no context)
    cache = SinkKVCache(2, 4, rope=mha.rope)
    for t in range(20):
        out, _ = mha.forward_step(x[:, t : t + 1], cache)
    kept = x[:, [0, 1, 16, 17, 18, 19]]
    ref, _ = mha(kept, kept, kept, causal_mask(6))
    assert (out[:, 0] - ref[:, -1]).abs().max() < 1e-10
    assert cache.evicted == 14 and cache.keys.shape[-2] == 6
    with pytest.raises(
        ValueError, match="k must hold one token once the cache is full"
    ):
        mha.forward_step(x[:, :2], cache)
    assert cache.evicted == 14  # nothing changed


def _paged_and_contiguous(block_size):
    torch.manual_seed(0)
    pool = BlockPool(capacity=96, block_size=block_size, num_kv_heads=2, head_dim=4)
    seqs = [PagedKVCache(pool) for _ in range(3)]
    contiguous = [KVCache() for _ in range(3)]
    for n in [5, 1, 3, 1, 1, 4]:  # interleaved appends
        for i, (paged, plain) in enumerate(zip(seqs, contiguous)):
            k, v = torch.randn(2, 2, n + i, 4).unbind(0)  # (Hkv, T, D) each
            paged.append(k, v)
            plain.update(k[None], v[None])
    return pool, seqs, contiguous


@pytest.mark.parametrize("block_size", [1, 4, 16])
def test_paged_attention_equals_contiguous(block_size):
    pool, seqs, contiguous = _paged_and_contiguous(block_size)
    q = torch.randn(1, 2, 1, 4)  # (B, Hkv, T, D): one new query
    for paged, plain in zip(seqs, contiguous):
        k, v = paged.gather()
        assert torch.equal(k, plain.keys[0]) and torch.equal(v, plain.values[0])
        out, _ = scaled_dot_product_attention(q, k[None], v[None])
        ref, _ = scaled_dot_product_attention(q, plain.keys, plain.values)
        assert torch.equal(out, ref)
    held = sorted(b for s in seqs for b in s.block_table)
    assert held == sorted(set(held))  # no block is shared
    assert len(held) + pool.num_free == pool.num_blocks


def test_paged_pool_errors():
    with pytest.raises(ValueError, match="block_size must divide capacity = 10"):
        BlockPool(capacity=10, block_size=4, num_kv_heads=1, head_dim=2)
    pool = BlockPool(capacity=8, block_size=4, num_kv_heads=1, head_dim=2)
    seq = PagedKVCache(pool)
    seq.append(torch.randn(1, 8, 2), torch.randn(1, 8, 2))
    with pytest.raises(RuntimeError, match="the pool is full"):
        seq.append(torch.randn(1, 1, 2), torch.randn(1, 1, 2))
    assert seq.length == 8  # nothing written
    seq.release()
    assert pool.num_free == 2


def test_latent_attention_absorbed_and_cached_equal_the_plain_form():
    torch.manual_seed(0)
    mla = LatentAttention(64, 4, head_dim=16, latent_dim=24, rope_dim=8, dtype=F64)
    x = torch.randn(2, 12, 64, dtype=F64)
    with torch.no_grad():
        plain = mla(x)
        assert (mla(x, absorbed=True) - plain).abs().max() < 1e-12
        for absorbed in (False, True):
            cache = LatentCache()
            steps = [mla(x[:, :5], cache, absorbed=absorbed)]
            steps += [
                mla(x[:, t : t + 1], cache, absorbed=absorbed) for t in range(5, 12)
            ]
            assert (torch.cat(steps, dim=1) - plain).abs().max() < 1e-12
    assert cache.latents.shape == (2, 12, 24) and cache.rope_keys.shape == (2, 12, 8)
    with pytest.raises(ValueError, match="latent_dim must leave the cache smaller"):
        LatentAttention(64, 4, head_dim=16, latent_dim=120, rope_dim=8)


def test_flex_attention_equals_the_book_kernels_without_a_warning():
    torch.manual_seed(0)
    B, H, T = 2, 4, 48
    q, k, v = torch.randn(3, B, H, T, 8, dtype=F64).unbind(0)
    lengths = torch.tensor([48, 30])
    docs = torch.tensor([0] * 10 + [1] * 30 + [2] * 8)
    cases = [
        (flex.causal, None, causal_mask(T), None),
        (flex.sliding_window(6), None, sliding_window_mask(T, 6), None),
        (flex.padding(lengths), None, padding_mask(lengths, T), None),
        (
            flex.document(docs),
            None,
            (docs[:, None] == docs[None, :]) & causal_mask(T),
            None,
        ),
        (flex.causal, flex.alibi(H), causal_mask(T), alibi_bias(H, T, dtype=F64)[None]),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for mask_mod, score_mod, mask, bias in cases:
            out = flex.flex_attend(q, k, v, mask_mod=mask_mod, score_mod=score_mod)
            ref, _ = scaled_dot_product_attention(q, k, v, mask, bias=bias)
            assert (out - ref).abs().max() < 1e-12
    doc = flex.dense_mask(flex.document(docs), T, T)
    assert not doc[10:, :10].any() and torch.equal(doc[:10, :10], causal_mask(10))
    assert flex.block_sparsity(flex.causal, 512, 512, block_size=128) == 6 / 16


def _tiny(positions):
    torch.manual_seed(0)
    config = DecoderConfig(30, 16, 2, 2, max_len=8, positions=positions)
    return CausalDecoder(config).eval()


@pytest.mark.parametrize("positions", ["rope", "alibi", "none"])
def test_streaming_policies_agree_until_the_first_eviction(positions):
    model = _tiny(positions)
    ids = torch.randint(0, 30, (2, 24))
    losses = {
        policy: stream_losses(model, ids, policy=policy, cache_size=8, sinks=2)
        for policy in ("dense", "window", "sinks", "recompute")
    }
    for policy, loss in losses.items():
        assert loss.shape == (2, 23) and torch.isfinite(loss).all()
        assert torch.allclose(loss[:, :8], losses["dense"][:, :8], atol=1e-5), policy
    # decoder_step with a growing cache is the model's own forward
    caches = [KVCache(), KVCache()]
    steps = [decoder_step(model, ids[:, t : t + 1], caches) for t in range(8)]
    assert torch.allclose(torch.cat(steps, dim=1), model(ids[:, :8])[0], atol=1e-5)


def test_streaming_refuses_absolute_positions():
    with pytest.raises(ValueError, match="model must use relative positions"):
        stream_losses(_tiny("learned"), torch.zeros(1, 4, dtype=torch.long),
                      policy="window", cache_size=4)  # fmt: skip


def test_sink_shares_against_a_head_that_always_looks_at_the_first_token():
    causal = causal_mask(6).to(F64)
    even = causal / causal.sum(-1, keepdim=True)  # (T, S): uniform over allowed keys
    sink = torch.zeros(6, 6, dtype=F64)
    sink[:, 0] = 1.0
    w = torch.stack([even, sink])[None]  # (1, 2, T, S)
    shares, evens = sink_shares([w], skip=2)
    assert torch.allclose(
        shares, torch.tensor([[sum(1 / n for n in range(3, 7)) / 4, 1.0]], dtype=F64)
    )
    assert torch.allclose(evens[0, 0], shares[0, 0])


def test_serving_simulation_finishes_every_request_and_paging_wastes_least():
    reqs = sample_requests(60, max_len=256, mean_output=32, seed=1)
    runs = {
        r: simulate_serving(
            reqs, capacity=1024, max_len=256, reservation=r, block_size=16
        )
        for r in RESERVATIONS
    }
    for run in runs.values():
        assert 0 < run.token_share <= 1 and run.steps >= max(o for _, o in reqs)
    assert (
        runs["paged"].token_share > runs["oracle"].token_share > runs["max"].token_share
    )
    assert runs["paged"].mean_running > runs["max"].mean_running
    with pytest.raises(ValueError, match="must fit in max_len = 256"):
        simulate_serving([(200, 100)], capacity=1024, max_len=256, reservation="max")
