"""Tests for mha_book.models.layers: EncoderLayer and DecoderLayer."""

import pytest
import torch
from torch import nn

from mha_book.attention.masks import causal_mask, flip_mask_convention, padding_mask
from mha_book.attention.mha import MultiHeadAttention
from mha_book.models.layers import DecoderLayer, EncoderLayer

F64 = torch.float64


def randomise(module: nn.Module, seed: int = 0) -> nn.Module:
    """Give every parameter (biases and LayerNorm affine included) random values."""
    torch.manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0.0, 0.3)
    return module


@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_shapes(norm_first):
    layer = EncoderLayer(16, 4, 32, norm_first=norm_first, dtype=F64).eval()
    x = torch.randn(3, 7, 16, dtype=F64)
    y, w = layer(x)
    assert y.shape == (3, 7, 16)
    assert w.shape == (3, 4, 7, 7)
    assert torch.allclose(w.sum(-1), torch.ones(3, 4, 7, dtype=F64))


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_shapes_and_cross_weights(norm_first):
    layer = DecoderLayer(16, 4, 32, norm_first=norm_first, dtype=F64).eval()
    x = torch.randn(2, 5, 16, dtype=F64)  # T = 5
    memory = torch.randn(2, 9, 16, dtype=F64)  # S = 9
    y, self_w, cross_w = layer(x, memory)
    assert y.shape == (2, 5, 16)
    assert self_w.shape == (2, 4, 5, 5)
    assert cross_w.shape == (2, 4, 5, 9)  # (B, H, T, S) with T != S
    assert torch.allclose(cross_w.sum(-1), torch.ones(2, 4, 5, dtype=F64))


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_is_causal(norm_first):
    layer = randomise(DecoderLayer(16, 4, 32, norm_first=norm_first, dtype=F64)).eval()
    x = torch.randn(2, 6, 16, dtype=F64)
    memory = torch.randn(2, 4, 16, dtype=F64)
    y, self_w, _ = layer(x, memory)
    assert torch.all(self_w.masked_select(~causal_mask(6)) == 0)
    x2 = x.clone()
    x2[:, 4] += 10.0  # change token 4: positions 0..3 must not move
    y2, _, _ = layer(x2, memory)
    assert torch.equal(y[:, :4], y2[:, :4])
    assert not torch.allclose(y[:, 4:], y2[:, 4:])


def test_decoder_masks_combine_with_causal():
    layer = randomise(DecoderLayer(8, 2, 16, dtype=F64)).eval()
    x = torch.randn(2, 4, 8, dtype=F64)
    memory = torch.randn(2, 5, 8, dtype=F64)
    self_mask = padding_mask(torch.tensor([4, 2]), 4)  # (B, 1, 1, T)
    memory_mask = padding_mask(torch.tensor([5, 3]), 5)  # (B, 1, 1, S)
    _, self_w, cross_w = layer(x, memory, self_mask=self_mask, memory_mask=memory_mask)
    assert torch.all(self_w[1, :, :, 2:] == 0)  # padded target keys
    assert torch.all(self_w.masked_select(~causal_mask(4)) == 0)  # still causal
    assert torch.all(cross_w[1, :, :, 3:] == 0)  # padded source keys
    assert torch.all(cross_w[0] > 0)


def test_decoder_cross_attention_uses_memory_as_keys_and_values():
    layer = randomise(DecoderLayer(8, 2, 16, dtype=F64)).eval()
    x = torch.randn(1, 3, 8, dtype=F64)
    memory = torch.randn(1, 6, 8, dtype=F64)
    h = layer.norm1(x + layer.self_attn(x, x, x, causal_mask(3))[0])
    _, expected = layer.cross_attn(h, memory, memory)
    _, _, cross_w = layer(x, memory)
    assert torch.equal(cross_w, expected)


def test_attention_blocks_are_multi_head_attention():
    enc, dec = EncoderLayer(8, 2, 16), DecoderLayer(8, 2, 16)
    for m in (enc.self_attn, dec.self_attn, dec.cross_attn):
        assert isinstance(m, MultiHeadAttention)
    assert dec.cross_attn is not dec.self_attn


def copy_encoder_weights(theirs: nn.TransformerEncoderLayer) -> EncoderLayer:
    ours = EncoderLayer(
        theirs.linear1.in_features,
        theirs.self_attn.num_heads,
        theirs.linear1.out_features,
        norm_first=theirs.norm_first,
        dtype=F64,
    )
    ours.self_attn = MultiHeadAttention.from_torch(theirs.self_attn)
    for name in ("linear1", "linear2", "norm1", "norm2"):
        getattr(ours, name).load_state_dict(getattr(theirs, name).state_dict())
    return ours.eval()


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("use_mask", [False, True])
def test_encoder_matches_torch(norm_first, use_mask):
    torch.manual_seed(1)
    theirs = nn.TransformerEncoderLayer(
        16,
        4,
        32,
        dropout=0.0,
        activation="relu",
        batch_first=True,
        norm_first=norm_first,
        dtype=F64,
    )
    theirs = randomise(theirs, seed=2).eval()
    ours = copy_encoder_weights(theirs)
    x = torch.randn(3, 7, 16, dtype=F64)
    mask = causal_mask(7) if use_mask else None
    their_mask = (
        flip_mask_convention(mask) if use_mask else None
    )  # torch: True = blocked
    out, _ = ours(x, mask)
    expected = theirs(x, src_mask=their_mask)
    assert (out - expected).abs().max() < 1e-10
    with torch.no_grad():  # torch may take its fused fast path here
        out, _ = ours(x, mask)
        expected = theirs(x, src_mask=their_mask)
    assert (out - expected).abs().max() < 1e-10


def test_parameter_count():
    E, F = 24, 40
    enc = EncoderLayer(E, 4, F)
    dec = DecoderLayer(E, 4, F)
    attn = 4 * E * E + 4 * E
    ff = 2 * E * F + F + E
    assert sum(p.numel() for p in enc.parameters()) == attn + ff + 2 * 2 * E
    assert sum(p.numel() for p in dec.parameters()) == 2 * attn + ff + 3 * 2 * E
    theirs = nn.TransformerEncoderLayer(E, 4, F)
    assert sum(p.numel() for p in enc.parameters()) == sum(
        p.numel() for p in theirs.parameters()
    )


def test_dropout_only_in_training():
    layer = EncoderLayer(8, 2, 16, dropout=0.5)
    x = torch.randn(2, 4, 8)
    layer.eval()
    assert torch.equal(layer(x)[0], layer(x)[0])
    layer.train()
    torch.manual_seed(0)
    a = layer(x)[0]
    torch.manual_seed(1)
    assert not torch.equal(a, layer(x)[0])


@pytest.mark.parametrize("cls", [EncoderLayer, DecoderLayer])
def test_bad_arguments(cls):
    with pytest.raises(ValueError, match="embed_dim must be divisible by num_heads"):
        cls(10, 3, 16)
    with pytest.raises(ValueError, match="ff_dim must be a positive int, got 0"):
        cls(8, 2, 0)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\), got 1.5"):
        cls(8, 2, 16, dropout=1.5)
    with pytest.raises(TypeError, match="norm_first must be a bool"):
        cls(8, 2, 16, norm_first="yes")


def test_bad_inputs():
    enc, dec = EncoderLayer(8, 2, 16), DecoderLayer(8, 2, 16)
    with pytest.raises(
        ValueError,
        match=r"x must have shape \(B, T, E\) = \(B, T, 8\), got \(2, 4, 6\)",
    ):
        enc(torch.randn(2, 4, 6))
    with pytest.raises(
        ValueError, match=r"x must have shape .*\(3 dims\), got shape \(4, 8\)"
    ):
        enc(torch.randn(4, 8))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        enc([[0.0] * 8])
    with pytest.raises(TypeError, match="x must have the dtype"):
        enc(torch.randn(2, 4, 8, dtype=F64))
    x = torch.randn(2, 4, 8)
    with pytest.raises(
        ValueError,
        match=r"memory must have shape \(B, S, E\) = \(B, S, 8\), got \(2, 5, 4\)",
    ):
        dec(x, torch.randn(2, 5, 4))
    with pytest.raises(
        ValueError,
        match=r"memory must have the batch size B of x \(2\), got .*\(3, 5, 8\)",
    ):
        dec(x, torch.randn(3, 5, 8))
    with pytest.raises(
        ValueError, match=r"self_mask of shape \(3, 3\) does not broadcast"
    ):
        dec(x, torch.randn(2, 5, 8), self_mask=torch.ones(3, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="self_mask must have dtype torch.bool"):
        dec(x, torch.randn(2, 5, 8), self_mask=torch.ones(4, 4))
    with pytest.raises(ValueError, match=r"mask of shape \(4, 4\) does not broadcast"):
        dec(x, torch.randn(2, 5, 8), memory_mask=torch.ones(4, 4, dtype=torch.bool))
