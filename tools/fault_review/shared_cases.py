"""Objects shared or reused: caches, pool blocks, a model's mode, aliased
inputs and repeated calls (see ``checks``)."""

from __future__ import annotations

import torch

import mha_book
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.latent import LatentAttention, LatentCache
from mha_book.attention.paged import BlockPool, PagedKVCache
from mha_book.attention.window_caches import RollingKVCache, SinkKVCache
from mha_book.lm import charlm, training
from mha_book.models.blocks import DecoderOnlyBlock
from mha_book.seq2seq.dates import date_vocabulary
from mha_book.seq2seq.measures import silenced, translate
from mha_book.seq2seq.translator import Translator, TranslatorConfig
from mha_book.serving.streaming import stream_losses
from tools.fault_review.checks import Check, differs


def _two_modules(make_cache, rope: bool = False):
    """Module b continues a cache module a wrote: refused, or as b's own."""

    def run() -> str | None:
        torch.manual_seed(0)
        mods = [
            mha_book.MultiHeadAttention(
                12, 3, rope=mha_book.RotaryEmbedding(4) if rope else None
            ).eval()
            for _ in range(2)
        ]
        x = torch.randn(2, 3, 12)
        shared, own = make_cache(mods[1].rope), make_cache(mods[1].rope)
        mods[0].forward_step(x[:, :2], shared)
        mods[1].forward_step(x[:, :2], own)
        got = mods[1].forward_step(x[:, 2:], shared)[0]
        return differs(got, mods[1].forward_step(x[:, 2:], own)[0])

    return run


def cache_sharing() -> list[Check]:
    """One cache given to two modules."""
    name, names = "one cache given to two modules", ("kv_cache",)
    kinds = {
        "MultiHeadAttention.forward_step": (lambda rope: KVCache(), False),
        "MultiHeadAttention.forward_step (rope)": (lambda rope: KVCache(), True),
        "RollingKVCache.update": (lambda rope: RollingKVCache(4), False),
        "SinkKVCache.update": (lambda rope: SinkKVCache(1, 4, rope), True),
    }
    checks = [
        Check(api, "shared", name, _two_modules(make, rope), names)
        for api, (make, rope) in kinds.items()
    ]
    return [
        *checks,
        Check("LatentAttention.forward", "shared", name, _latent_shared, ("cache",)),
    ]


def _latent_shared() -> str | None:
    torch.manual_seed(0)
    a, b = [LatentAttention(16, 2, head_dim=8, latent_dim=8, rope_dim=4) for _ in "ab"]
    x = torch.randn(2, 3, 16)
    shared, own = LatentCache(), LatentCache()
    with torch.no_grad():
        a(x[:, :2], shared)
        b(x[:, :2], own)
        return differs(b(x[:, 2:], shared), b(x[:, 2:], own))


def _freed_while_held() -> str | None:
    pool = BlockPool(16, 4, num_kv_heads=1, head_dim=2)
    cache = PagedKVCache(pool)
    cache.append(torch.zeros(1, 5, 2), torch.zeros(1, 5, 2))
    pool.free(list(cache.block_table))
    return "a block its cache holds was freed"


def _two_sequences() -> str | None:
    pool = BlockPool(32, 4, num_kv_heads=1, head_dim=2)
    a, b = PagedKVCache(pool), PagedKVCache(pool)
    ka, kb = torch.randn(1, 6, 2), torch.randn(1, 7, 2)
    a.append(ka[:, :3], ka[:, :3])
    b.append(kb[:, :4], kb[:, :4])
    a.append(ka[:, 3:], ka[:, 3:])
    b.append(kb[:, 4:], kb[:, 4:])
    return differs([a.gather()[0], b.gather()[0]], [ka, kb])


def _released_then_reused() -> str | None:
    pool = BlockPool(8, 4, num_kv_heads=1, head_dim=2)
    cache, k = PagedKVCache(pool), torch.randn(1, 6, 2)
    cache.append(torch.ones(1, 8, 2), torch.ones(1, 8, 2))
    cache.release()
    return differs(cache.append(k, k), (k, k)) or differs(pool.num_free, 0)


def _reset_then_reused() -> str | None:
    mha, x = mha_book.MultiHeadAttention(12, 3).eval(), torch.randn(2, 3, 12)
    cache = KVCache()
    mha.forward_step(torch.randn(2, 4, 12), cache)
    cache.reset()
    return differs(mha.forward_step(x, cache)[0], mha.forward_step(x, KVCache())[0])


def _buffer_reused() -> str | None:
    """The same tensor updated in place between two updates (a decode buffer)."""
    buffer, steps = torch.empty(1, 2, 1, 4), torch.randn(2, 1, 2, 1, 4)
    cache = KVCache()
    for step in steps:
        buffer.copy_(step)
        keys, _ = cache.update(buffer, buffer)
    return differs(keys, torch.cat(list(steps), dim=2))


def pool_and_reuse() -> list[Check]:
    return [
        Check(
            "BlockPool",
            "shared",
            "a block freed while its cache holds it",
            _freed_while_held,
            ("blocks", "block"),
        ),
        Check(
            "PagedKVCache.append", "shared", "two sequences in one pool", _two_sequences
        ),
        Check(
            "PagedKVCache.append",
            "shared",
            "a cache released, then reused",
            _released_then_reused,
        ),
        Check(
            "KVCache.update", "shared", "a cache reset, then reused", _reset_then_reused
        ),
        Check(
            "KVCache.update",
            "shared",
            "one buffer updated in place between steps",
            _buffer_reused,
        ),
    ]


def _modes(model: torch.nn.Module) -> list[bool]:
    return [m.training for m in model.modules()]


def _keeps_mode(model: torch.nn.Module, call, training: bool):
    """``call`` on ``model`` in one mode: every submodule's mode as before."""

    def run() -> str | None:
        model.train(training)
        before = _modes(model)
        with torch.no_grad():
            call()
        after = _modes(model)
        model.eval()
        changed = sum(a != b for a, b in zip(before, after))
        return None if changed == 0 else f"{changed} submodules changed mode"

    return run


def _silenced_call(model: Translator, src: torch.Tensor) -> None:
    with silenced(model, [(0, 1)]):
        model(src, torch.tensor([[1, 5]]))


def _mode_calls() -> list[tuple[str, torch.nn.Module, object]]:
    return [*_mode_calls_a(), *_mode_calls_b()]


def _mode_calls_a() -> list[tuple[str, torch.nn.Module, object]]:
    """The layers and the decoder's forward."""
    torch.manual_seed(0)
    mha = mha_book.MultiHeadAttention(12, 3)
    dec = mha_book.CausalDecoder(mha_book.DecoderConfig(11, 8, 2, 1, 16))
    mla = LatentAttention(16, 2, head_dim=8, latent_dim=8, rope_dim=4)
    x, ids = torch.randn(2, 5, 12), torch.randint(0, 11, (2, 6))
    enc, layer = mha_book.EncoderLayer(12, 3, 24), mha_book.DecoderLayer(12, 3, 24)
    block = DecoderOnlyBlock(12, 3, 24)
    return [
        ("MultiHeadAttention.forward", mha, lambda: mha(x, x, x)),
        (
            "MultiHeadAttention.forward_step",
            mha,
            lambda: mha.forward_step(x, KVCache()),
        ),
        ("EncoderLayer.forward", enc, lambda: enc(x)),
        ("DecoderLayer.forward", layer, lambda: layer(x, x)),
        ("DecoderOnlyBlock.forward", block, lambda: block(x, mha_book.causal_mask(5))),
        ("LatentAttention.forward", mla, lambda: mla(torch.randn(2, 3, 16))),
        ("CausalDecoder.forward", dec, lambda: dec(ids)),
    ]


def _mode_calls_b() -> list[tuple[str, torch.nn.Module, object]]:
    """The models' decoding, evaluation, streaming and translation."""
    torch.manual_seed(0)
    dec = mha_book.CausalDecoder(mha_book.DecoderConfig(11, 8, 2, 1, 16))
    tok = mha_book.CharTokenizer.from_text("abcdefghijk")
    vocab = date_vocabulary()
    tr = Translator(TranslatorConfig(len(vocab), embed_dim=16))
    rope = mha_book.CausalDecoder(
        mha_book.DecoderConfig(12, 8, 2, 1, 8, positions="rope")
    )
    ids, src = torch.randint(0, 11, (2, 6)), torch.tensor([[5, 6, 7]])
    return [
        ("CausalDecoder.generate", dec, lambda: dec.generate(ids, 2)),
        ("evaluate", dec, lambda: charlm.evaluate(dec, torch.arange(100) % 11, 8)),
        ("sample", dec, lambda: training.sample(dec, tok, "ab", 2)),
        (
            "stream_losses",
            rope,
            lambda: stream_losses(
                rope,
                torch.randint(0, 12, (1, 10)),
                policy="sinks",
                cache_size=4,
                sinks=1,
            ),
        ),
        ("Translator.forward", tr, lambda: tr(src, torch.tensor([[1, 5]]))),
        ("Translator.greedy", tr, lambda: tr.greedy(src, 3, cached=True)),
        ("translate", tr, lambda: translate(tr, ["2026年12月2日"], vocab)),
        ("silenced", tr, lambda: _silenced_call(tr, src)),
    ]


def mode_checks() -> list[Check]:
    """A call leaves the model's train/eval mode as it found it."""
    return [
        Check(
            api,
            "shared",
            f"called in {'train' if t else 'eval'} mode",
            _keeps_mode(model, call, t),
            wrong="silently changed mode",
        )
        for api, model, call in _mode_calls()
        for t in (True, False)
    ]


def _aliased(call, n: int, shape=(2, 3, 5, 8)):
    """``call`` with one tensor as each of its ``n`` inputs, against copies."""

    def run() -> str | None:
        x = torch.randn(*shape)
        kept = x.clone()
        got = call(*[x] * n)
        want = call(*[x.clone() for _ in range(n)])
        return differs(got, want, 0.0) or differs(x, kept, 0.0)

    return run


def alias_checks() -> list[Check]:
    """The same tensor as q, k and v (or query, key and value)."""
    mha = mha_book.MultiHeadAttention(12, 3).eval()
    kernels = {
        "scaled_dot_product_attention": mha_book.scaled_dot_product_attention,
        "fused_attention": mha_book.fused_attention,
        "flash_attention": lambda q, k, v: mha_book.flash_attention(
            q, k, v, block_size=2
        ),
    }
    name = "one tensor as q, k and v"
    checks = [Check(api, "shared", name, _aliased(f, 3)) for api, f in kernels.items()]
    return [
        *checks,
        Check(
            "MultiHeadAttention.forward",
            "shared",
            "one tensor as query, key and value",
            _aliased(mha, 3, (2, 5, 12)),
        ),
        Check(
            "KVCache.update",
            "shared",
            "one tensor as k and v",
            _aliased(lambda k, v: KVCache().update(k, v), 2),
        ),
        Check(
            "RotaryEmbedding.__call__",
            "shared",
            "one tensor as q and k",
            _aliased(mha_book.RotaryEmbedding(8), 2),
        ),
    ]


def _twice(call):
    """Two calls on the same arguments give the same result (no hidden state)."""

    def run() -> str | None:
        torch.manual_seed(0)
        first = call()
        torch.manual_seed(0)
        return differs(call(), first, 0.0)

    return run


def repeat_checks() -> list[Check]:
    torch.manual_seed(0)
    mha = mha_book.MultiHeadAttention(12, 3).eval()
    dec = mha_book.CausalDecoder(mha_book.DecoderConfig(11, 8, 2, 1, 16)).eval()
    vocab = date_vocabulary()
    tr = Translator(TranslatorConfig(len(vocab), embed_dim=16)).eval()
    mla = LatentAttention(16, 2, head_dim=8, latent_dim=8, rope_dim=4)
    x, ids, src = (
        torch.randn(2, 5, 12),
        torch.randint(0, 11, (2, 6)),
        torch.tensor([[5, 6, 7]]),
    )
    calls = {
        "MultiHeadAttention.forward": lambda: mha(x, x, x),
        "MultiHeadAttention.forward_step": lambda: mha.forward_step(x, KVCache()),
        "LatentAttention.forward": lambda: mla(torch.ones(2, 3, 16)),
        "CausalDecoder.forward": lambda: dec(ids),
        "CausalDecoder.generate": lambda: dec.generate(ids, 3),
        "evaluate": lambda: charlm.evaluate(dec, torch.arange(100) % 11, 8),
        "Translator.greedy": lambda: tr.greedy(src, 4, cached=True),
        "translate": lambda: translate(tr, ["2026年12月2日"], vocab),
    }
    return [Check(api, "shared", "called twice", _twice(c)) for api, c in calls.items()]


def shared_checks() -> list[Check]:
    return [
        *cache_sharing(),
        *pool_and_reuse(),
        *mode_checks(),
        *alias_checks(),
        *repeat_checks(),
    ]
