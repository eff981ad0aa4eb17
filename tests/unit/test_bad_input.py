"""Bad input gets a ValueError/TypeError that names the argument; nothing is silently NaN."""

import math

import numpy
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mha_book import (
    MultiHeadAttention,
    causal_mask,
    padding_mask,
    scaled_dot_product_attention,
)
from mha_book.attention.flash import flash_attention
from mha_book.attention.heads import merge_heads, repeat_kv, split_heads
from mha_book.attention.scaled_dot_product import fused_attention
from mha_book.lm.charlm import CharTokenizer, evaluate
from mha_book.models.decoder import CausalDecoder, DecoderConfig

KERNELS = {
    "explicit": scaled_dot_product_attention,
    "fused": fused_attention,
    "flash": lambda q, k, v, mask=None, scale=None, dropout_p=0.0: flash_attention(
        q, k, v, mask, scale=scale
    ),
}
ARGUMENTS = (
    "q",
    "k",
    "v",
    "mask",
    "scale",
    "dropout_p",
    "T",
    "S",
    "lengths",
    "max_len",
)


def tensor(shape, dtype):
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype == torch.int64:
        return torch.randint(-3, 3, shape)
    return torch.randn(shape, dtype=dtype)


dims = st.integers(0, 3)


@st.composite
def kernel_inputs(draw):
    """Mostly well-formed q, k, v (so the kernels really run), sometimes one bent."""
    B, H, T, S, D, Dv = (draw(dims) for _ in range(6))
    shapes = {"q": (B, H, T, D), "k": (B, H, S, D), "v": (B, H, S, Dv)}
    if draw(st.booleans()):
        shapes[draw(st.sampled_from(sorted(shapes)))] = draw(
            st.lists(dims, max_size=5).map(tuple)
        )
    dtype = draw(
        st.sampled_from([torch.float64] * 3 + [torch.float32, torch.int64, torch.bool])
    )
    mask = draw(st.sampled_from(["none", "causal", "random-shape", "float"]))
    mask_shape = {
        "none": None,
        "causal": (T, S),
        "random-shape": draw(st.lists(dims, max_size=4).map(tuple)),
        "float": (T, S),
    }[mask]
    scale = draw(
        st.one_of(
            st.sampled_from([None, 0.5, math.nan, math.inf, -math.inf]),
            # Finite scales up to 1e4: a larger one can overflow float32 scores to
            # inf (as in torch's own kernels); that limit is not tested here.
            st.floats(-1e4, 1e4),
        )
    )
    dropout_p = draw(st.sampled_from([0.0, 0.0, 0.5, -0.1, 1.5, math.nan]))
    return shapes, dtype, mask, mask_shape, scale, dropout_p


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(kernel=st.sampled_from(sorted(KERNELS)), inputs=kernel_inputs())
def test_kernels_either_work_without_nan_or_name_the_bad_argument(kernel, inputs):
    shapes, dtype, mask, mask_shape, scale, dropout_p = inputs
    q, k, v = (tensor(shapes[n], dtype) for n in ("q", "k", "v"))
    m = None
    if mask_shape is not None:
        m = tensor(mask_shape, torch.float32 if mask == "float" else torch.bool)
        if mask == "causal" and len(mask_shape) == 2:
            m = causal_mask(*mask_shape) if mask_shape[0] <= mask_shape[1] else m
    try:
        out = KERNELS[kernel](q, k, v, m, scale=scale, dropout_p=dropout_p)
    except (ValueError, TypeError) as err:
        assert any(name in str(err) for name in ARGUMENTS), (
            f"{type(err).__name__}: {err}"
        )
        return
    out = out[0] if isinstance(out, tuple) else out
    assert not torch.isnan(out).any(), "finite inputs gave NaN"


@settings(max_examples=100, deadline=None)
@given(
    T=st.one_of(
        st.integers(-2, 5), st.floats(), st.booleans(), st.just(numpy.int64(3))
    ),
    S=st.one_of(st.none(), st.integers(-2, 5)),
)
def test_causal_mask_takes_any_integer_and_names_a_bad_one(T, S):
    try:
        mask = causal_mask(T, S)
    except (ValueError, TypeError) as err:
        assert "T must" in str(err) or "S must" in str(err), err
        return
    assert mask.dtype == torch.bool and mask.shape == (
        int(T),
        int(T if S is None else S),
    )


def test_the_traps_found_by_review_give_clear_errors():
    with pytest.raises(ValueError, match="lengths must hold one length per sequence"):
        padding_mask([], 5)
    assert causal_mask(numpy.int64(3)).shape == (3, 3)
    q = torch.randn(1, 1, 2, 4)
    for bad in (math.nan, math.inf):
        with pytest.raises(ValueError, match="scale must be a finite number"):
            scaled_dot_product_attention(q, q, q, scale=bad)
    tok = CharTokenizer("ab")
    with pytest.raises(ValueError, match=r"ids must lie in \[0, vocab_size\)"):
        tok.decode([-1])
    model = CausalDecoder(
        DecoderConfig(vocab_size=2, embed_dim=8, num_heads=2, num_layers=1, max_len=8)
    )
    with pytest.raises(
        ValueError, match=r"idx must hold token ids in \[0, vocab_size\)"
    ):
        model(torch.tensor([[0, 2]]))
    with pytest.raises(ValueError, match="block_size must be a positive int"):
        evaluate(model, torch.tensor([0, 1, 0, 1]), block_size=0)


def test_a_tiny_temperature_is_greedy_not_an_error():
    torch.manual_seed(0)
    model = CausalDecoder(
        DecoderConfig(vocab_size=5, embed_dim=8, num_heads=2, num_layers=1, max_len=16)
    )
    start = torch.tensor([[1, 2]])
    tiny = model.generate(start, 6, temperature=1e-40)
    greedy = start
    for _ in range(6):
        logits, _ = model.eval()(greedy)
        greedy = torch.cat([greedy, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(tiny, greedy)
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="temperature must be a finite positive"):
            model.generate(start, 1, temperature=bad)


any_value = st.one_of(
    st.integers(-3, 6),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.text(max_size=2),
    st.lists(st.integers(-2, 6), max_size=4),
    st.just(numpy.int64(2)),
)


@st.composite
def some_tensor(draw):
    shape = draw(st.lists(dims, max_size=5).map(tuple))
    dtype = draw(
        st.sampled_from([torch.float64, torch.float32, torch.int64, torch.bool])
    )
    return tensor(shape, dtype)


PUBLIC = {
    "split_heads": (lambda x, n: split_heads(x, n), ("x", "num_heads")),
    "merge_heads": (lambda x, n: merge_heads(x), ("x",)),
    "repeat_kv": (lambda x, n: repeat_kv(x, n), ("x", "n_rep")),
    "padding_mask": (lambda x, n: padding_mask(x, n), ("lengths", "max_len")),
}


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    name=st.sampled_from(sorted(PUBLIC)),
    x=st.one_of(some_tensor(), any_value),
    n=any_value,
)
def test_helpers_either_work_or_name_the_bad_argument(name, x, n):
    call, arguments = PUBLIC[name]
    try:
        out = call(x, n)
    except (ValueError, TypeError) as err:
        assert any(a in str(err) for a in arguments), f"{type(err).__name__}: {err}"
        return
    if out.is_floating_point():
        assert not torch.isnan(out).any()


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    B=dims,
    T=dims,
    S=dims,
    mask=st.sampled_from(
        ["none", "causal", "padding", "wrong-rank", "rank-3", "float"]
    ),
    key_mask=st.sampled_from(["none", "real", "4-D", "one-key-short", "float"]),
    need_weights=st.sampled_from([True, False, None, 1]),
    bend=st.sampled_from(["none", "query-width", "key-dtype", "value-length"]),
)
def test_the_module_either_works_or_names_the_bad_argument(
    B, T, S, mask, key_mask, need_weights, bend
):
    E, H = 8, 2
    mha = MultiHeadAttention(E, H).eval()
    query, key, value = torch.randn(B, T, E), torch.randn(B, S, E), torch.randn(B, S, E)
    if bend == "query-width":
        query = torch.randn(B, T, E + 1)
    elif bend == "key-dtype":
        key = key.double()
    elif bend == "value-length":
        value = torch.randn(B, S + 1, E)
    m = {
        "none": None,
        "causal": causal_mask(T, S),
        "padding": padding_mask([S] * B, S) if B else None,
        "wrong-rank": torch.ones(T, dtype=torch.bool),
        "rank-3": torch.ones(B, T, S, dtype=torch.bool),
        "float": torch.ones(T, S),
    }[mask]
    km = {
        "none": None,
        "real": torch.rand(B, S) < 0.7,
        "4-D": torch.ones(B, 1, 1, S, dtype=torch.bool),
        "one-key-short": torch.ones(B, max(S - 1, 0), dtype=torch.bool),
        "float": torch.ones(B, S),
    }[key_mask]
    names = ("query", "key", "value", "mask", "key_mask", "need_weights")
    try:
        out, _ = mha(query, key, value, m, need_weights=need_weights, key_mask=km)
    except (ValueError, TypeError) as err:
        assert any(a in str(err) for a in names), f"{type(err).__name__}: {err}"
        return
    assert not torch.isnan(out).any()
