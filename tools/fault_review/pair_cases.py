"""Pairs that must agree, varied together so they disagree (see ``checks``)."""

from __future__ import annotations

import torch

import mha_book
from mha_book.attention import flex
from mha_book.attention.flash import online_softmax_update
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.latent import LatentAttention, LatentCache
from mha_book.attention.paged import BlockPool, PagedKVCache
from mha_book.attention.window_caches import RollingKVCache, SinkKVCache
from mha_book.lm import charlm
from mha_book.models.bert import BertConfig, BertEncoder
from mha_book.models.blocks import DecoderOnlyBlock
from mha_book.seq2seq.dates import date_vocabulary
from mha_book.seq2seq.translator import Translator, TranslatorConfig
from mha_book.serving.simulation import simulate_serving
from mha_book.serving.streaming import stream_losses
from tools.fault_review.checks import Check, refused

QKV = ("q", "k", "v")


def _pair(api: str, name: str, call, *names: str) -> Check:
    return Check(api, "pair", name, refused(call), names)


def _r(*shape, dtype=torch.float32, device="cpu") -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, device=device)


def kernel_pairs() -> list[Check]:
    """The three kernels: batch, heads, lengths, head dim, dtype, device, masks."""
    kernels = {
        "scaled_dot_product_attention": mha_book.scaled_dot_product_attention,
        "fused_attention": mha_book.fused_attention,
        "flash_attention": mha_book.flash_attention,
    }
    q, k = _r(2, 3, 4, 8), _r(2, 3, 6, 8)
    bad = {
        "q batch 2, k and v batch 3": ((q, _r(3, 3, 6, 8), _r(3, 3, 6, 8)), {}, QKV),
        "q 3 heads, k and v 2": ((q, _r(2, 2, 6, 8), _r(2, 2, 6, 8)), {}, QKV),
        "k length 6, v length 5": ((q, k, _r(2, 3, 5, 8)), {}, ("k", "v")),
        "q head dim 8, k head dim 4": ((q, _r(2, 3, 6, 4), k), {}, ("q", "k")),
        "q float64, k and v float32": ((q.double(), k, k), {}, QKV),
        "k and v on the meta device": ((q, k.to("meta"), k.to("meta")), {}, QKV),
        "mask (T, S + 1)": ((q, k, k), {"mask": mha_book.causal_mask(4, 7)}, ("mask",)),
        "mask (T + 1, S)": ((q, k, k), {"mask": mha_book.causal_mask(5, 6)}, ("mask",)),
        "bias (T, S - 1)": ((q, k, k), {"bias": _r(4, 5)}, ("bias",)),
        "bias float64": ((q, k, k), {"bias": _r(4, 6).double()}, ("bias",)),
    }
    return [
        _pair(api, name, lambda f=f, a=a, kw=kw: f(*a, **kw), *names)
        for api, f in kernels.items()
        for name, (a, kw, names) in bad.items()
    ]


def module_pairs() -> list[Check]:
    """MultiHeadAttention.forward: query against key, key against value, masks."""
    mha = mha_book.MultiHeadAttention(12, 3).eval()
    x, api = _r(2, 5, 12), "MultiHeadAttention.forward"
    names = ("query", "key", "value")
    cases = {
        "query batch 2, key and value batch 3": (x, _r(3, 5, 12), _r(3, 5, 12), {}),
        "key length 5, value length 6": (x, x, _r(2, 6, 12), {}),
        "query float64, key and value float32": (x.double(), x, x, {}),
        "key and value on the meta device": (x, x.to("meta"), x.to("meta"), {}),
        "mask (T, S + 1)": (x, x, x, {"mask": mha_book.causal_mask(5, 6)}),
        "key_mask batch 3": (x, x, x, {"key_mask": torch.ones(3, 5, dtype=torch.bool)}),
        "key_mask (B, S + 1)": (
            x,
            x,
            x,
            {"key_mask": torch.ones(2, 6, dtype=torch.bool)},
        ),
        "bias (T, S + 1)": (x, x, x, {"bias": _r(5, 6)}),
    }
    extra = ("mask", "key_mask", "bias")
    return [
        _pair(api, name, lambda a=(q, k, v), kw=kw: mha(*a, **kw), *names, *extra)
        for name, (q, k, v, kw) in cases.items()
    ]


def _filled(cache, heads: int = 3, E: int = 12, dtype=torch.float32, batch: int = 2):
    """``cache`` after one token of a module with ``heads`` heads."""
    other = mha_book.MultiHeadAttention(E, heads, dtype=dtype).eval()
    other.forward_step(_r(batch, 1, E, dtype=dtype), cache)
    return cache


def cache_pairs() -> list[Check]:
    """A cache built for another module: heads, head dim, dtype, batch."""
    mha = mha_book.MultiHeadAttention(12, 3).eval()
    x, names = _r(2, 1, 12), ("kv_cache", "x")
    kinds = {
        "forward_step": KVCache,
        "RollingKVCache.update": lambda: RollingKVCache(4),
        "SinkKVCache.update": lambda: SinkKVCache(1, 4),
    }
    bad = {
        "a cache of a 2-head module (head dim 6)": {"heads": 2},
        "a cache of a float64 module": {"dtype": torch.float64},
        "a cache of batch 3": {"batch": 3},
        "a cache of a 4-head module of E = 16": {"heads": 4, "E": 16},
    }
    checks = [
        _pair(
            f"MultiHeadAttention.{api}" if api == "forward_step" else api,
            name,
            lambda make=make, kw=kw: mha.forward_step(x, _filled(make(), **kw)),
            *names,
        )
        for api, make in kinds.items()
        for name, kw in bad.items()
    ]
    return [*checks, *_kv_update_pairs(), *_paged_pairs(), *_latent_pairs()]


def _kv_update_pairs() -> list[Check]:
    return [*_kv_update_pairs_a(), *_kv_update_pairs_b()]


def _kv_update_pairs_a() -> list[Check]:
    api, k = "KVCache.update", _r(2, 3, 1, 4)
    return [
        _pair(
            api,
            "k batch 2, v batch 3",
            lambda: KVCache().update(k, _r(3, 3, 1, 4)),
            "k",
            "v",
        ),
        _pair(
            api,
            "k float64, v float32",
            lambda: KVCache().update(k.double(), k),
            "k",
            "v",
        ),
        _pair(
            api,
            "v on the meta device",
            lambda: KVCache().update(k, k.to("meta")),
            "k",
            "v",
        ),
    ]


def _kv_update_pairs_b() -> list[Check]:
    def again(k2, v2):
        cache = KVCache()
        cache.update(_r(2, 3, 1, 4), _r(2, 3, 1, 4))
        return cache.update(k2, v2)

    api, k = "KVCache.update", _r(2, 3, 1, 4)
    return [
        _pair(
            api,
            "2 heads after 3",
            lambda: again(_r(2, 2, 1, 4), _r(2, 2, 1, 4)),
            "k",
            "v",
        ),
        _pair(
            api,
            "float64 after float32",
            lambda: again(k.double(), k.double()),
            "k",
            "v",
        ),
        _pair(
            api,
            "batch 3 after 2",
            lambda: again(_r(3, 3, 1, 4), _r(3, 3, 1, 4)),
            "k",
            "v",
        ),
    ]


def _paged_pairs() -> list[Check]:
    def append(k, v, dtype=torch.float32):
        pool = BlockPool(16, 4, num_kv_heads=2, head_dim=4, dtype=dtype)
        return PagedKVCache(pool).append(k, v)

    api, k = "PagedKVCache.append", _r(2, 5, 4)
    return [
        _pair(
            api,
            "3 heads, pool of 2",
            lambda: append(_r(3, 5, 4), _r(3, 5, 4)),
            "k",
            "v",
        ),
        _pair(
            api,
            "head dim 8, pool of 4",
            lambda: append(_r(2, 5, 8), _r(2, 5, 8)),
            "k",
            "v",
        ),
        _pair(
            api,
            "float32, pool of float64",
            lambda: append(k, k, torch.float64),
            "k",
            "v",
        ),
        _pair(api, "k length 5, v length 4", lambda: append(k, _r(2, 4, 4)), "k", "v"),
        _pair(
            "BlockPool",
            "capacity 10, block_size 4",
            lambda: BlockPool(10, 4, num_kv_heads=2, head_dim=4),
            "capacity",
            "block_size",
        ),
    ]


def _latent_pairs() -> list[Check]:
    def mla(latent_dim=8, dtype=None):
        return LatentAttention(
            16, 2, head_dim=8, latent_dim=latent_dim, rope_dim=4, dtype=dtype
        )

    def with_cache_of(other, x):
        cache = LatentCache()
        other(
            _r(2, 1, 16, dtype=x.dtype if other is None else other.q_proj.weight.dtype),
            cache,
        )
        with torch.no_grad():
            return mla()(x, cache)

    api, x = "LatentAttention.forward", _r(2, 1, 16)
    names = ("cache", "x")
    return [
        _pair(api, "a cache of latent_dim 6", lambda: with_cache_of(mla(6), x), *names),
        _pair(
            api,
            "a cache of batch 2, x batch 3",
            lambda: with_cache_of(mla(), _r(3, 1, 16)),
            *names,
        ),
        _pair(
            api,
            "a cache of a float64 module",
            lambda: with_cache_of(mla(8, torch.float64), x),
            *names,
        ),
        _pair(api, "x float64, module float32", lambda: mla()(x.double()), "x"),
    ]


def mask_pairs() -> list[Check]:
    """Lengths against the sequence, heads against slopes, flex's sizes."""
    return [*_mask_pairs_a(), *_mask_pairs_b()]


def _mask_pairs_a() -> list[Check]:
    q = _r(1, 2, 6, 4)
    return [
        _pair(
            "padding_mask",
            "a length 6 > max_len 5",
            lambda: mha_book.padding_mask([3, 6], 5),
            "lengths",
            "max_len",
        ),
        _pair(
            "padded_causal_mask",
            "a length 6 > max_len 5",
            lambda: mha_book.padded_causal_mask([3, 6], 5),
            "lengths",
            "max_len",
        ),
        _pair(
            "flex_attend",
            "alibi(4) on 2 heads",
            lambda: flex.flex_attend(q, q, q, score_mod=flex.alibi(4)),
            "score_mod",
            "q",
        ),
        _pair(
            "flex_attend",
            "alibi(1) on 2 heads",
            lambda: flex.flex_attend(q, q, q, score_mod=flex.alibi(1)),
            "score_mod",
            "q",
        ),
        _pair(
            "flex_attend",
            "q batch 1, k and v batch 2",
            lambda: flex.flex_attend(q, _r(2, 2, 6, 4), _r(2, 2, 6, 4)),
            *QKV,
        ),
    ]


def _mask_pairs_b() -> list[Check]:
    return [*_mask_pairs_b_a(), *_mask_pairs_b_b()]


def _mask_pairs_b_a() -> list[Check]:
    q = _r(1, 2, 6, 4)
    return [
        _pair(
            "flex_attend",
            "k length 6, v length 5",
            lambda: flex.flex_attend(q, q, _r(1, 2, 5, 4)),
            *QKV,
        ),
        _pair(
            "flex_attend",
            "padding of batch 2 on batch 1",
            lambda: flex.flex_attend(
                q, q, q, mask_mod=flex.padding(torch.tensor([2, 3]))
            ),
            "mask_mod",
            "q",
            "lengths",
        ),
    ]


def _mask_pairs_b_b() -> list[Check]:
    return [
        _pair(
            "online_softmax_update",
            "scores over 4 keys, v of 5",
            lambda: online_softmax_update(
                torch.zeros(3), torch.zeros(3), torch.zeros(3, 5), _r(3, 4), _r(5, 5)
            ),
            "scores",
            "v",
        ),
        _pair(
            "apply_rotary",
            "positions 4, x length 5",
            lambda: mha_book.apply_rotary(_r(2, 3, 5, 8), torch.arange(4)),
            "x",
            "positions",
        ),
        _pair(
            "RotaryEmbedding.__call__",
            "q head dim 8, k head dim 4",
            lambda: mha_book.RotaryEmbedding(8)(_r(2, 3, 5, 8), _r(2, 3, 5, 4)),
            "q",
            "k",
        ),
    ]


def layer_pairs() -> list[Check]:
    """Layers and models: masks against T and S, memory against x."""
    return [*_layer_pairs_a(), *_layer_pairs_b()]


def _layer_pairs_a() -> list[Check]:
    enc = mha_book.EncoderLayer(12, 3, 24).eval()
    block = DecoderOnlyBlock(12, 3, 24).eval()
    x = _r(2, 5, 12)
    return [
        _pair(
            "EncoderLayer.forward",
            "mask (T + 1, T + 1)",
            lambda: enc(x, mha_book.causal_mask(6)),
            "mask",
            "x",
        ),
        _pair(
            "DecoderOnlyBlock.forward",
            "mask (T + 1, T + 1)",
            lambda: block(x, mha_book.causal_mask(6)),
            "mask",
            "x",
        ),
    ]


def _layer_pairs_b() -> list[Check]:
    dec = mha_book.DecoderLayer(12, 3, 24).eval()
    x, memory = _r(2, 5, 12), _r(2, 7, 12)
    ones = torch.ones(2, 1, 1, 8, dtype=torch.bool)
    return [
        _pair(
            "DecoderLayer.forward",
            "x batch 2, memory batch 3",
            lambda: dec(x, _r(3, 7, 12)),
            "x",
            "memory",
        ),
        _pair(
            "DecoderLayer.forward",
            "memory_mask over 8 keys, memory of 7",
            lambda: dec(x, memory, memory_mask=ones),
            "memory_mask",
            "memory",
        ),
        _pair(
            "DecoderLayer.forward",
            "x float64, memory float32",
            lambda: dec(x.double(), memory),
            "x",
            "memory",
        ),
    ]


def model_pairs() -> list[Check]:
    """The decoder, the translator, BERT and the LM helpers."""
    return [*_model_pairs_a(), *_model_pairs_b()]


def _model_pairs_a() -> list[Check]:
    decoder = mha_book.CausalDecoder(mha_book.DecoderConfig(11, 8, 2, 1, 16)).eval()
    vocab = date_vocabulary()
    translator = Translator(TranslatorConfig(len(vocab), embed_dim=16)).eval()
    return [
        _pair(
            "CausalDecoder.forward",
            "idx length 17, max_len 16",
            lambda: decoder(torch.randint(0, 11, (2, 17))),
            "idx",
            "max_len",
        ),
        _pair(
            "LearnedPositions.forward",
            "offset 4 + length 5 > max_len 8",
            lambda: mha_book.LearnedPositions(8, 6)(_r(2, 5, 6), offset=4),
            "x",
            "offset",
            "max_len",
        ),
        _pair(
            "Translator.forward",
            "src batch 2, tgt batch 1",
            lambda: translator(torch.tensor([[5, 6], [7, 8]]), torch.tensor([[1, 5]])),
            "src",
            "tgt",
        ),
        _pair(
            "lm_loss",
            "logits batch 2, targets batch 3",
            lambda: charlm.lm_loss(_r(2, 6, 11), torch.randint(0, 11, (3, 6))),
            "logits",
            "targets",
        ),
    ]


def _model_pairs_b() -> list[Check]:
    ids = torch.randint(0, 11, (2, 5))
    return [
        _pair(
            "lm_loss",
            "logits length 6, targets 5",
            lambda: charlm.lm_loss(_r(2, 6, 11), torch.randint(0, 11, (2, 5))),
            "logits",
            "targets",
        ),
        _pair(
            "get_batch",
            "block_size 200 of 200 ids",
            lambda: charlm.get_batch(torch.arange(200) % 11, 4, 200),
            "ids",
            "block_size",
        ),
        _pair(
            "BertEncoder.forward",
            "attention_mask (2, 6), input_ids (2, 5)",
            lambda: _bert()(ids, attention_mask=torch.ones(2, 6, dtype=torch.long)),
            "attention_mask",
            "input_ids",
        ),
        _pair(
            "BertEncoder.forward",
            "token_type_ids batch 3",
            lambda: _bert()(ids, token_type_ids=torch.zeros(3, 5, dtype=torch.long)),
            "token_type_ids",
            "input_ids",
        ),
    ]


def _bert() -> BertEncoder:
    config = BertConfig(11, 8, 1, 2, 16, 16, 2, 1e-12)
    return BertEncoder(config).eval()


def config_pairs() -> list[Check]:
    """Constructors and settings whose numbers must agree."""
    return [*_config_pairs_a(), *_config_pairs_b()]


def _config_pairs_a() -> list[Check]:
    return [
        _pair(
            "MultiHeadAttention()",
            "embed_dim 12, num_heads 5",
            lambda: mha_book.MultiHeadAttention(12, 5),
            "embed_dim",
            "num_heads",
        ),
        _pair(
            "MultiHeadAttention()",
            "rope of head dim 8, heads of 4",
            lambda: mha_book.MultiHeadAttention(
                12, 3, rope=mha_book.RotaryEmbedding(8)
            ),
            "rope",
            "head_dim",
        ),
        _pair(
            "DecoderConfig()",
            "embed_dim 8, num_heads 3",
            lambda: mha_book.CausalDecoder(mha_book.DecoderConfig(11, 8, 3, 1, 16)),
            "embed_dim",
            "num_heads",
        ),
        _pair(
            "TranslatorConfig",
            "embed_dim 16, num_heads 3",
            lambda: Translator(TranslatorConfig(20, 16, 3)),
            "embed_dim",
            "num_heads",
        ),
    ]


def _config_pairs_b() -> list[Check]:
    return [*_config_pairs_b_a(), *_config_pairs_b_b()]


def _config_pairs_b_a() -> list[Check]:
    tiny = mha_book.CausalDecoder(
        mha_book.DecoderConfig(12, 8, 2, 1, max_len=8, positions="rope")
    ).eval()
    ids = torch.randint(0, 12, (2, 12))
    return [
        _pair(
            "LatentAttention",
            "latent_dim + rope_dim >= 2 H D",
            lambda: LatentAttention(16, 1, head_dim=4, latent_dim=6, rope_dim=2),
            "latent_dim",
            "rope_dim",
        ),
        _pair(
            "stream_losses",
            "sinks 4 = cache_size 4",
            lambda: stream_losses(tiny, ids, policy="sinks", cache_size=4, sinks=4),
            "sinks",
            "cache_size",
        ),
    ]


def _config_pairs_b_b() -> list[Check]:
    return [
        _pair(
            "simulate_serving",
            "a request of 20 tokens, max_len 16",
            lambda: simulate_serving(
                [(10, 10)], capacity=32, max_len=16, reservation="max"
            ),
            "requests",
            "max_len",
            "requests[0]",
        ),
        _pair(
            "simulate_serving",
            "capacity 8 < max_len 16",
            lambda: simulate_serving(
                [(4, 4)], capacity=8, max_len=16, reservation="max", block_size=4
            ),
            "capacity",
            "max_len",
        ),
        _pair(
            "explore",
            "4 tokens, weights over 3",
            lambda: mha_book.explore(
                ["a", "b", "c", "d"], torch.softmax(_r(2, 3, 3, 3), -1)
            ),
            "tokens",
            "attentions",
        ),
    ]


def pair_checks() -> list[Check]:
    return [
        *kernel_pairs(),
        *module_pairs(),
        *cache_pairs(),
        *mask_pairs(),
        *layer_pairs(),
        *model_pairs(),
        *config_pairs(),
    ]
