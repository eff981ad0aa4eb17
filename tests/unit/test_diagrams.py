"""The diagrams draw what the code computes (mha_book.viz.diagrams)."""

import math

import pytest
import torch

from mha_book.attention.alibi import alibi_bias, alibi_slopes
from mha_book.attention.heads import merge_heads, split_heads
from mha_book.attention.latent import LatentAttention
from mha_book.attention.masks import causal_mask, padding_mask
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.trace import trace_shapes
from mha_book.book import LANG_ENV_VAR, pick
from mha_book.viz.diagrams import (
    alibi_heads,
    attention_matrices,
    attention_patterns,
    block_table,
    causal_alignment,
    head_split_layout,
    kernel_choice,
    kv_cache_growth,
    kv_head_sharing,
    latent_data_flow,
    mask_broadcast,
    mha_data_flow,
    online_softmax_tiles,
    parallel_heads,
    reading_path,
    ring_buffer,
    rotary_rotation,
    sink_window,
    torch_is_causal_mask,
)
from mha_book.viz.layout import figure_layout
from mha_book.viz.plot import TEXT_PT, smallest_text_pt

F64 = torch.float64


def texts(fig) -> str:
    """Every text the figure draws, titles and tick labels included, one string."""
    from matplotlib.text import Text

    fig.draw_without_rendering()
    return "\n".join(t.get_text() for t in fig.findobj(Text))


@pytest.mark.parametrize("T,S", [(1, 1), (3, 7), (5, 5), (6, 2)])
def test_pytorch_is_causal_is_the_top_left_triangle(T, S):
    top_left = torch.ones(T, S, dtype=torch.bool).tril()
    assert torch.equal(torch_is_causal_mask(T, S), top_left)
    assert torch.equal(torch_is_causal_mask(T, S), causal_mask(T, S)) == (T == S)


def test_the_alignment_diagram_draws_both_masks_legibly():
    fig, masks = causal_alignment(3, 7)
    assert torch.equal(masks["bottom_right"], causal_mask(3, 7))
    assert torch.equal(masks["top_left"], torch_is_causal_mask(3, 7))
    assert smallest_text_pt(fig) >= TEXT_PT
    top, bottom = fig.axes
    assert [t.get_text() for t in top.get_yticklabels()] == ["0", "1", "2"]
    assert [t.get_text() for t in bottom.get_yticklabels()] == ["4", "5", "6"]
    assert bottom.get_ylabel() in ("查询位置", "query position")


def test_the_sharing_diagram_follows_repeat_kv():
    fig, reads = kv_head_sharing(6, (6, 3, 2, 1))
    assert reads == {
        6: [0, 1, 2, 3, 4, 5],
        3: [0, 0, 1, 1, 2, 2],
        2: [0, 0, 0, 1, 1, 1],
        1: [0] * 6,
        "layout": {"rows": 4, "columns": 1, "direction": None},
    }
    assert smallest_text_pt(fig) >= TEXT_PT
    with pytest.raises(ValueError, match="num_kv_heads must divide num_heads = 6"):
        kv_head_sharing(6, (4,))


def test_the_cache_diagram_records_the_shapes_of_real_decoding():
    from mha_book.attention.mha import MultiHeadAttention

    mha = MultiHeadAttention(16, 4, num_kv_heads=2).eval()
    fig, growth = kv_cache_growth(mha, torch.randn(3, 5, 16))
    assert growth["shapes"] == [(3, 2, t + 1, 4) for t in range(5)]
    assert smallest_text_pt(fig) >= TEXT_PT


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_data_flow_draws_the_traced_shapes(lang, monkeypatch):
    monkeypatch.setenv(LANG_ENV_VAR, lang)
    mha = MultiHeadAttention(16, 4).eval()
    x, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    fig, facts = mha_data_flow(mha, x, memory)
    assert facts["shapes"] == trace_shapes(mha, x, memory).as_dict()
    assert facts["layout"] == {"rows": 5, "columns": 1, "direction": "top-to-bottom"}
    drawn = texts(fig)
    if lang == "zh":  # the stages named as trace_shapes prints them, full-width marks
        assert "q：(2, 5, 16)   k、v：(2, 7, 16)" in drawn  # T != S: drawn apart
        assert "查询：(2, 5, 16)   键、值：(2, 7, 16)" in drawn
        assert "分数、权重：(2, 4, 5, 7)" in drawn and "合并：(2, 5, 16)" in drawn
        assert "2. 切分成多个头" in drawn  # the name chapter 3 gives step 2
    else:
        assert "q: (2, 5, 16)   k, v: (2, 7, 16)" in drawn  # T != S: drawn apart
        assert "scores, weights: (2, 4, 5, 7)" in drawn
        assert "merged: (2, 5, 16)" in drawn
    english = ("scores", "weights", "context", "merged", "output", "query", "split")
    assert any(word in drawn for word in english) == (lang == "en")
    assert ("输出投影" in drawn) == (lang == "zh")
    assert ("output projection" in drawn) == (lang == "en")
    assert smallest_text_pt(fig) >= TEXT_PT and fig.get_size_inches()[0] <= 5.0


def test_the_data_flow_has_one_size_in_both_editions(monkeypatch):
    # tools/check_numbers.py reads a glued figure's size as its text, the same in
    # both editions; each edition's PNG is still cut to its own longest label
    from mha_book.viz.plot import FIGURE_DPI, PIXEL_DENSITY, figure_png

    mha = MultiHeadAttention(512, 8).eval()
    x = torch.randn(2, 10, 512)
    sizes, png_widths = {}, {}
    for lang in ("zh", "en"):
        monkeypatch.setenv(LANG_ENV_VAR, lang)
        fig, _ = mha_data_flow(mha, x)
        sizes[lang] = tuple(fig.get_size_inches())
        png = figure_png(fig)
        png_widths[lang] = int.from_bytes(png[16:20], "big")  # the IHDR width
    assert sizes["zh"] == sizes["en"]
    pixels_per_inch = FIGURE_DPI * PIXEL_DENSITY
    assert max(png_widths.values()) < 0.8 * sizes["en"][0] * pixels_per_inch  # cut
    assert png_widths["zh"] != png_widths["en"]  # each to its own labels


def test_the_data_flow_draws_the_heads_of_a_grouped_module():
    mha = MultiHeadAttention(16, 4, num_kv_heads=2).eval()
    fig, facts = mha_data_flow(mha, torch.randn(1, 3, 16))
    shapes = facts["shapes"]
    assert shapes["q_heads"] == (1, 4, 3, 4) and shapes["k_heads"] == (1, 2, 3, 4)
    assert "q: (1, 4, 3, 4)   k, v: (1, 2, 3, 4)" in texts(fig)


def test_the_data_flow_refuses_what_the_module_refuses():
    with pytest.raises(TypeError, match="module must be a mha_book.MultiHeadAttention"):
        mha_data_flow(torch.nn.Linear(4, 4), torch.randn(1, 2, 4))
    with pytest.raises(ValueError, match="query"):
        mha_data_flow(MultiHeadAttention(8, 2), torch.randn(2, 8))


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_layout_draws_the_real_strides_and_offsets(lang, monkeypatch):
    monkeypatch.setenv(LANG_ENV_VAR, lang)
    x = torch.randn(1, 3, 4)
    fig, layout = head_split_layout(x, 2)
    heads = split_heads(x, 2)
    tensors = {
        "x": x,
        "view": x.view(1, 3, 2, 2),
        "split": heads,
        "merged": merge_heads(heads),
        "no_transpose": heads.reshape(1, 3, 4),
    }
    for name, t in tensors.items():
        assert layout[name]["shape"] == tuple(t.shape)
        assert layout[name]["stride"] == t.stride()
        assert torch.equal(x.flatten()[layout[name]["offsets"]], t)  # who is where
    assert layout["split"]["stride"] == (12, 2, 4, 1)
    assert layout["no_transpose"]["offsets"][0, 0].tolist() == [0, 1, 4, 5]
    assert "view size is not compatible" in layout["view_error"]
    drawn = texts(fig)
    assert "(12, 2, 4, 1)" in drawn and "RuntimeError" in drawn
    assert ("步长" in drawn) == (lang == "zh") and ("stride" in drawn) == (lang == "en")
    assert smallest_text_pt(fig) >= TEXT_PT and fig.get_size_inches()[0] <= 5.0


def test_the_layout_reads_offsets_from_a_tensor_inside_a_larger_storage():
    base = torch.arange(20)
    x = base[8:].view(1, 3, 4)  # storage offset 8
    _, layout = head_split_layout(x, 2)
    assert layout["split"]["offsets"][0, 1, 0].tolist() == [10, 11]
    assert torch.equal(base[layout["split"]["offsets"]], split_heads(x, 2))


def test_the_layout_names_its_bad_arguments():
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        head_split_layout([[1, 2]], 2)
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, E\)"):
        head_split_layout(torch.zeros(3, 4), 2)
    with pytest.raises(ValueError, match="divisible by num_heads"):
        head_split_layout(torch.zeros(1, 3, 4), 3)
    with pytest.raises(ValueError, match="x must be contiguous and small"):
        head_split_layout(torch.zeros(1, 4, 3).transpose(1, 2), 2)
    with pytest.raises(
        ValueError, match=r"x must be contiguous and small.*\(1, 5, 4\)"
    ):
        head_split_layout(torch.zeros(1, 5, 4), 2)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_mask_diagram_combines_what_the_module_combines(lang, monkeypatch):
    monkeypatch.setenv(LANG_ENV_VAR, lang)
    lengths = torch.tensor([5, 3, 1])
    fig, facts = mask_broadcast(lengths, 5, num_heads=2)
    pad, causal = padding_mask(lengths, 5), causal_mask(5)
    assert torch.equal(facts["mask"], pad & causal)
    assert facts["shapes"] == {
        "padding": (3, 1, 1, 5),
        "causal": (5, 5),
        "combined": (3, 1, 5, 5),
        "scores": (3, 2, 5, 5),
    }
    # the module allows exactly these keys: its weights vanish elsewhere
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2).eval()
    x = torch.randn(3, 5, 8)
    with torch.no_grad():
        _, w = mha(x, x, x, mask=causal, key_mask=pad[:, 0, 0, :])  # (B, H, T, S)
    assert torch.equal(w > 0, facts["mask"].expand(3, 2, 5, 5))
    drawn = texts(fig)
    assert "(3, 2, 5, 5)" in drawn
    assert ("键 j" in drawn) == (lang == "zh") and ("key j" in drawn) == (lang == "en")
    assert smallest_text_pt(fig) >= TEXT_PT and fig.get_size_inches()[0] <= 5.0


def test_the_mask_diagram_names_its_bad_arguments():
    with pytest.raises(ValueError, match="T must be a positive int, got 0"):
        mask_broadcast([1], 0)
    with pytest.raises(ValueError, match="num_heads must be a positive int"):
        mask_broadcast([1], 2, num_heads=0)
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, max_len\]"):
        mask_broadcast([3], 2)
    with pytest.raises(ValueError, match="small enough to draw"):
        mask_broadcast([1] * 5, 2)


def _texts(fig):
    from matplotlib.text import Text

    return {t.get_text() for t in fig.findobj(Text)}


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_patterns_diagram_reads_the_layers_weights(monkeypatch, lang):
    from mha_book.attention.masks import padding_mask
    from mha_book.book import LANG_ENV_VAR
    from mha_book.models.layers import DecoderLayer, EncoderLayer

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
    assert smallest_text_pt(fig) >= TEXT_PT


def test_the_patterns_diagram_names_bad_arguments():
    from mha_book.models.layers import DecoderLayer, EncoderLayer

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
    from mha_book.attention.flash import _forward, flash_attention
    from mha_book.book import LANG_ENV_VAR

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
    assert smallest_text_pt(fig) >= TEXT_PT


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
    from mha_book.attention.scaled_dot_product import scaled_dot_product_attention
    from mha_book.book import LANG_ENV_VAR

    monkeypatch.setenv(LANG_ENV_VAR, lang)
    q, k, v = torch.randn(4, 2), torch.randn(3, 2), torch.randn(3, 2)  # T != S
    fig, m = attention_matrices(q, k, v)
    out, w = scaled_dot_product_attention(q, k, v)
    assert torch.equal(m["output"], out) and torch.equal(m["weights"], w)
    assert torch.equal(m["scores"], q @ k.T) and torch.equal(m["K^T"], k.T)
    assert torch.allclose(torch.softmax(m["scaled"], -1), w)
    assert torch.allclose(m["scaled"], q @ k.T / 2**0.5)
    texts = _texts(fig)
    assert f"{out[0, 0].item():.2f}".replace("-0.00", "0.00") in texts
    assert {"zh": "权重", "en": "weights"}[lang] in texts
    assert smallest_text_pt(fig) >= TEXT_PT


# The widest inputs the diagram takes: (T, S, D, Dv)
@pytest.mark.parametrize("T,S,D,Dv", [(3, 3, 2, 2), (4, 2, 4, 3), (4, 1, 4, 3)])
def test_the_matrices_diagram_leaves_a_gap_between_negative_numbers(T, S, D, Dv):
    import re

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from mha_book.viz.diagrams.scores import CELL

    q, k = -torch.rand(T, D) - 1, torch.rand(S, D) + 1
    v = -torch.rand(S, Dv) - 1
    fig, _ = attention_matrices(q, k, v)  # "-1.xx" in Q, scores and V
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw_without_rendering()  # lay the figure out before measuring it
    ax = fig.axes[0]
    cell_px = (
        ax.transData.transform((CELL[0], 0))[0] - ax.transData.transform((0, 0))[0]
    )
    numbers = [t for t in ax.texts if re.fullmatch(r"-\d\.\d\d", t.get_text())]
    assert numbers and fig.get_size_inches()[0] <= 5.0
    assert max(t.get_window_extent(renderer).width for t in numbers) < 0.85 * cell_px


def test_the_matrices_diagram_names_bad_arguments():
    x = torch.randn(3, 2)
    with pytest.raises(ValueError, match=r"v must be at most 4 x 4.*\(3, 5\)"):
        attention_matrices(x, x, torch.randn(3, 5))
    with pytest.raises(ValueError, match=r"q must have shape \(T, D\) \(2 dims\)"):
        attention_matrices(x[None], x, x)
    with pytest.raises(ValueError, match="k must have the head dim D of q"):
        attention_matrices(x, torch.randn(3, 3), x)
    wide = torch.randn(4, 3)  # D + 2 S = 11 cells: wider than a phone's row
    with pytest.raises(
        ValueError,
        match=r"too large.*Q \(4, 3\).*12 cell widths wide with its signs, at most 9",
    ):
        attention_matrices(wide, wide, wide)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_kernel_table_records_what_the_module_ran(monkeypatch, lang):
    from mha_book.attention.kernels import ATTENTION_KERNELS
    from mha_book.book import LANG_ENV_VAR

    monkeypatch.setenv(LANG_ENV_VAR, lang)
    before = dict(ATTENTION_KERNELS)
    fig, runs = kernel_choice(4)
    assert ATTENTION_KERNELS == before  # every kernel put back
    kernels = [None, *before]
    assert set(runs) == {(k, w) for k in kernels for w in (True, False)} | {"layout"}
    assert runs["layout"] == {"rows": 1, "columns": 1, "direction": None}  # a table
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
    label = {"zh": "kernel=None\n（默认）", "en": "kernel=None\n(default)"}[lang]
    assert label in _texts(fig)
    assert smallest_text_pt(fig) >= TEXT_PT


def test_the_kernel_table_names_bad_arguments_and_restores_the_registry():
    from mha_book.attention.kernels import ATTENTION_KERNELS

    before = dict(ATTENTION_KERNELS)
    with pytest.raises(ValueError, match="tokens must be a positive int, got 0"):
        kernel_choice(0)
    with pytest.raises(TypeError, match="tokens must be a positive int, got float"):
        kernel_choice(2.0)
    assert ATTENTION_KERNELS == before


def test_the_rotation_diagram_reads_position_times_theta_back():
    fig, facts = rotary_rotation(head_dim=8, positions=6, pairs=(0, 1, 2))
    theta = facts["theta"]  # (3,): 1, 0.1, 0.01
    assert torch.allclose(theta, torch.tensor([1.0, 0.1, 0.01], dtype=F64))
    m = torch.arange(6, dtype=F64)[:, None]  # (T, 1)
    assert torch.allclose(facts["angles"], (m * theta) % (2 * math.pi), atol=1e-12)
    assert torch.allclose(facts["norms"], torch.ones(6, 3, dtype=F64), atol=1e-12)
    assert len(fig.axes) == 3
    with pytest.raises(ValueError, match=r"pairs in \[0, D/2\) = \[0, 4\)"):
        rotary_rotation(head_dim=8, pairs=(4,))


def test_the_rotation_diagram_labels_every_arrow_of_a_panel_or_none():
    fig, facts = rotary_rotation(head_dim=8, positions=6, pairs=(0, 1, 2))
    labels = [[t.get_text() for t in ax.texts if t.get_text()] for ax in fig.axes]
    # pair 0 turns 1 radian a position: six labels fit; pairs 1 and 2 crowd
    assert labels == [[f"m={t}" for t in range(6)], [], []]
    assert facts["labelled"] == [True, False, False]
    _, facts = rotary_rotation(head_dim=8, positions=2, pairs=(1,))  # 0.1 apart
    assert facts["labelled"] == [False]


def test_the_alibi_diagram_draws_every_heads_real_bias(monkeypatch):
    monkeypatch.setenv(LANG_ENV_VAR, "en")
    fig, facts = alibi_heads(6, 5)
    assert torch.equal(facts["slopes"], alibi_slopes(6, dtype=F64))
    assert torch.equal(facts["bias"], alibi_bias(6, 5, dtype=F64))
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles[:2] == ["head 0\nm = 1/4", "head 1\nm = 1/16"]
    assert len(titles) == 6
    with pytest.raises(ValueError, match="H <= 16"):
        alibi_heads(17)


def _layers():
    from mha_book.models.layers import DecoderLayer, EncoderLayer

    return EncoderLayer(8, 2, 16).eval(), DecoderLayer(8, 2, 16).eval()


# Every diagram, called small: name -> a call returning (figure, facts).
DIAGRAMS = {
    "attention_matrices": lambda: attention_matrices(*torch.randn(3, 3, 2)),
    "mha_data_flow": lambda: mha_data_flow(
        MultiHeadAttention(8, 2), torch.randn(1, 3, 8)
    ),
    "parallel_heads": lambda: parallel_heads(
        MultiHeadAttention(8, 2).eval(), torch.randn(1, 3, 8)
    ),
    "head_split_layout": lambda: head_split_layout(torch.randn(1, 3, 4), 2),
    "mask_broadcast": lambda: mask_broadcast([3, 2], 3),
    "attention_patterns": lambda: attention_patterns(
        *_layers(), torch.randn(1, 3, 8), torch.randn(1, 2, 8)
    ),
    "kernel_choice": lambda: kernel_choice(),
    "reading_path": lambda: reading_path(),
    "online_softmax_tiles": lambda: online_softmax_tiles(
        *torch.randn(3, 4, 2), block_size=2
    ),
    "causal_alignment": lambda: causal_alignment(3, 5),
    "kv_head_sharing": lambda: kv_head_sharing(4, (4, 2, 1)),
    "kv_cache_growth": lambda: kv_cache_growth(
        MultiHeadAttention(8, 2).eval(), torch.randn(1, 3, 8)
    ),
    "rotary_rotation": lambda: rotary_rotation(head_dim=8, pairs=(0, 1, 2)),
    "alibi_heads": lambda: alibi_heads(3, 4),
    "ring_buffer": lambda: ring_buffer(3, 5),
    "sink_window": lambda: sink_window(1, 2, 5),
    "block_table": lambda: block_table(_paged_sequences()),
    "latent_data_flow": lambda: latent_data_flow(
        LatentAttention(16, 2, head_dim=8, latent_dim=8, rope_dim=4),
        torch.randn(1, 3, 16),
    ),
}


def _paged_sequences():
    from mha_book.attention.paged import BlockPool, PagedKVCache

    pool = BlockPool(16, 4, num_kv_heads=1, head_dim=2)
    a, b = PagedKVCache(pool), PagedKVCache(pool)
    a.append(torch.zeros(1, 5, 2), torch.zeros(1, 5, 2))
    b.append(torch.zeros(1, 3, 2), torch.zeros(1, 3, 2))
    return [a, b]


def test_every_diagram_is_in_the_list_of_diagrams():
    import mha_book.viz.diagrams as diagrams

    drawing = {
        name
        for name in diagrams.__all__
        if name not in ("torch_is_causal_mask", "head_columns")  # no figure
    }
    assert drawing == set(DIAGRAMS)


@pytest.mark.parametrize("name", sorted(DIAGRAMS))
def test_every_diagram_states_the_layout_it_drew(name):
    fig, facts = DIAGRAMS[name]()
    layout = facts["layout"]
    assert layout == figure_layout(fig)  # what figure_png writes into the PNG
    assert set(layout) == {"rows", "columns", "direction"}
    panels = [ax for ax in fig.axes if getattr(ax, "_colorbar", None) is None]
    if len(panels) > 1:  # drawn one panel an Axes: the Axes must agree
        measured = figure_layout(fig, recorded=False)
        assert (measured["rows"], measured["columns"]) == (
            layout["rows"],
            layout["columns"],
        )


def test_a_recorded_layout_that_disagrees_with_the_axes_is_caught():
    from mha_book.viz.layout import record_layout

    fig, facts = causal_alignment(3, 5)  # two panels, one above the other
    record_layout(fig, rows=1, columns=2)  # as if they stood side by side
    measured = figure_layout(fig, recorded=False)
    assert (measured["rows"], measured["columns"]) == (2, 1) != (1, 2)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_parallel_heads_are_the_modules_own(monkeypatch, lang):
    from mha_book.attention.scaled_dot_product import scaled_dot_product_attention

    monkeypatch.setenv(LANG_ENV_VAR, lang)
    torch.manual_seed(0)
    mha = MultiHeadAttention(32, 4).eval()
    x, memory = torch.randn(2, 5, 32), torch.randn(2, 7, 32)  # T != S
    fig, facts = parallel_heads(mha, x, memory)
    assert facts["num_heads"] == mha.num_heads == 4
    assert facts["head_dim"] == mha.head_dim == 8
    assert facts["columns"] == [(0, 8), (8, 16), (16, 24), (24, 32)]
    with torch.no_grad():
        output, _ = mha(x, memory, memory, need_weights=False)
        q, k, v = mha.q_proj(x), mha.k_proj(memory), mha.v_proj(memory)
        heads = split_heads(q, 4), split_heads(k, 4), split_heads(v, 4)
        context, _ = scaled_dot_product_attention(*heads)  # (B, H, T, D)
        assert torch.allclose(mha.out_proj(facts["concat"]), output, atol=1e-6)
    assert torch.equal(facts["output"], output)
    assert torch.allclose(facts["concat"], merge_heads(context), atol=1e-6)
    for h, (a, b) in enumerate(facts["columns"]):  # head h: its columns, alone
        alone, _ = scaled_dot_product_attention(q[..., a:b], k[..., a:b], v[..., a:b])
        assert torch.allclose(facts["heads"][:, h], alone.detach())
        assert torch.allclose(facts["concat"][..., a:b], alone.detach(), atol=1e-6)
    assert facts["shapes"]["head_k"] == (2, 7, 8)
    assert facts["layout"] == {"rows": 5, "columns": 4, "direction": "top-to-bottom"}
    drawn = texts(fig)
    assert "out_proj (Wᴼ)" in drawn
    assert pick("k、v：(2, 7, 8)", "k, v: (2, 7, 8)") in drawn
    assert pick("查询：(2, 5, 32)", "query: (2, 5, 32)") in drawn
    assert "\n".join(["0", "8", "16", "24", "32"]) in drawn  # the columns' edges
    # step 4 has the name chapter 3 gives it, as in mha_data_flow
    assert ("4. 合并" in drawn) == (lang == "zh")
    assert ("concat" in drawn) == (lang == "en")
    assert smallest_text_pt(fig) >= TEXT_PT
    # the PNG is cut to what is drawn, plus 0.1 in a side: at most 5 in, as the others
    assert fig.get_tightbbox().width <= 4.8


def test_the_parallel_heads_fit_a_phone_with_eight_heads():
    mha = MultiHeadAttention(512, 8).eval()
    fig, _ = parallel_heads(mha, torch.randn(2, 10, 512), torch.randn(2, 7, 512))
    fig.draw_without_rendering()
    assert fig.get_tightbbox().width <= 4.8 and smallest_text_pt(fig) >= TEXT_PT


def test_the_parallel_heads_follow_a_sequence_first_module():
    mha = MultiHeadAttention(16, 2, batch_first=False).eval()
    x = torch.randn(5, 3, 16)  # (T, B, E)
    _, facts = parallel_heads(mha, x)
    with torch.no_grad():
        expected, _ = mha(x, x, x, need_weights=False)
    assert torch.equal(facts["output"], expected.transpose(0, 1))  # (B, T, E)
    assert facts["heads"].shape == (3, 2, 5, 8)
    assert torch.allclose(facts["heads"][:, 1], facts["concat"][..., 8:], atol=1e-6)


def test_the_parallel_heads_name_their_bad_arguments():
    from mha_book.attention.rope import RotaryEmbedding

    x = torch.randn(1, 3, 16)
    with pytest.raises(TypeError, match="module must be a mha_book.MultiHeadAttention"):
        parallel_heads(torch.nn.Linear(16, 16), x)
    with pytest.raises(
        ValueError, match=r"num_kv_heads = num_heads .*num_kv_heads = 1"
    ):
        parallel_heads(MultiHeadAttention(16, 2, num_kv_heads=1), x)
    with pytest.raises(ValueError, match="at most 8 heads.*num_heads = 16"):
        parallel_heads(MultiHeadAttention(16, 16), x)
    with pytest.raises(ValueError, match="no rope"):
        parallel_heads(MultiHeadAttention(16, 2, rope=RotaryEmbedding(8)), x)
    with pytest.raises(ValueError, match="eval mode or no dropout.*training = True"):
        parallel_heads(MultiHeadAttention(16, 2, dropout=0.1), x)
    with pytest.raises(ValueError, match="query"):
        parallel_heads(MultiHeadAttention(16, 2), torch.randn(1, 3, 8))


def test_the_pages_check_of_the_heads_fails_on_the_wrong_columns():
    """Chapter 03 checks each head's columns against out_proj's input: it can fail."""
    from mha_book.attention.scaled_dot_product import scaled_dot_product_attention

    torch.manual_seed(0)
    mha = MultiHeadAttention(16, 2).eval()
    x = torch.randn(1, 4, 16)
    _, facts = parallel_heads(mha, x)
    with torch.no_grad():
        projected = mha.q_proj(x), mha.k_proj(x), mha.v_proj(x)

        def head(start, stop):
            return scaled_dot_product_attention(
                *(t[..., start:stop] for t in projected)
            )

        (a0, b0), (a1, b1) = facts["columns"]
        assert torch.allclose(head(a0, b0)[0], facts["concat"][..., a0:b0], atol=1e-6)
        shifted = head(a0 + 1, b0 + 1)[0]  # one column off: another head's feature
        assert not torch.allclose(shifted, facts["concat"][..., a0:b0], atol=1e-5)
        swapped = head(a1, b1)[0]  # head 1's columns in head 0's place
        assert not torch.allclose(swapped, facts["concat"][..., a0:b0], atol=1e-5)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_reading_path_draws_the_books_map(monkeypatch, lang):
    from mha_book import book_map

    monkeypatch.setenv(LANG_ENV_VAR, lang)
    fig, facts = reading_path()
    assert smallest_text_pt(fig) >= TEXT_PT and fig.get_size_inches()[0] <= 5.0
    drawn = texts(fig)
    for part in book_map.PARTS:  # each part's name, in the page's language
        assert book_map.text(part.short, lang) in drawn
    boxes = [f"{c.number:02d}" for c in book_map.CHAPTERS]
    assert all(b in drawn.split("\n") for b in boxes)
    # every need is an arrow pointing down, and the parts keep their columns
    assert sorted(facts["needs"]) == sorted(
        (m, c.number) for c in book_map.CHAPTERS for m in c.needs
    )
    assert all(facts["level"][m] < facts["level"][n] for m, n in facts["needs"])
    columns = {
        key: {facts["slot"][n][0] for n in numbers}
        for key, numbers in facts["parts"].items()
    }
    keys = [p.key for p in book_map.PARTS]
    for left, right in zip(keys, keys[1:]):
        assert max(columns[left]) < min(columns[right])
    assert len(set(facts["slot"].values())) == len(book_map.CHAPTERS)  # no overlap
    assert facts["layout"]["direction"] == "top-to-bottom"


def test_a_new_chapter_is_one_more_box(monkeypatch):
    from dataclasses import replace

    from mha_book import book_map

    last = book_map.CHAPTERS[-1].number
    n = last + 1  # a chapter after the last one, which it needs
    new = replace(book_map.CHAPTERS[-1], number=n, slug=f"{n}-next", needs=(last,))
    monkeypatch.setattr(book_map, "CHAPTERS", (*book_map.CHAPTERS, new))
    fig, facts = reading_path()
    assert (last, n) in facts["needs"]
    assert facts["level"][n] == facts["level"][last] + 1
    assert facts["layout"]["rows"] == facts["level"][n] + 1
    assert str(n) in texts(fig).split("\n")
