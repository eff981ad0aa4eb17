"""Results against an independent computation: brute force, a definition, or
PyTorch's own modules (see ``checks``)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import mha_book
from mha_book import _digest
from mha_book.attention import flex
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.latent import LatentAttention, LatentCache
from mha_book.attention.paged import BlockPool, PagedKVCache
from mha_book.lm import charlm, keying
from mha_book.serving.simulation import simulate_serving
from tools.fault_review.checks import Check, differs

SHAPES = [(10, 10, 3), (7, 12, 4), (16, 16, 4), (5, 9, 2), (1, 1, 128), (12, 5, 4)]


def _o(api: str, name: str, run) -> Check:
    return Check(api, "oracle", name, run)


def _brute_mask(mask_mod, T: int, S: int) -> torch.Tensor:
    """``mask_mod`` cell by cell, on Python ints made tensors."""
    t = torch.tensor
    return torch.tensor(
        [[bool(mask_mod(t(0), t(0), t(i), t(j))) for j in range(S)] for i in range(T)]
    ).reshape(T, S)


def _brute_sparsity(mask, P: int) -> float:
    T, S = mask.shape
    blocks = [(i, j) for i in range(0, T, P) for j in range(0, S, P)]
    empty = sum(not mask[i : i + P, j : j + P].any() for i, j in blocks)
    return empty / len(blocks)


def _mods() -> dict[str, flex.MaskMod]:
    return {
        "causal": flex.causal,
        "sliding_window(3)": flex.sliding_window(3),
        "padding([4])": flex.padding(torch.tensor([4])),
    }


def flex_oracles() -> list[Check]:
    """block_sparsity and dense_mask against counting cell by cell."""
    checks = []
    for name, mod in _mods().items():
        for T, S, P in SHAPES:
            if name.startswith("padding") and S < 4:
                continue
            case = f"{name}, T={T} S={S} P={P}"
            checks += [
                _o(
                    "block_sparsity",
                    case,
                    lambda m=mod, T=T, S=S, P=P: differs(
                        flex.block_sparsity(m, T, S, block_size=P),
                        _brute_sparsity(_brute_mask(m, T, S), P),
                        1e-12,
                    ),
                ),
                _o(
                    "dense_mask",
                    case,
                    lambda m=mod, T=T, S=S: differs(
                        flex.dense_mask(m, T, S), _brute_mask(m, T, S)
                    ),
                ),
            ]
    q = torch.randn(1, 2, 6, 4)
    want = F.scaled_dot_product_attention(q, q, q, attn_mask=mha_book.causal_mask(6))
    checks.append(
        _o(
            "flex_attend",
            "causal vs torch's sdpa",
            lambda: differs(flex.flex_attend(q, q, q, mask_mod=flex.causal), want),
        )
    )
    return checks


def _cells(T: int, S: int, rule) -> torch.Tensor:
    """``rule(i, j)`` at every (query, key), as a bool or float tensor."""
    rows = [[rule(i, j) for j in range(S)] for i in range(T)]
    return torch.tensor(rows).reshape(T, S)


def _alibi_definition(T: int, S: int) -> torch.Tensor:
    """-slope_h |i' - j| with slopes 2^(-8 h / H), H = 4, i' = i + S - T."""
    slopes = [2.0 ** (-8 * (h + 1) / 4) for h in range(4)]
    return torch.stack(
        [_cells(T, S, lambda i, j, m=m: -m * abs(i + S - T - j)) for m in slopes]
    )


def _aligned_oracles(T: int, S: int) -> list[Check]:
    """causal_mask, sliding_window_mask and alibi_bias at one (T, S)."""
    e = S - T  # queries aligned at the end

    def causal():
        want = _cells(T, S, lambda i, j: j <= i + e)
        return differs(mha_book.causal_mask(T, S), want)

    def window():
        want = _cells(T, S, lambda i, j: i + e - 2 < j <= i + e)
        return differs(mha_book.sliding_window_mask(T, 2, S), want)

    def alibi():
        got = mha_book.alibi_bias(4, T, S, dtype=torch.float64)
        return differs(got, _alibi_definition(T, S))

    return [
        _o("causal_mask", f"T={T} S={S}", causal),
        _o("sliding_window_mask", f"T={T} S={S} window 2", window),
        _o("alibi_bias", f"4 heads, T={T} S={S}", alibi),
    ]


def mask_oracles() -> list[Check]:
    """The masks and ALiBi against their definitions, over a few sizes."""
    lengths = [2, 5, 0]

    def padding():
        want = _cells(3, 5, lambda b, j: j < lengths[b])
        return differs(mha_book.padding_mask(lengths, 5).reshape(3, 5), want)

    def slopes():
        want = torch.tensor([2.0**-k for k in range(1, 9)])
        return differs(mha_book.alibi_slopes(8).double(), want)

    checks = [
        _o("padding_mask", "lengths 2, 5, 0", padding),
        _o("alibi_slopes", "8 heads: 2^(-k)", slopes),
    ]
    for T, S in [(3, 3), (2, 5), (5, 2), (1, 4)]:
        checks += _aligned_oracles(T, S)
    return checks


def _out(result):
    """The output of a kernel that returns it alone or with its weights."""
    return result[0] if isinstance(result, tuple) else result


def kernel_oracles() -> list[Check]:
    """The kernels against torch's sdpa: masks, biases, scales, block sizes."""
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 7, 8), torch.randn(2, 3, 7, 8)
    mask, bias = mha_book.causal_mask(5, 7), torch.randn(5, 7)
    settings = {
        "no mask": ({}, {}),
        "causal mask (T < S)": ({"mask": mask}, {"attn_mask": mask}),
        "bias and scale 0.3": (
            {"bias": bias, "scale": 0.3},
            {"attn_mask": bias, "scale": 0.3},
        ),
    }
    kernels = {
        "scaled_dot_product_attention": mha_book.scaled_dot_product_attention,
        "fused_attention": mha_book.fused_attention,
        "flash_attention": mha_book.flash_attention,
    }
    checks = [
        _o(
            api,
            f"{name} vs torch's sdpa",
            lambda f=f, ours=ours, theirs=theirs: differs(
                _out(f(q, k, v, **ours)),
                F.scaled_dot_product_attention(q, k, v, **theirs),
            ),
        )
        for api, f in kernels.items()
        for name, (ours, theirs) in settings.items()
    ]
    return [*checks, *_flash_block_oracles(q, k, v, mask)]


def _flash_block_oracles(q, k, v, mask) -> list[Check]:
    """flash_attention over block sizes that do and do not divide T and S."""
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    def run(P):
        return differs(
            _out(mha_book.flash_attention(q, k, v, mask, block_size=P)), want
        )

    return [
        _o("flash_attention", f"block_size {P}, causal", lambda P=P: run(P))
        for P in (1, 3, 4, 7, 16)
    ]


def _torch_copy(mha) -> torch.nn.MultiheadAttention:
    """nn.MultiheadAttention with ``mha``'s weights, copied by hand."""
    ref = torch.nn.MultiheadAttention(mha.embed_dim, mha.num_heads, batch_first=True)
    with torch.no_grad():
        ref.in_proj_weight.copy_(
            torch.cat([mha.q_proj.weight, mha.k_proj.weight, mha.v_proj.weight])
        )
        ref.in_proj_bias.copy_(
            torch.cat([mha.q_proj.bias, mha.k_proj.bias, mha.v_proj.bias])
        )
        ref.out_proj.weight.copy_(mha.out_proj.weight)
        ref.out_proj.bias.copy_(mha.out_proj.bias)
    return ref.eval()


def module_oracles() -> list[Check]:
    """MultiHeadAttention against nn.MultiheadAttention, and cached decoding."""
    torch.manual_seed(0)
    mha = mha_book.MultiHeadAttention(12, 3).eval()
    with torch.no_grad():
        for p in mha.parameters():
            p.add_(0.1 * torch.randn_like(p))  # biases not zero
    ref, x, kv = _torch_copy(mha), torch.randn(2, 5, 12), torch.randn(2, 7, 12)
    key_mask = torch.tensor([[True] * 7, [True] * 4 + [False] * 3])
    api = "MultiHeadAttention.forward"
    return [
        _o(
            api,
            "vs nn.MultiheadAttention",
            lambda: differs(mha(x, kv, kv)[0], ref(x, kv, kv)[0]),
        ),
        _o(
            api,
            "causal mask vs attn_mask",
            lambda: differs(
                mha(x, x, x, mha_book.causal_mask(5))[0],
                ref(x, x, x, attn_mask=~mha_book.causal_mask(5))[0],
            ),
        ),
        _o(
            api,
            "key_mask vs key_padding_mask",
            lambda: differs(
                mha(x, kv, kv, key_mask=key_mask)[0],
                ref(x, kv, kv, key_padding_mask=~key_mask)[0],
            ),
        ),
        _o(
            api,
            "weights vs nn.MultiheadAttention's per head",
            lambda: differs(
                mha(x, kv, kv)[1], ref(x, kv, kv, average_attn_weights=False)[1]
            ),
        ),
    ]


def _stepwise(mha, x, cache, chunks=(1,) * 6):
    """``forward_step`` over ``x`` in chunks, concatenated."""
    out, t = [], 0
    for n in chunks:
        out.append(mha.forward_step(x[:, t : t + n], cache)[0])
        t += n
    return torch.cat(out, dim=1)


def cache_oracles() -> list[Check]:
    """Decoding through a cache, step by step, against the full forward."""
    return [*_cache_oracles_a(), *_cache_oracles_b()]


def _cache_oracles_a() -> list[Check]:
    torch.manual_seed(0)
    x = torch.randn(2, 6, 16)
    full = mha_book.causal_mask(6)
    gqa = mha_book.MultiHeadAttention(16, 4, num_kv_heads=2).eval()
    rope = mha_book.MultiHeadAttention(16, 4, rope=mha_book.RotaryEmbedding(4)).eval()
    return [
        _o(
            "MultiHeadAttention.forward_step",
            "GQA token by token vs forward",
            lambda: differs(_stepwise(gqa, x, KVCache()), gqa(x, x, x, full)[0]),
        ),
        _o(
            "MultiHeadAttention.forward_step",
            "GQA in chunks 3, 1, 2 vs forward",
            lambda: differs(
                _stepwise(gqa, x, KVCache(), (3, 1, 2)), gqa(x, x, x, full)[0]
            ),
        ),
        Check(
            "MultiHeadAttention.forward_step (rope)",
            "oracle",
            "token by token vs forward",
            lambda: differs(_stepwise(rope, x, KVCache()), rope(x, x, x, full)[0]),
        ),
    ]


def _cache_oracles_b() -> list[Check]:
    torch.manual_seed(0)
    x = torch.randn(2, 6, 16)
    gqa = mha_book.MultiHeadAttention(16, 4, num_kv_heads=2).eval()
    window = mha_book.sliding_window_mask(6, 3)
    mla = LatentAttention(16, 2, head_dim=8, latent_dim=8, rope_dim=4)

    def latent(absorbed):
        with torch.no_grad():
            cache = LatentCache()
            steps = [mla(x[:, :2], cache, absorbed=absorbed)]
            steps += [
                mla(x[:, t : t + 1], cache, absorbed=absorbed) for t in range(2, 6)
            ]
            return differs(torch.cat(steps, dim=1), mla(x))

    from mha_book.attention.window_caches import RollingKVCache

    return [
        _o(
            "RollingKVCache.update",
            "window 3 vs sliding_window_mask",
            lambda: differs(
                _stepwise(gqa, x, RollingKVCache(3)), gqa(x, x, x, window)[0]
            ),
        ),
        _o(
            "LatentAttention.forward",
            "cached vs the full pass",
            lambda: latent(False),
        ),
        Check(
            "LatentAttention.forward(absorbed)",
            "oracle",
            "cached, absorbed vs plain",
            lambda: latent(True),
        ),
        _o("PagedKVCache.append", "gather vs the tokens appended", _paged),
    ]


def _paged() -> str | None:
    pool = BlockPool(40, 4, num_kv_heads=2, head_dim=3)
    cache, parts = PagedKVCache(pool), [torch.randn(2, n, 3) for n in (5, 1, 3, 4)]
    for p in parts:
        keys, values = cache.append(p, 2 * p)
    want = torch.cat(parts, dim=1)
    return differs([keys, values], [want, 2 * want], 0.0)


def _differing() -> dict[str, tuple[object, object]]:
    """Pairs of values that differ, each in one way."""
    z = torch.zeros(2, 3)
    return {
        "shape (2, 3) vs (3, 2)": (z, torch.zeros(3, 2)),
        "float32 vs float64": (z, z.double()),
        "dict values swapped": ({"a": 1, "b": 2}, {"a": 2, "b": 1}),
        "'ab', 'c' vs 'a', 'bc'": (["ab", "c"], ["a", "bc"]),
        "[[1], [2]] vs [[1, 2]]": ([[1], [2]], [[1, 2]]),
        "None vs 'None'": (None, "None"),
        "True vs 1": (True, 1),
        "one element changed": (
            torch.arange(1000.0),
            torch.arange(1000.0).index_fill(0, torch.tensor([500]), -1.0),
        ),
    }


def digest_oracles() -> list[Check]:
    """Digests of objects that differ must differ; of equal ones, agree."""
    z, differ = torch.zeros(2, 3), _differing()
    checks = [
        _o(
            "digest",
            f"differ: {name}",
            lambda a=a, b=b: (
                "equal digests" if keying.digest(a) == keying.digest(b) else None
            ),
        )
        for name, (a, b) in differ.items()
    ]
    checks.append(
        _o(
            "digest",
            "agree: dict keys in another order",
            lambda: differs(
                keying.digest({"a": 1, "b": z}), keying.digest({"b": z.clone(), "a": 1})
            ),
        )
    )
    mods = ["mha_book.attention.masks", "mha_book.attention.alibi"]
    checks.append(
        _o(
            "modules_digest",
            "two modules differ",
            lambda: (
                "equal digests"
                if _digest.modules_digest(mods[:1]) == _digest.modules_digest(mods[1:])
                else None
            ),
        )
    )
    return checks


def serving_oracles() -> list[Check]:
    """simulate_serving against runs worked out by hand."""

    def run(reqs, reservation, capacity=32, max_len=16, P=4):
        r = simulate_serving(
            reqs,
            capacity=capacity,
            max_len=max_len,
            reservation=reservation,
            block_size=P,
        )
        return (r.steps, r.token_share, r.mean_running, r.preempted)

    # one request of 4 + 3 tokens, max_len slots: 5, 6, 7 of 16 over 3 steps
    # two requests of 4 + 2 that fit one at a time: 2 steps each
    return [
        _o(
            "simulate_serving",
            "one request, 'max'",
            lambda: differs(run([(4, 3)], "max"), (3, 18 / 48, 1.0, 0)),
        ),
        _o(
            "simulate_serving",
            "two requests one at a time, 'max'",
            lambda: differs(
                run([(4, 2), (4, 2)], "max", capacity=16), (4, 22 / 64, 1.0, 0)
            ),
        ),
        _o(
            "simulate_serving",
            "two requests together, 'oracle'",
            lambda: differs(run([(4, 2), (4, 2)], "oracle"), (2, 22 / 24, 2.0, 0)),
        ),
    ]


def _online_softmax() -> str | None:
    from mha_book.attention.flash import online_softmax_update

    scores, v = torch.randn(3, 8), torch.randn(8, 5)
    m, total, acc = torch.full((3,), float("-inf")), torch.zeros(3), torch.zeros(3, 5)
    for j in range(0, 8, 3):
        m, total, acc = online_softmax_update(
            m, total, acc, scores[:, j : j + 3], v[j : j + 3]
        )
    return differs(acc / total[:, None], torch.softmax(scores, -1) @ v)


def _rope_relative() -> str | None:
    """Rotated scores depend only on the distance: shift both positions by 3."""
    rope, q, k = (
        mha_book.RotaryEmbedding(8),
        torch.randn(1, 1, 4, 8),
        torch.randn(1, 1, 4, 8),
    )
    a, b = rope(q, k, offset=0)
    c, d = rope(q, k, offset=3)
    return differs(c @ d.transpose(-2, -1), a @ b.transpose(-2, -1))


def _sinusoidal() -> torch.Tensor:
    pos, i = torch.arange(8.0)[:, None], torch.arange(0, 6, 2.0)
    angle = pos / 10000 ** (i / 6)
    return torch.stack([angle.sin(), angle.cos()], dim=-1).flatten(1)


def misc_oracles() -> list[Check]:
    return [*_misc_oracles_a(), *_misc_oracles_b()]


def _misc_oracles_a() -> list[Check]:
    x = torch.randn(2, 3, 5, 4)
    logits, targets = torch.randn(2, 6, 11), torch.randint(0, 11, (2, 6))
    cache = KVCache()
    mha_book.MultiHeadAttention(16, 4, num_kv_heads=2).forward_step(
        torch.randn(1, 3, 16), cache
    )
    return [
        _o(
            "lm_loss",
            "vs F.cross_entropy",
            lambda: differs(
                charlm.lm_loss(logits, targets),
                F.cross_entropy(logits.flatten(0, 1), targets.flatten()),
            ),
        ),
        _o(
            "repeat_kv",
            "vs repeat_interleave",
            lambda: differs(mha_book.repeat_kv(x, 2), x.repeat_interleave(2, dim=1)),
        ),
        _o(
            "split_heads",
            "vs view and transpose",
            lambda: differs(mha_book.split_heads(x.transpose(1, 2).flatten(2), 3), x),
        ),
        _o(
            "merge_heads",
            "vs transpose and flatten",
            lambda: differs(mha_book.merge_heads(x), x.transpose(1, 2).flatten(2)),
        ),
    ]


def _misc_oracles_b() -> list[Check]:
    x = torch.randn(2, 3, 5, 4)
    cache = KVCache()
    mha_book.MultiHeadAttention(16, 4, num_kv_heads=2).forward_step(
        torch.randn(1, 3, 16), cache
    )
    return [
        _o(
            "sinusoidal_positions",
            "vs sin/cos of pos / 10000^(2i/E)",
            lambda: differs(
                mha_book.sinusoidal_positions(8, 6).reshape(8, 6), _sinusoidal()
            ),
        ),
        _o(
            "kv_cache_bytes_per_token",
            "vs a KVCache's nbytes per token",
            lambda: differs(
                mha_book.kv_cache_bytes_per_token(1, 2, 4, 4), cache.nbytes // 3
            ),
        ),
        _o(
            "online_softmax_update",
            "three blocks vs softmax",
            _online_softmax,
        ),
        _o(
            "RotaryEmbedding.__call__",
            "scores shift-invariant",
            _rope_relative,
        ),
        _o(
            "rotate_half",
            "twice is minus",
            lambda: differs(mha_book.rotate_half(mha_book.rotate_half(x)), -x),
        ),
    ]


def oracle_checks() -> list[Check]:
    return [
        *flex_oracles(),
        *mask_oracles(),
        *kernel_oracles(),
        *module_oracles(),
        *cache_oracles(),
        *digest_oracles(),
        *serving_oracles(),
        *misc_oracles(),
    ]
