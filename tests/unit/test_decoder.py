"""Tests for mha_book.models.decoder: the causal decoder-only Transformer."""

import math

import pytest
import torch

from mha_book.attention.alibi import alibi_bias
from mha_book.attention.masks import causal_mask
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.positions import sinusoidal_positions
from mha_book.models.blocks import DecoderOnlyBlock
from mha_book.models.decoder import POSITIONS, CausalDecoder, DecoderConfig

F64 = torch.float64


def make_model(**kwargs) -> CausalDecoder:
    torch.manual_seed(0)
    config = dict(vocab_size=11, embed_dim=16, num_heads=4, num_layers=2, max_len=12)
    config.update(kwargs)
    return CausalDecoder(DecoderConfig(**config), dtype=F64).eval()


def test_sinusoidal_positions_formula():
    table = sinusoidal_positions(10, 6, dtype=F64)
    assert table.shape == (10, 6)
    p, i = 7, 1  # position 7, frequency index 1 -> columns 2 and 3
    angle = p / 10000 ** (2 * i / 6)
    assert math.isclose(table[p, 2 * i], math.sin(angle), rel_tol=1e-12)
    assert math.isclose(table[p, 2 * i + 1], math.cos(angle), rel_tol=1e-12)
    with pytest.raises(ValueError, match="even"):
        sinusoidal_positions(4, 5)


@pytest.mark.parametrize("positions", POSITIONS)
def test_shapes_and_weights(positions):
    model = make_model(positions=positions)
    idx = torch.randint(0, 11, (3, 9))
    logits, weights = model(idx, need_weights=True)
    assert logits.shape == (3, 9, 11)
    assert len(weights) == 2 and all(w.shape == (3, 4, 9, 9) for w in weights)
    for w in weights:
        assert torch.all(
            w.masked_select(~causal_mask(9)) == 0
        )  # exactly zero above the diagonal
        assert torch.allclose(w.sum(-1), torch.ones(3, 4, 9, dtype=F64))
    logits_fast, none = model(idx)
    assert none is None
    assert torch.allclose(
        logits, logits_fast, atol=1e-12
    )  # explicit and fused kernels agree


@pytest.mark.parametrize("positions", POSITIONS)
def test_no_information_from_the_future(positions):
    model = make_model(positions=positions)
    idx = torch.randint(0, 11, (2, 10))
    changed = idx.clone()
    changed[:, 6] = (changed[:, 6] + 1) % 11
    before, _ = model(idx)
    after, _ = model(changed)
    assert torch.equal(before[:, :6], after[:, :6])
    assert not torch.allclose(before[:, 6:], after[:, 6:])


def test_blocks_use_multi_head_attention_with_the_package_mask():
    model = make_model()
    assert all(isinstance(b.self_attn, MultiHeadAttention) for b in model.blocks)
    block = model.blocks[0]
    x = torch.randn(2, 5, 16, dtype=F64)
    _, w = block(x, causal_mask(5), need_weights=True)
    _, expected = block.self_attn(
        block.norm1(x), block.norm1(x), block.norm1(x), causal_mask(5)
    )
    assert torch.equal(w, expected)


def test_weight_tying():
    tied, untied = make_model(), make_model(tie_weights=False)
    assert tied.lm_head.weight is tied.tok_emb.weight
    assert untied.lm_head.weight is not untied.tok_emb.weight
    n_tied = sum(p.numel() for p in tied.parameters())
    n_untied = sum(p.numel() for p in untied.parameters())
    assert n_untied - n_tied == 11 * 16


def test_sinusoidal_model_has_no_position_parameters():
    model = make_model(positions="sinusoidal")
    assert model.pos_emb is None
    assert "pos_table" not in model.state_dict()
    assert torch.equal(model.pos_table, sinusoidal_positions(12, 16, dtype=F64))


def test_every_parameter_gets_a_gradient():
    model = make_model(num_layers=1, embed_dim=8, num_heads=2, max_len=4).train()
    model(torch.tensor([[1, 2, 3, 4]]))[0].square().sum().backward()
    assert all(
        p.grad is not None and p.grad.abs().sum() > 0 for p in model.parameters()
    )


def test_gradcheck_block():
    torch.manual_seed(1)
    block = DecoderOnlyBlock(8, 2, 16, dtype=F64).eval()
    x = torch.randn(1, 4, 8, dtype=F64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: block(t, causal_mask(4))[0], (x,))


def test_generate_shapes_and_reproducibility():
    model = make_model().train()
    prompt = torch.zeros(2, 3, dtype=torch.long)
    a = model.generate(prompt, 20, generator=torch.Generator().manual_seed(5))
    b = model.generate(prompt, 20, generator=torch.Generator().manual_seed(5))
    assert a.shape == (2, 23) and torch.equal(a, b)
    assert torch.equal(a[:, :3], prompt)
    assert model.training  # mode restored
    assert int(a.max()) < 11


def test_generate_crops_the_context_to_max_len():
    model = make_model(max_len=4)
    out = model.generate(torch.zeros(1, 4, dtype=torch.long), 6)
    assert out.shape == (1, 10)


def test_errors_state_expected_and_actual():
    model = make_model()
    with pytest.raises(ValueError, match=r"at most max_len = 12.*\(1, 13\)"):
        model(torch.zeros(1, 13, dtype=torch.long))
    with pytest.raises(TypeError, match="integer token ids"):
        model(torch.zeros(1, 3))
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        model(torch.zeros(3, dtype=torch.long))
    with pytest.raises(ValueError, match="positions must be one of"):
        CausalDecoder(DecoderConfig(5, 8, 2, 1, 4, positions="rotary"))
    with pytest.raises(ValueError, match="temperature"):
        model.generate(torch.zeros(1, 1, dtype=torch.long), 2, temperature=0.0)
    with pytest.raises(ValueError, match="divisible"):
        CausalDecoder(DecoderConfig(5, 10, 3, 1, 4))
    with pytest.raises(ValueError, match=r"even head dim.*got 12 / 4"):
        CausalDecoder(DecoderConfig(5, 12, 4, 1, 4, positions="rope"))  # D = 3


@pytest.mark.parametrize("positions", ["rope", "alibi", "none"])
def test_schemes_inside_attention_add_nothing_to_the_embeddings(positions):
    model = make_model(positions=positions)
    assert model.pos_emb is None and model.pos_table is None
    assert not any("pos" in name for name in model.state_dict())
    rotary = [block.self_attn.rope for block in model.blocks]
    if positions == "rope":
        assert all(r is not None and r.head_dim == 4 for r in rotary)
    else:
        assert all(r is None for r in rotary)


def test_alibi_decoder_adds_the_papers_bias_in_every_block():
    model = make_model(positions="alibi")
    idx = torch.randint(0, 11, (2, 7))
    _, weights = model(idx, need_weights=True)
    block = model.blocks[0]
    h = block.norm1(model.tok_emb(idx))  # (B, T, E): the first block's input, normed
    bias = alibi_bias(4, 7, dtype=F64)[None]  # (1, H, T, T)
    _, expected = block.self_attn(h, h, h, causal_mask(7), bias=bias)
    assert torch.allclose(weights[0], expected, atol=1e-12)
    _, unbiased = block.self_attn(h, h, h, causal_mask(7))
    assert (weights[0] - unbiased).abs().max() > 1e-3


@pytest.mark.parametrize("positions", ["sinusoidal", "rope", "alibi", "none"])
def test_fixed_schemes_read_any_length_up_to_max_len(positions):
    model = make_model(positions=positions, max_len=40)
    logits, _ = model(torch.randint(0, 11, (1, 40)))
    assert logits.shape == (1, 40, 11) and torch.isfinite(logits).all()
