"""Tests for mha_book.attention.trace."""

import pytest
import torch

from mha_book.attention.masks import causal_mask
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.trace import ShapeTrace, trace_shapes
from mha_book.book import display_width

STAGES = [
    "query",
    "key",
    "value",
    "q_proj",
    "k_proj",
    "v_proj",
    "q_heads",
    "k_heads",
    "v_heads",
    "scores",
    "weights",
    "context",
    "merged",
    "output",
]


def test_cross_attention_shapes_and_symbols():
    torch.manual_seed(0)
    m = MultiHeadAttention(16, 4, kdim=6, vdim=10)
    tr = trace_shapes(
        m, torch.randn(2, 3, 16), torch.randn(2, 5, 6), torch.randn(2, 5, 10)
    )
    assert isinstance(tr, ShapeTrace) and tr.stages == STAGES and len(tr) == 14
    assert tr.as_dict() == {
        "query": (2, 3, 16),
        "key": (2, 5, 6),
        "value": (2, 5, 10),
        "q_proj": (2, 3, 16),
        "k_proj": (2, 5, 16),
        "v_proj": (2, 5, 16),
        "q_heads": (2, 4, 3, 4),
        "k_heads": (2, 4, 5, 4),
        "v_heads": (2, 4, 5, 4),
        "scores": (2, 4, 3, 5),
        "weights": (2, 4, 3, 5),
        "context": (2, 4, 3, 4),
        "merged": (2, 3, 16),
        "output": (2, 3, 16),
    }
    symbols = {name: sym for name, sym, _ in tr}
    assert symbols["key"] == "(B, S, kdim)" and symbols["value"] == "(B, S, vdim)"
    assert symbols["scores"] == "(B, H, T, S)" and symbols["k_heads"] == "(B, H, S, D)"
    assert tr.sizes == {"B": 2, "H": 4, "T": 3, "S": 5, "D": 4, "E": 16}
    assert tr["scores"] == torch.Size([2, 4, 3, 5])


def test_self_attention_defaults_and_mask():
    m = MultiHeadAttention(8, 2)
    x = torch.randn(3, 4, 8)
    tr = trace_shapes(m, x, mask=causal_mask(4))
    assert tr["key"] == tr["value"] == (3, 4, 8)
    assert tr["weights"] == (3, 2, 4, 4)


def test_seq_first_layout():
    m = MultiHeadAttention(8, 2, batch_first=False)
    tr = trace_shapes(m, torch.randn(4, 3, 8), torch.randn(6, 3, 8))
    assert tr["query"] == (4, 3, 8) and tr["output"] == (4, 3, 8)
    assert tr["q_proj"] == (3, 4, 8) and tr["scores"] == (3, 2, 4, 6)
    symbols = {name: sym for name, sym, _ in tr}
    assert (symbols["query"], symbols["key"], symbols["output"]) == (
        "(T, B, E)",
        "(S, B, E)",
        "(T, B, E)",
    )


def test_output_shape_equals_module_output_even_with_dropout():
    m = MultiHeadAttention(8, 2, dropout=0.5).train()
    x = torch.randn(2, 5, 8)
    assert trace_shapes(m, x)["output"] == m(x, x, x)[0].shape


def test_text_and_markdown():
    tr = trace_shapes(MultiHeadAttention(8, 2), torch.randn(1, 3, 8))
    lines = str(tr).splitlines()
    assert lines[0].split() == ["stage", "symbolic", "shape"] and len(lines) == 16
    assert lines[1].startswith("-----")
    assert len({line.index("(") for line in lines[2:]}) == 1  # symbolic column aligned
    assert repr(tr) == str(tr)
    md = tr.to_markdown().splitlines()
    assert md[0] == "| stage | symbolic | shape |" and md[1] == "|---|---|---|"
    assert "| scores | `(B, H, T, S)` | `(1, 2, 3, 3)` |" in md


def test_text_in_the_zh_book(monkeypatch):
    monkeypatch.setenv("MHA_BOOK_LANG", "zh")
    tr = trace_shapes(MultiHeadAttention(8, 2), torch.randn(1, 3, 8))
    lines = str(tr).splitlines()
    assert lines[0].split() == ["阶段", "符号形状", "形状"]
    assert [line.split()[0] for line in lines[2:5]] == ["查询", "键", "值"]
    assert "q_proj" in lines[5] and tr.stages[0] == "query"  # the keys stay English
    # a Chinese character takes two columns: the symbolic column stays aligned
    assert len({display_width(line[: line.index("(")]) for line in lines[2:]}) == 1


def test_unknown_stage():
    tr = trace_shapes(MultiHeadAttention(8, 2), torch.randn(1, 3, 8))
    with pytest.raises(KeyError, match="stage must be one of"):
        tr["attn"]


def test_errors():
    with pytest.raises(
        TypeError, match=r"module must be a mha_book.MultiHeadAttention, got Multihead"
    ):
        trace_shapes(torch.nn.MultiheadAttention(8, 2), torch.randn(1, 3, 8))
    with pytest.raises(ValueError, match=r"query must have shape \(B, T, 8\)"):
        trace_shapes(MultiHeadAttention(8, 2), torch.randn(1, 3, 6))


def test_trace_does_not_record_gradients():
    m = MultiHeadAttention(8, 2)
    x = torch.randn(1, 3, 8, requires_grad=True)
    trace_shapes(m, x)
    assert x.grad is None and all(p.grad is None for p in m.parameters())


def test_grouped_query_attention_is_traced_with_its_key_value_heads():
    mha = MultiHeadAttention(64, 8, num_kv_heads=2).eval()
    x = torch.randn(2, 5, 64)
    tr = trace_shapes(mha, x)
    assert tr["k_proj"] == (2, 5, 16)  # Hkv·D = 2·8
    assert tr["k_heads"] == (2, 2, 5, 8)  # (B, Hkv, S, D)
    assert tr["k_repeated"] == (2, 8, 5, 8)  # (B, H, S, D)
    assert tr["scores"] == (2, 8, 5, 5)
    assert tr["output"] == x.shape
