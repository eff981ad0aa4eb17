"""What the fault catalogue's whole-call cases found (tools/fault_review/):
a cache shared by two layers, a flex mod made for other sizes, mismatched
paged keys and values, a reused update buffer, a lost train mode."""

import pytest
import torch

import mha_book
from mha_book.attention import flex
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.latent import LatentAttention, LatentCache
from mha_book.attention.paged import BlockPool, PagedKVCache
from mha_book.models.decoder import CausalDecoder, DecoderConfig
from mha_book.serving.streaming import stream_losses


def test_a_kv_cache_refuses_a_second_layer_until_reset():
    a, b = (mha_book.MultiHeadAttention(12, 3).eval() for _ in range(2))
    cache, x = KVCache(), torch.randn(2, 1, 12)
    a.forward_step(x, cache)
    with pytest.raises(ValueError, match="kv_cache must belong to one layer"):
        b.forward_step(x, cache)
    a.forward_step(x, cache)  # its own layer goes on
    cache.reset()
    b.forward_step(x, cache)  # a reset cache serves any layer


def test_a_kv_cache_of_a_freed_layer_is_refused_by_name():
    cache = KVCache()
    mha_book.MultiHeadAttention(12, 2).eval().forward_step(torch.randn(2, 1, 12), cache)
    with pytest.raises(ValueError, match="kv_cache"):  # not "k must have shape"
        mha_book.MultiHeadAttention(12, 3).eval().forward_step(
            torch.randn(2, 1, 12), cache
        )


def test_a_latent_cache_refuses_a_second_layer():
    a, b = (LatentAttention(16, 2, head_dim=8, latent_dim=8, rope_dim=4) for _ in "ab")
    cache, x = LatentCache(), torch.randn(2, 1, 16)
    with torch.no_grad():
        a(x, cache)
        with pytest.raises(ValueError, match="cache must belong to one layer"):
            b(x, cache)


@pytest.mark.parametrize(
    ("kwargs", "dim"),
    [
        ({"score_mod": flex.alibi(4)}, "H = 4"),
        ({"mask_mod": flex.padding(torch.tensor([2, 3]))}, "B = 2"),
        ({"mask_mod": flex.document(torch.tensor([0, 0, 1, 1, 1, 1, 2]))}, "S = 7"),
    ],
)
def test_flex_refuses_a_mod_made_for_other_sizes(kwargs, dim):
    q = torch.randn(1, 2, 6, 4)
    with pytest.raises(ValueError, match=f"made for {dim}"):
        flex.flex_attend(q, q, q, **kwargs)


def test_paged_append_names_v_of_another_length():
    pool = BlockPool(16, 4, num_kv_heads=2, head_dim=4)
    with pytest.raises(ValueError, match="v must have the shape of k"):
        PagedKVCache(pool).append(torch.randn(2, 5, 4), torch.randn(2, 4, 4))


def test_kv_cache_keeps_its_own_copy_of_a_reused_buffer():
    buffer, steps, cache = (
        torch.empty(1, 2, 1, 4),
        torch.randn(2, 1, 2, 1, 4),
        KVCache(),
    )
    for step in steps:
        buffer.copy_(step)
        keys, _ = cache.update(buffer, buffer)
    assert torch.equal(keys, torch.cat(list(steps), dim=2))


def test_stream_losses_leaves_the_model_in_its_mode():
    model = CausalDecoder(DecoderConfig(12, 8, 2, 1, max_len=8, positions="rope"))
    model.train()
    stream_losses(
        model, torch.randint(0, 12, (1, 10)), policy="sinks", cache_size=4, sinks=1
    )
    assert model.training
