"""The diagrams draw what the code computes (mha_book.diagrams)."""

import pytest
import torch

from mha_book.book import LANG_ENV_VAR
from mha_book.diagrams import (
    causal_alignment,
    head_split_layout,
    kv_cache_growth,
    kv_head_sharing,
    mask_broadcast,
    mha_data_flow,
    torch_is_causal_mask,
)
from mha_book.heads import merge_heads, split_heads
from mha_book.masks import causal_mask, padding_mask
from mha_book.module import MultiHeadAttention
from mha_book.plot import smallest_text_pt
from mha_book.trace import trace_shapes


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


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_data_flow_draws_the_traced_shapes(lang, monkeypatch):
    monkeypatch.setenv(LANG_ENV_VAR, lang)
    mha = MultiHeadAttention(16, 4).eval()
    x, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    fig, shapes = mha_data_flow(mha, x, memory)
    assert shapes == trace_shapes(mha, x, memory).as_dict()
    drawn = texts(fig)
    assert "q: (2, 5, 16)   k, v: (2, 7, 16)" in drawn  # T != S: drawn apart
    assert "scores, weights: (2, 4, 5, 7)" in drawn
    assert ("输出投影" in drawn) == (lang == "zh")
    assert ("output projection" in drawn) == (lang == "en")
    assert smallest_text_pt(fig) >= 10 and fig.get_size_inches()[0] <= 5.0


def test_the_data_flow_draws_the_heads_of_a_grouped_module():
    mha = MultiHeadAttention(16, 4, num_kv_heads=2).eval()
    fig, shapes = mha_data_flow(mha, torch.randn(1, 3, 16))
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
    assert smallest_text_pt(fig) >= 10 and fig.get_size_inches()[0] <= 5.0


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
    assert smallest_text_pt(fig) >= 10 and fig.get_size_inches()[0] <= 5.0


def test_the_mask_diagram_names_its_bad_arguments():
    with pytest.raises(ValueError, match="T must be a positive int, got 0"):
        mask_broadcast([1], 0)
    with pytest.raises(ValueError, match="num_heads must be a positive int"):
        mask_broadcast([1], 2, num_heads=0)
    with pytest.raises(ValueError, match=r"lengths must lie in \[0, max_len\]"):
        mask_broadcast([3], 2)
    with pytest.raises(ValueError, match="small enough to draw"):
        mask_broadcast([1] * 5, 2)
