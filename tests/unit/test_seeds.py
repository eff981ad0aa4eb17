"""mha_book.seeds: a measurement over several seeds."""

import math

import pytest
import torch

from mha_book.seeds import Spread, over_seeds


def test_each_seed_draws_what_manual_seed_draws():
    spread = over_seeds(lambda seed: torch.rand(()).item(), [3, 7])
    expected = []
    for seed in (3, 7):
        torch.manual_seed(seed)
        expected.append(torch.rand(()).item())
    assert spread.values == tuple(expected)
    assert spread.seeds == (3, 7)


def test_the_callers_random_state_is_kept():
    torch.manual_seed(11)
    first = torch.rand(3)
    torch.manual_seed(11)
    over_seeds(lambda seed: torch.rand(5).sum().item(), 3)
    assert torch.equal(torch.rand(3), first)


def test_several_numbers_from_one_draw():
    spreads = over_seeds(lambda seed: {"x": seed, "y": -seed}, 3)
    assert spreads["x"].values == (0.0, 1.0, 2.0)
    assert (spreads["y"].lo, spreads["y"].hi, spreads["y"].median) == (-2.0, 0.0, -1.0)


def test_range_text():
    assert Spread((0, 1), (0.1234, 0.5)).range_text() == "0.12–0.50"
    assert Spread((0, 1), (0.501, 0.499)).range_text() == "0.50"
    assert Spread((0, 1, 2), (77, 482, 100)).range_text("{:,.0f}") == "77–482"


@pytest.mark.parametrize(
    ("measure", "seeds", "message"),
    [
        (lambda seed: 1.0, [], "seeds: expected at least one seed"),
        (lambda seed: math.nan, 2, "gave nan for seed 0"),
        (lambda seed: {"a": math.inf}, 1, r"measure\['a'\]: gave inf"),
        (lambda seed: {"a": 1} if seed else {"b": 1}, 2, "expected the same keys"),
    ],
)
def test_bad_measurements_are_named(measure, seeds, message):
    with pytest.raises(ValueError, match=message):
        over_seeds(measure, seeds)


@pytest.mark.parametrize(
    ("measure", "seeds", "error", "message"),
    [
        ("not callable", 2, TypeError, "measure: expected a function of the seed"),
        (lambda seed: 1.0, 2.5, TypeError, "seeds: expected a number of seeds"),
        (lambda seed: 1.0, True, TypeError, "seeds: expected a number of seeds"),
        (lambda seed: 1.0, "3", TypeError, "seeds: expected a number of seeds"),
        (lambda seed: 1.0, -1, ValueError, "seeds: expected at least one seed"),
        (lambda seed: 1.0, [0, "1"], TypeError, "seeds: expected int seeds, got '1'"),
        (lambda seed: "x", 1, TypeError, "measure: expected a number for seed 0"),
    ],
)
def test_bad_arguments_are_named(measure, seeds, error, message):
    with pytest.raises(error, match=message):
        over_seeds(measure, seeds)
