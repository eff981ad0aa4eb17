"""Results compared with an independent computation: block sparsity counted by
brute force, digests of objects that differ, the serving simulation's bound."""

import itertools
import threading

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_book.attention import flex
from mha_book.lm import artifacts
from mha_book.lm.keying import digest
from mha_book.serving.simulation import simulate_serving


def brute_force_sparsity(mask_mod, T, S, P):
    """Blocks of P x P (the last ones cut short) none of whose cells attends."""
    masked = total = 0
    for i, j in itertools.product(range(0, T, P), range(0, S, P)):
        total += 1
        cells = [
            bool(mask_mod(0, 0, torch.tensor(q), torch.tensor(k)))
            for q in range(i, min(i + P, T))
            for k in range(j, min(j + P, S))
        ]
        masked += not any(cells)
    return masked / total


@pytest.mark.parametrize(
    ("T", "S", "P"), [(1, 1, 128), (100, 100, 128), (10, 10, 3), (7, 13, 4), (9, 4, 2)]
)
@pytest.mark.parametrize("name", ["causal", "window"])
def test_block_sparsity_matches_a_brute_force_count(name, T, S, P):
    mask_mod = flex.causal if name == "causal" else flex.sliding_window(3)
    got = flex.block_sparsity(mask_mod, T, S, block_size=P)
    assert got == pytest.approx(brute_force_sparsity(mask_mod, T, S, P))
    assert 0.0 <= got <= 1.0


def test_block_sparsity_of_a_window_with_a_short_last_block():
    # 1000 x 1000 in blocks of 128: 8 x 8 blocks, the last 104 wide
    got = flex.block_sparsity(flex.sliding_window(64), 1000, 1000, block_size=128)
    mask = flex.dense_mask(flex.sliding_window(64), 1000, 1000)
    edges = list(range(0, 1000, 128)) + [1000]
    masked = sum(
        not mask[a:b, c:d].any()
        for a, b in zip(edges, edges[1:])
        for c, d in zip(edges, edges[1:])
    )
    assert got == masked / 64 == pytest.approx(0.765625)


def test_digests_of_objects_that_differ_differ():
    assert digest({1: "x"}) != digest({"1": "x"})
    assert digest(1) != digest(1.0) != digest("1")
    assert digest(True) != digest(1)
    assert digest([1, 2]) != digest([[1, 2]])
    assert digest({"a": 1, "b": 2}) == digest({"b": 2, "a": 1})
    assert digest(torch.float32) != digest(torch.float64)


def test_what_has_no_faithful_key_is_refused():
    torch.manual_seed(0)
    a, b = torch.nn.Linear(3, 3), torch.nn.Linear(3, 3)
    with pytest.raises(TypeError, match="cannot key a Linear.*state_dict"):
        digest(a)
    assert digest(a.state_dict()) != digest(b.state_dict())
    with pytest.raises(TypeError, match="cannot key a object"):
        digest({"model": object()})
    with pytest.raises(TypeError, match="meta tensor"):
        digest(torch.empty(2, device="meta"))


def test_cached_refuses_code_it_cannot_key(tmp_path, monkeypatch):
    args = dict(save=lambda v, p: torch.save(v, p), load=torch.load)
    for env in (None, str(tmp_path)):
        if env:
            monkeypatch.setenv(artifacts.ARTIFACTS_ENV, env)
        with pytest.raises(ValueError, match="no such module"):
            artifacts.cached(
                "x", 1, lambda: 1, code=["mha_book.no_such_module"], **args
            )
        with pytest.raises(TypeError, match="code must be a non-empty list"):
            artifacts.cached("x", 1, lambda: 1, code="mha_book.lm.training", **args)
        with pytest.raises(TypeError, match="cannot key a Linear"):
            artifacts.cached("x", torch.nn.Linear(2, 2), lambda: 1, **args)


def run_with_timeout(fn, seconds=20):
    out = {}
    thread = threading.Thread(target=lambda: out.update(r=fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"did not return within {seconds} s"
    return out["r"]


@pytest.mark.parametrize(
    ("requests", "capacity", "max_len"), [([(4, 3)], 16, 16), ([(50, 5)], 64, 64)]
)
def test_a_request_the_watermark_would_keep_out_starts_when_none_runs(
    requests, capacity, max_len
):
    run = run_with_timeout(
        lambda: simulate_serving(
            requests,
            capacity=capacity,
            max_len=max_len,
            reservation="paged",
            block_size=16,
        )
    )
    assert run.steps == requests[0][1] and run.mean_running == 1.0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 40), st.integers(1, 24)), min_size=1, max_size=12
    ),
    st.sampled_from([4, 8, 16]),
    st.integers(4, 12),
)
def test_every_simulation_ends_within_its_bound(pairs, P, blocks):
    max_len = 64
    requests = [(a, min(b, max_len - a)) for a, b in pairs]
    capacity = max(blocks * P, -(-max_len // P) * P)
    for reservation in ("paged", "max", "oracle"):
        run = run_with_timeout(
            lambda reservation=reservation: simulate_serving(
                requests,
                capacity=capacity,
                max_len=max_len,
                reservation=reservation,
                block_size=P,
            )
        )
        # the oldest running request adds a token every step
        assert max(o for _, o in requests) <= run.steps <= sum(o for _, o in requests)
