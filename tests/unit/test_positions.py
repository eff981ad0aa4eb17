"""Why attention needs positions (the permutation test), and learned positions."""

import pytest
import torch

from mha_book.attention.masks import causal_mask
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.positions import LearnedPositions

F64 = torch.float64


def make(dtype, seed=0, **kwargs):
    torch.manual_seed(seed)
    return MultiHeadAttention(16, 4, dtype=dtype, **kwargs).eval()


# --- the permutation test ---


@pytest.mark.parametrize("dtype, tol", [(torch.float32, 1e-6), (F64, 1e-12)])
def test_attention_without_positions_is_permutation_equivariant(dtype, tol):
    """Shuffling the tokens shuffles the outputs the same way: order is invisible."""
    mha = make(dtype)
    x = torch.randn(2, 7, 16, dtype=dtype)  # (B, T, E)
    perm = torch.randperm(7)
    out, w = mha(x, x, x)  # (B, T, E), (B, H, T, T)
    out_perm, w_perm = mha(x[:, perm], x[:, perm], x[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm], atol=tol, rtol=0)
    torch.testing.assert_close(w_perm, w[:, :, perm][..., perm], atol=tol, rtol=0)


def test_a_causal_mask_breaks_permutation_equivariance():
    """The causal mask knows the order: the same shuffle now changes the outputs."""
    mha = make(F64)
    x = torch.randn(2, 7, 16, dtype=F64)
    perm = torch.tensor([6, 5, 4, 3, 2, 1, 0])  # reversed: every token moves
    mask = causal_mask(7)
    out = mha(x, x, x, mask)[0]
    out_perm = mha(x[:, perm], x[:, perm], x[:, perm], mask)[0]
    assert (out_perm - out[:, perm]).abs().max() > 1e-3


def test_a_permutation_of_the_keys_alone_changes_nothing():
    """Each query sees the keys as a set: reordering keys and values together is free."""
    mha = make(F64)
    q, kv = torch.randn(2, 4, 16, dtype=F64), torch.randn(2, 6, 16, dtype=F64)
    perm = torch.randperm(6)
    out = mha(q, kv, kv)[0]
    out_perm = mha(q, kv[:, perm], kv[:, perm])[0]
    torch.testing.assert_close(out_perm, out, atol=1e-12, rtol=0)


# --- learned positions ---


def test_learned_positions_add_their_rows():
    pos = LearnedPositions(10, 8, dtype=F64)
    x = torch.randn(3, 4, 8, dtype=F64)
    torch.testing.assert_close(pos(x), x + pos.weight[:4], atol=0, rtol=0)
    torch.testing.assert_close(pos(x, offset=6), x + pos.weight[6:], atol=0, rtol=0)
    assert pos.weight.shape == (10, 8) and pos.weight.requires_grad
    assert list(pos.state_dict()) == ["weight"]


def test_learned_positions_offset_matches_the_full_pass():
    """Cached decoding: token t alone at offset t gets the row it gets in a full pass."""
    pos = LearnedPositions(6, 4)
    x = torch.randn(2, 6, 4)
    full = pos(x)
    steps = torch.cat([pos(x[:, t : t + 1], offset=t) for t in range(6)], dim=1)
    torch.testing.assert_close(steps, full, atol=0, rtol=0)


def test_learned_positions_get_gradients():
    pos = LearnedPositions(5, 4)
    pos(torch.randn(2, 3, 4)).sum().backward()
    assert pos.weight.grad[:3].eq(2).all() and pos.weight.grad[3:].eq(0).all()


@pytest.mark.parametrize(
    "T, offset, match",
    [
        (6, 0, r"x has T = 6 tokens at offset = 0, past max_len = 5: learned"),
        (2, 4, r"x has T = 2 tokens at offset = 4, past max_len = 5: .*extrapolate"),
    ],
)
def test_learned_positions_cannot_extrapolate(T, offset, match):
    pos = LearnedPositions(5, 4)
    with pytest.raises(ValueError, match=match):
        pos(torch.zeros(1, T, 4), offset=offset)


@pytest.mark.parametrize(
    "args, kwargs, exc, match",
    [
        ((0, 4), {}, ValueError, r"max_len must be a positive int, got 0"),
        ((5, 4.0), {}, TypeError, r"embed_dim must be a positive int, got float"),
    ],
)
def test_learned_positions_constructor_errors(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        LearnedPositions(*args, **kwargs)


@pytest.mark.parametrize(
    "x, offset, exc, match",
    [
        (torch.zeros(2, 3, 5), 0, ValueError, r"x must have shape \(B, T, 4\), got"),
        (torch.zeros(3, 4), 0, ValueError, r"x must have shape \(B, T, 4\) \(3 dims\)"),
        (torch.zeros(2, 3, 4, dtype=F64), 0, TypeError, r"x must have the dtype of"),
        (torch.zeros(2, 3, 4), -1, ValueError, r"offset must be a non-negative int"),
        (torch.zeros(2, 3, 4), 1.0, TypeError, r"offset must be a non-negative int"),
        ("x", 0, TypeError, r"x must be a torch.Tensor, got str"),
    ],
)
def test_learned_positions_forward_errors(x, offset, exc, match):
    with pytest.raises(exc, match=match):
        LearnedPositions(5, 4)(x, offset=offset)
