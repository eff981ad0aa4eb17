"""The diagrams draw what the code computes (mha_book.diagrams)."""

import pytest
import torch

from mha_book.diagrams import (
    attention_matrices,
    attention_patterns,
    causal_alignment,
    kernel_choice,
    kv_cache_growth,
    kv_head_sharing,
    online_softmax_tiles,
    torch_is_causal_mask,
)
from mha_book.masks import causal_mask
from mha_book.plot import smallest_text_pt


@pytest.mark.parametrize("T,S", [(1, 1), (3, 7), (5, 5), (6, 2)])
def test_pytorch_is_causal_is_the_top_left_triangle(T, S):
    top_left = torch.ones(T, S, dtype=torch.bool).tril()
    assert torch.equal(torch_is_causal_mask(T, S), top_left)
    assert torch.equal(torch_is_causal_mask(T, S), causal_mask(T, S)) == (T == S)


def test_the_alignment_diagram_draws_both_masks_legibly():
    fig, masks = causal_alignment(3, 7)
    assert torch.equal(masks["bottom_right"], causal_mask(3, 7))
    assert torch.equal(masks["top_left"], torch_is_causal_mask(3, 7))
    assert smallest_text_pt(fig) >= 10


def test_the_sharing_diagram_follows_repeat_kv():
    fig, reads = kv_head_sharing(6, (6, 3, 2, 1))
    assert reads == {
        6: [0, 1, 2, 3, 4, 5],
        3: [0, 0, 1, 1, 2, 2],
        2: [0, 0, 0, 1, 1, 1],
        1: [0] * 6,
    }
    assert smallest_text_pt(fig) >= 10
    with pytest.raises(ValueError, match="num_kv_heads must divide num_heads = 6"):
        kv_head_sharing(6, (4,))


def test_the_cache_diagram_records_the_shapes_of_real_decoding():
    from mha_book.module import MultiHeadAttention

    mha = MultiHeadAttention(16, 4, num_kv_heads=2).eval()
    fig, shapes = kv_cache_growth(mha, torch.randn(3, 5, 16))
    assert shapes == [(3, 2, t + 1, 4) for t in range(5)]
    assert smallest_text_pt(fig) >= 10


def _texts(fig):
    from matplotlib.text import Text

    return {t.get_text() for t in fig.findobj(Text)}


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_patterns_diagram_reads_the_layers_weights(monkeypatch, lang):
    from mha_book.book import LANG_ENV_VAR
    from mha_book.layers import DecoderLayer, EncoderLayer
    from mha_book.masks import padding_mask

    monkeypatch.setenv(LANG_ENV_VAR, lang)
    torch.manual_seed(0)
    enc, dec = EncoderLayer(16, 2, 32).eval(), DecoderLayer(16, 2, 32).eval()
    src, tgt = torch.randn(1, 5, 16), torch.randn(1, 3, 16)
    src_mask = padding_mask([4], 5)  # source token 4 is padding
    fig, seen = attention_patterns(enc, dec, src, tgt, src_mask)
    memory, enc_w = enc(src, src_mask)
    _, self_w, cross_w = dec(tgt, memory, memory_mask=src_mask)
    for kind, w in (("encoder_self", enc_w), ("decoder_self", self_w)):
        assert torch.equal(seen[kind], (w[0] != 0).any(0))
    assert torch.equal(seen["cross"], (cross_w[0] != 0).any(0))
    assert torch.equal(seen["decoder_self"], causal_mask(3))
    assert torch.equal(seen["cross"], padding_mask([4], 5)[0, 0].expand(3, 5))
    assert torch.equal(seen["encoder_self"], padding_mask([4], 5)[0, 0].expand(5, 5))
    title = {"zh": "交叉注意力", "en": "cross-attention"}[lang]
    assert title in _texts(fig)
    assert smallest_text_pt(fig) >= 10


def test_the_patterns_diagram_names_bad_arguments():
    from mha_book.layers import DecoderLayer, EncoderLayer

    enc, dec = EncoderLayer(8, 2, 16), DecoderLayer(8, 2, 16).eval()
    x = torch.randn(1, 3, 8)
    with pytest.raises(ValueError, match="encoder must be a layer in eval mode"):
        attention_patterns(enc, dec, x, x)
    with pytest.raises(ValueError, match=r"src must hold one sequence.*\(2, 3, 8\)"):
        attention_patterns(enc.eval(), dec, torch.randn(2, 3, 8), x)
    with pytest.raises(TypeError, match="tgt must be a torch.Tensor"):
        attention_patterns(enc, dec, x, [1, 2])


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("T,S,bq,bk", [(4, 12, 2, 4), (3, 10, 2, 3), (1, 7, 1, 7)])
def test_the_tiles_diagram_records_the_kernels_own_statistics(
    monkeypatch, lang, T, S, bq, bk
):
    from mha_book.book import LANG_ENV_VAR
    from mha_book.flash import _forward, flash_attention

    monkeypatch.setenv(LANG_ENV_VAR, lang)
    q, k, v = (torch.randn(n, 4, dtype=torch.float64) for n in (T, S, S))
    fig, facts = online_softmax_tiles(q, k, v, block_size=(bq, bk), row=T - 1)
    rows = [(i, min(i + bq, T)) for i in range(0, T, bq)]
    cols = [(j, min(j + bk, S)) for j in range(0, S, bk)]
    assert facts["order"] == [(r, c) for r in rows for c in cols]  # row blocks outside
    out, lse = _forward(q, k, v, None, 0.5, bq, bk)  # scale 1 / sqrt(4)
    assert torch.equal(facts["out"], out) and torch.equal(facts["lse"], lse)
    assert torch.equal(facts["out"], flash_attention(q, k, v, block_size=(bq, bk)))
    s = q @ k.T / 2  # (T, S)
    assert torch.allclose(facts["m"][:, -1], s.amax(-1), rtol=0, atol=1e-12)
    assert torch.equal(facts["m"][:, -1] + facts["l"][:, -1].log(), lse)
    assert torch.allclose(lse, torch.logsumexp(s, -1), atol=1e-12)
    assert torch.allclose(torch.exp(s - lse[:, None]), torch.softmax(s, -1))
    block_max = torch.stack([s[:, c0:c1].amax(-1) for c0, c1 in cols], -1)
    assert torch.allclose(facts["block_max"], block_max, rtol=0, atol=1e-12)
    assert torch.equal(facts["m"], facts["block_max"].cummax(-1).values)
    assert torch.all(facts["rescale"][:, 0] == 0)
    assert torch.equal(
        facts["rescale"][:, 1:] < 1, facts["block_max"][:, 1:] > facts["m"][:, :-1]
    )
    last = len(facts["order"])  # the last tile holds row T - 1, the one drawn
    tile = {"zh": f"块 {last}", "en": f"tile {last}"}[lang]
    assert tile in _texts(fig)
    assert smallest_text_pt(fig) >= 10


def test_the_tiles_diagram_names_bad_arguments():
    q = torch.randn(3, 4)
    with pytest.raises(ValueError, match=r"row must be an int in \[0, T\) = \[0, 3\)"):
        online_softmax_tiles(q, q, q, block_size=2, row=3)
    with pytest.raises(ValueError, match="block_size must be a positive int"):
        online_softmax_tiles(q, q, q, block_size=0)
    with pytest.raises(ValueError, match=r"k must have shape \(S, D\) \(2 dims\)"):
        online_softmax_tiles(q, q[None], q, block_size=2)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_matrices_diagram_draws_what_attention_computes(monkeypatch, lang):
    from mha_book.attention import scaled_dot_product_attention
    from mha_book.book import LANG_ENV_VAR

    monkeypatch.setenv(LANG_ENV_VAR, lang)
    q, k, v = torch.randn(3, 2), torch.randn(4, 2), torch.randn(4, 3)
    fig, m = attention_matrices(q, k, v)
    out, w = scaled_dot_product_attention(q, k, v)
    assert torch.equal(m["output"], out) and torch.equal(m["weights"], w)
    assert torch.equal(m["scores"], q @ k.T) and torch.equal(m["K^T"], k.T)
    assert torch.allclose(torch.softmax(m["scaled"], -1), w)
    assert torch.allclose(m["scaled"], q @ k.T / 2**0.5)
    texts = _texts(fig)
    assert f"{out[0, 0].item():.2f}".replace("-0.00", "0.00") in texts
    assert {"zh": "权重", "en": "weights"}[lang] in texts
    assert smallest_text_pt(fig) >= 10


def test_the_matrices_diagram_names_bad_arguments():
    x = torch.randn(3, 2)
    with pytest.raises(ValueError, match=r"v must be at most 4 x 4.*\(3, 5\)"):
        attention_matrices(x, x, torch.randn(3, 5))
    with pytest.raises(ValueError, match=r"q must have shape \(T, D\) \(2 dims\)"):
        attention_matrices(x[None], x, x)
    with pytest.raises(ValueError, match="k must have the head dim D of q"):
        attention_matrices(x, torch.randn(3, 3), x)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_kernel_table_records_what_the_module_ran(monkeypatch, lang):
    from mha_book.book import LANG_ENV_VAR
    from mha_book.kernels import ATTENTION_KERNELS

    monkeypatch.setenv(LANG_ENV_VAR, lang)
    before = dict(ATTENTION_KERNELS)
    fig, runs = kernel_choice(4)
    assert ATTENTION_KERNELS == before  # every kernel put back
    assert set(runs) == {(k, w) for k in [None, *before] for w in (True, False)}
    assert runs[(None, True)] == {
        "ran": "explicit",
        "weights": (1, 2, 4, 4),
        "error": None,
    }
    assert runs[(None, False)] == {"ran": "fused", "weights": None, "error": None}
    for name in before:
        assert runs[(name, False)] == {"ran": name, "weights": None, "error": None}
        assert runs[(name, True)]["ran"] == name
        refused = runs[(name, True)]["error"]
        assert (refused is None) == (name == "explicit")
        if refused:
            assert f"kernel {name!r} forms no weights" in refused
    label = {"zh": "kernel=None（默认）", "en": "kernel=None (default)"}[lang]
    assert label in _texts(fig)
    assert smallest_text_pt(fig) >= 10


def test_the_kernel_table_names_bad_arguments_and_restores_the_registry():
    from mha_book.kernels import ATTENTION_KERNELS

    before = dict(ATTENTION_KERNELS)
    with pytest.raises(ValueError, match="tokens must be a positive int, got 0"):
        kernel_choice(0)
    with pytest.raises(TypeError, match="tokens must be a positive int, got float"):
        kernel_choice(2.0)
    assert ATTENTION_KERNELS == before
