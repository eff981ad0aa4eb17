"""Tests for mha_book.attention.mha.MultiHeadAttention (its own behaviour; torch equivalence is separate)."""

import math

import pytest
import torch

from mha_book.attention.masks import causal_mask, padding_mask
from mha_book.attention.mha import MultiHeadAttention

F64 = torch.float64


def make(
    E=12,
    H=3,
    T=4,
    S=6,
    kdim=None,
    vdim=None,
    batch_first=True,
    bias=True,
    dropout=0.0,
    seed=0,
):
    torch.manual_seed(seed)
    m = MultiHeadAttention(
        E,
        H,
        kdim=kdim,
        vdim=vdim,
        batch_first=batch_first,
        bias=bias,
        dropout=dropout,
        dtype=F64,
    )
    if bias:  # non-zero biases so that they are exercised
        with torch.no_grad():
            for p in (m.q_proj, m.k_proj, m.v_proj, m.out_proj):
                p.bias.normal_()
    B = 2
    lead = (lambda L: (B, L)) if batch_first else (lambda L: (L, B))
    q = torch.randn(*lead(T), E, dtype=F64)
    k = torch.randn(*lead(S), kdim or E, dtype=F64)
    v = torch.randn(*lead(S), vdim or E, dtype=F64)
    return m.eval(), q, k, v


def test_attributes_and_parameters():
    m = MultiHeadAttention(16, 4, kdim=6, vdim=10, dropout=0.1, batch_first=False)
    assert (
        m.embed_dim,
        m.num_heads,
        m.head_dim,
        m.kdim,
        m.vdim,
        m.dropout,
        m.batch_first,
    ) == (16, 4, 4, 6, 10, 0.1, False)
    shapes = {k: tuple(v.shape) for k, v in m.state_dict().items()}
    assert shapes == {
        "q_proj.weight": (16, 16),
        "q_proj.bias": (16,),
        "k_proj.weight": (16, 6),
        "k_proj.bias": (16,),
        "v_proj.weight": (16, 10),
        "v_proj.bias": (16,),
        "out_proj.weight": (16, 16),
        "out_proj.bias": (16,),
    }
    assert set(MultiHeadAttention(16, 4, bias=False).state_dict()) == {
        "q_proj.weight",
        "k_proj.weight",
        "v_proj.weight",
        "out_proj.weight",
    }


def test_initialisation():
    m = MultiHeadAttention(64, 4, kdim=32)
    for p in (m.q_proj, m.k_proj, m.v_proj, m.out_proj):
        assert torch.all(p.bias == 0)
    assert m.q_proj.weight.abs().max() <= math.sqrt(6 / (64 + 64))
    assert m.k_proj.weight.abs().max() <= math.sqrt(6 / (64 + 32))
    assert MultiHeadAttention(8, 2, dtype=F64).q_proj.weight.dtype == F64


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("need_weights", [True, False])
def test_shapes(batch_first, need_weights):
    m, q, k, v = make(kdim=5, vdim=7, batch_first=batch_first)
    out, w = m(q, k, v, need_weights=need_weights)
    assert out.shape == ((2, 4, 12) if batch_first else (4, 2, 12))
    assert (w is None) if not need_weights else (w.shape == (2, 3, 4, 6))


def test_batch_first_false_equals_batch_first_true():
    m, q, k, v = make(kdim=5, vdim=7)
    m2 = MultiHeadAttention(12, 3, kdim=5, vdim=7, batch_first=False, dtype=F64)
    m2.load_state_dict(m.state_dict())
    mask = padding_mask(torch.tensor([6, 3]), 6) & causal_mask(4, 6)
    out, w = m(q, k, v, mask)
    out2, w2 = m2(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1), mask)
    assert torch.equal(out, out2.transpose(0, 1)) and torch.equal(w, w2)


@pytest.mark.parametrize("mask_kind", ["none", "padding", "causal", "per_head"])
def test_fast_path_equals_explicit_path(mask_kind):
    m, q, k, v = make()
    mask = {
        "none": None,
        "padding": padding_mask(torch.tensor([6, 2]), 6),
        "causal": causal_mask(4, 6),
        "per_head": torch.rand(2, 3, 4, 6) < 0.5,
    }[mask_kind]
    explicit, _ = m(q, k, v, mask, need_weights=True)
    fast, _ = m(q, k, v, mask, need_weights=False)
    assert (explicit - fast).abs().max() < 1e-12


def test_eval_weights_sum_to_one_over_allowed_keys():
    m, q, k, v = make()
    mask = padding_mask(torch.tensor([6, 0]), 6)  # second sequence: no key at all
    _, w = m(q, k, v, mask)
    assert torch.allclose(w[0].sum(-1), torch.ones(3, 4, dtype=F64), atol=1e-12)
    assert torch.all(w[1] == 0)


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_fully_masked_rows_no_nan_values_or_gradients(need_weights, bias):
    m, q, k, v = make(bias=bias)
    m.train()
    q.requires_grad_(), k.requires_grad_(), v.requires_grad_()
    mask = causal_mask(4, 2)  # S < T: the first two queries have no key
    k2, v2 = k[:, :2], v[:, :2]
    out, w = m(q, k2, v2, mask, need_weights=need_weights)
    # the context of an empty row is 0, so its output is out_proj's bias (or 0)
    expected = m.out_proj.bias.detach() if bias else torch.zeros(12, dtype=F64)
    assert torch.equal(out[:, :2].detach(), expected.expand(2, 2, 12))
    assert torch.isfinite(out).all()
    loss = out.square().sum() + (0 if w is None else w.sum())
    loss.backward()
    for t in [q, k, v, *m.parameters()]:
        assert torch.isfinite(t.grad).all()
    assert torch.all(q.grad[:, :2] == 0)


@pytest.mark.parametrize("need_weights", [True, False])
def test_gradcheck_module(need_weights):
    m, q, k, v = make(E=4, H=2, T=2, S=3)
    mask = causal_mask(2, 3)
    q.requires_grad_(), k.requires_grad_(), v.requires_grad_()
    fn = lambda q, k, v: m(q, k, v, mask, need_weights=need_weights)[0]  # noqa: E731
    assert torch.autograd.gradcheck(fn, (q, k, v))


@pytest.mark.parametrize("need_weights", [True, False])
def test_dropout_only_in_training(need_weights):
    m, q, k, v = make(T=16, S=16, dropout=0.5)
    ref = make(T=16, S=16)[0]
    ref.load_state_dict(m.state_dict())
    out_eval = m(q, k, v, need_weights=need_weights)[0]
    assert torch.equal(out_eval, m(q, k, v, need_weights=need_weights)[0])
    assert torch.equal(out_eval, ref(q, k, v, need_weights=need_weights)[0])
    m.train()
    torch.manual_seed(0)
    a = m(q, k, v, need_weights=need_weights)
    b = m(q, k, v, need_weights=need_weights)
    assert not torch.allclose(a[0], b[0])
    if need_weights:
        assert (a[1] == 0).any() and not torch.allclose(
            a[1].sum(-1), torch.ones(2, 3, 16, dtype=F64)
        )


def test_training_without_dropout_equals_eval():
    m, q, k, v = make()
    out_eval = m(q, k, v)[0]
    assert torch.equal(out_eval, m.train()(q, k, v)[0])


def test_weights_are_not_stored_on_the_module():
    m, q, k, v = make()
    before = set(vars(m))
    m(q, k, v)
    assert set(vars(m)) == before


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (
            {"embed_dim": 10, "num_heads": 3},
            ValueError,
            r"embed_dim must be divisible by num_heads, got embed_dim = 10 and num_heads = 3",
        ),
        (
            {"embed_dim": 0, "num_heads": 1},
            ValueError,
            r"embed_dim must be a positive int, got 0",
        ),
        (
            {"embed_dim": 8, "num_heads": 2.0},
            TypeError,
            r"num_heads must be a positive int, got float",
        ),
        (
            {"embed_dim": 8, "num_heads": 2, "kdim": -1},
            ValueError,
            r"kdim must be a positive int",
        ),
        (
            {"embed_dim": 8, "num_heads": 2, "dropout": 1.5},
            ValueError,
            r"dropout must be in \[0, 1\), got 1.5",
        ),
    ],
)
def test_constructor_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        MultiHeadAttention(**kwargs)


def test_forward_errors():
    m, q, k, v = make(kdim=5, vdim=7)
    cases = [
        (
            (q[0], k, v),
            {},
            ValueError,
            r"query must have shape \(B, T, 12\) \(3 dims\), got shape \(4, 12\)",
        ),
        (
            (q[..., :8], k, v),
            {},
            ValueError,
            r"query must have shape \(B, T, 12\), got \(2, 4, 8\)",
        ),
        (
            (q, v, v),
            {},
            ValueError,
            r"key must have shape \(B, S, 5\), got \(2, 6, 7\)",
        ),
        (
            (q, k[:1], v),
            {},
            ValueError,
            r"key must have shape \(B, S, F\) = \(2, 6, 5\) \(B from query, S from key\), got \(1, 6, 5\)",
        ),
        (
            (q, k, v[:, :5]),
            {},
            ValueError,
            r"value must have shape \(B, S, F\) = \(2, 6, 7\)",
        ),
        (
            (q.float(), k, v),
            {},
            TypeError,
            r"query must have the dtype of the module's parameters \(torch.float64\), got torch.float32",
        ),
        ((q, k.float(), v), {}, TypeError, r"key must have the dtype of query"),
        (("q", k, v), {}, TypeError, r"query must be a torch.Tensor, got str"),
        (
            (q, k, v),
            {"mask": torch.ones(4, 6)},
            TypeError,
            r"mask must have dtype torch.bool",
        ),
        (
            (q, k, v),
            {"mask": torch.ones(2, 5, dtype=torch.bool)},
            ValueError,
            r"mask of shape \(2, 5\) does not broadcast to \(B, H, T, S\) = \(2, 3, 4, 6\)",
        ),
        (
            (q, k, v),
            {"need_weights": 1},
            TypeError,
            r"need_weights must be a bool, got int",
        ),
    ]
    for args, kwargs, exc, match in cases:
        for need_weights in (True, False):
            kw = {"need_weights": need_weights, **kwargs}
            with pytest.raises(exc, match=match):
                m(*args, **kw)


def test_forward_errors_seq_first_name_the_layout():
    m, q, k, v = make(batch_first=False)
    with pytest.raises(
        ValueError,
        match=r"value must have shape \(S, B, F\) = \(6, 2, 12\) "
        r"\(B from query, S from key\), got \(6, 1, 12\)",
    ):
        m(q, k, v[:, :1])
    with pytest.raises(ValueError, match=r"query must have shape \(T, B, 12\)"):
        m(q[0], k, v)


def test_repr_mentions_sizes():
    assert "embed_dim=8, num_heads=2" in repr(MultiHeadAttention(8, 2))
