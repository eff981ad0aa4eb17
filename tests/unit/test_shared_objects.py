"""Objects shared or reused across calls, and arguments that must agree:
a block freed from under its cache, a sink cache without the layer's RoPE,
raw scores given as weights, allocations no machine holds."""

import pytest
import torch

from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.paged import BlockPool, PagedKVCache
from mha_book.attention.rope import RotaryEmbedding
from mha_book.attention.window_caches import RollingKVCache, SinkKVCache
from mha_book.serving.sinks import sink_shares


def test_a_block_cannot_be_freed_from_under_its_cache():
    pool = BlockPool(capacity=8, block_size=2, num_kv_heads=1, head_dim=4)
    a, b = PagedKVCache(pool), PagedKVCache(pool)
    a.append(torch.randn(1, 3, 4), torch.randn(1, 3, 4))
    keys_before = a.gather()[0].clone()
    with pytest.raises(ValueError, match="held by PagedKVCache.*release that cache"):
        pool.free(a.block_table)
    b.append(torch.randn(1, 4, 4), torch.randn(1, 4, 4))  # takes other blocks
    assert set(a.block_table).isdisjoint(b.block_table)
    assert torch.equal(a.gather()[0], keys_before)
    a.release()
    assert pool.num_free == 2


def test_free_names_what_it_was_given():
    pool = BlockPool(capacity=8, block_size=2, num_kv_heads=1, head_dim=4)
    block = pool.allocate()
    for bad, kind in ((None, TypeError), (5, TypeError), ([[0]], TypeError)):
        with pytest.raises(kind, match="blocks must"):
            pool.free(bad)
    with pytest.raises(ValueError, match="blocks in use"):
        pool.free([3])
    pool.free([block])
    with pytest.raises(ValueError, match="blocks in use"):
        pool.free([block])  # twice


def test_allocations_no_machine_holds_are_refused_before_they_are_tried():
    with pytest.raises(ValueError, match="capacity would need .* TiB"):
        BlockPool(capacity=2**50, block_size=16, num_kv_heads=8, head_dim=64)
    cache = RollingKVCache(window=10**12)
    with pytest.raises(ValueError, match="window would need .* TiB"):
        cache.update(torch.randn(1, 1, 1, 8), torch.randn(1, 1, 1, 8))


def decode(mha, cache, x):
    return torch.cat(
        [mha.forward_step(x[:, t : t + 1], cache)[0] for t in range(x.shape[1])], 1
    )


def test_a_sink_cache_must_rotate_as_its_layer_does():
    torch.manual_seed(0)
    rope = RotaryEmbedding(8)
    mha = MultiHeadAttention(16, 2, rope=rope).eval()
    x = torch.randn(1, 6, 16)
    with pytest.raises(ValueError, match="rope=layer.rope"):
        decode(mha, SinkKVCache(1, 3), x)
    plain = MultiHeadAttention(16, 2).eval()
    with pytest.raises(ValueError, match="rope=layer.rope"):
        decode(plain, SinkKVCache(1, 3, rope), x)
    with pytest.raises(ValueError, match="rope=layer.rope"):
        decode(mha, SinkKVCache(1, 3, RotaryEmbedding(8, base=500.0)), x)
    # before anything is evicted, a sink cache is the plain cache
    with torch.no_grad():
        out = decode(mha, SinkKVCache(1, 8, rope), x)
        full = mha(x, x, x, torch.ones(6, 6).tril().bool())[0]
    torch.testing.assert_close(out, full)


def test_sink_shares_refuses_scores():
    scores = torch.randn(1, 2, 4, 4)
    with pytest.raises(ValueError, match="softmax the scores first"):
        sink_shares([scores])
    shares, _ = sink_shares([scores.softmax(-1)])
    assert (shares >= 0).all()


def test_one_latent_cache_cannot_serve_two_layers_of_other_sizes():
    from mha_book.attention.latent import LatentAttention, LatentCache

    small = LatentAttention(64, 4, head_dim=16, latent_dim=32, rope_dim=8)
    large = LatentAttention(64, 4, head_dim=16, latent_dim=48, rope_dim=8)
    cache = LatentCache()
    small(torch.randn(1, 3, 64), cache)
    with pytest.raises(ValueError, match="one LatentCache per layer"):
        large(torch.randn(1, 1, 64), cache)
    with pytest.raises(ValueError, match="one LatentCache per layer"):
        small.double()(torch.randn(1, 1, 64, dtype=torch.float64), cache)


def test_a_paged_append_of_no_tokens_is_named():
    pool = BlockPool(capacity=8, block_size=2, num_kv_heads=1, head_dim=4)
    with pytest.raises(ValueError, match="at least one new token, got T = 0"):
        PagedKVCache(pool).append(torch.randn(1, 0, 4), torch.randn(1, 0, 4))
