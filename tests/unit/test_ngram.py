"""The interpolated bigram baseline (mha_book.lm.ngram, chapters 10 and 15)."""

import math

import pytest
import torch

from mha_book.lm.ngram import InterpolatedBigram, tuned_bigram

IDS = torch.tensor([0, 1, 2, 0, 1, 1, 0])  # pairs 01 12 20 01 11 10


def test_probabilities_mix_the_bigram_and_the_add_one_unigram():
    model = InterpolatedBigram(IDS, vocab_size=4, weight=0.25)
    unigram = torch.tensor([3, 3, 1, 0], dtype=torch.float64) + 1  # add-one
    unigram /= unigram.sum()
    assert torch.allclose(model.unigram, unigram)
    # after 1: c(1, 2) = 1, c(1, 1) = 1, c(1, 0) = 1 of c(1) = 3
    expected = 0.75 * unigram + 0.25 * torch.tensor([1, 1, 1, 0]) / 3
    rows = model.probs(torch.tensor([1, 3, 1]))  # (3, V)
    assert torch.allclose(rows[0], expected) and torch.equal(rows[0], rows[2])
    assert torch.allclose(rows[1], unigram)  # 3 never comes first: the unigram alone
    assert torch.allclose(rows.sum(-1), torch.ones(3, dtype=torch.float64))


def test_the_loss_is_the_mean_negative_log_probability_of_each_pair():
    model = InterpolatedBigram(IDS, vocab_size=4, weight=0.6)
    rows = model.probs(IDS[:-1])  # (N - 1, V)
    manual = -sum(math.log(rows[t, b]) for t, b in enumerate(IDS[1:].tolist())) / 6
    assert math.isclose(model.loss(IDS), manual, rel_tol=1e-12)
    unseen = torch.tensor([2, 2])  # a pair never counted: still finite
    assert math.isfinite(model.loss(unseen))


def test_weight_zero_is_the_unigram_model():
    model = InterpolatedBigram(IDS, vocab_size=4, weight=0.0)
    assert math.isclose(
        model.loss(IDS), float(-model.unigram[IDS[1:]].log().mean()), rel_tol=1e-12
    )


def test_the_tuned_weight_minimises_the_heldout_loss():
    torch.manual_seed(0)
    ids = torch.randint(0, 6, (2000,))
    ids[1::2] = (ids[0::2] + 1) % 6  # every other pair is fixed
    n_fit = 1800
    model = tuned_bigram(ids, 6, heldout_fraction=0.1)
    assert 0 < model.weight < 1

    def heldout(w):
        return InterpolatedBigram(ids[:n_fit], 6, weight=w).loss(ids[n_fit:])

    best = heldout(model.weight)
    for w in (0.0, 0.3, model.weight - 0.02, model.weight + 0.02, 0.99):
        assert best <= heldout(w) + 1e-12


def test_samples_are_reproducible_and_follow_the_counts():
    model = InterpolatedBigram(torch.tensor([0, 1] * 50), vocab_size=3, weight=0.9)
    first = model.sample(0, 6, num=500, generator=torch.Generator().manual_seed(0))
    again = model.sample(0, 6, num=500, generator=torch.Generator().manual_seed(0))
    assert first.shape == (500, 6) and torch.equal(first, again)
    share = (first[:, 0] == 1).double().mean().item()  # p(1 | 0) = 0.9 + 0.1·p(1)
    assert abs(share - (0.9 + 0.1 * 51 / 103)) < 0.05


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: InterpolatedBigram(torch.tensor([0, 3]), 3, 0.5), ValueError, "ids must be in"),
        (lambda: InterpolatedBigram(torch.tensor([0.0, 1.0]), 3, 0.5), TypeError, "integer token ids"),
        (lambda: InterpolatedBigram(torch.tensor([0]), 3, 0.5), ValueError, "at least 2 tokens"),
        (lambda: InterpolatedBigram(IDS, 3, 1.0), ValueError, r"weight must be in \[0, 1\)"),
        (lambda: InterpolatedBigram(IDS, 3, True), TypeError, "weight must be a float"),
        (lambda: InterpolatedBigram(IDS, 3, 0.5).loss(torch.tensor([1])), ValueError, "at least 2 tokens"),
        (lambda: tuned_bigram(IDS, 3, heldout_fraction=1.0), ValueError, "heldout_fraction must be in"),
        (lambda: tuned_bigram(IDS[:3], 3), ValueError, "fewer than 2 tokens"),
        (lambda: InterpolatedBigram(IDS, 3, 0.5).sample(3, 2, num=1, generator=torch.Generator()), ValueError, "start must be in"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_by_name(make, error, match):
    with pytest.raises(error, match=match):
        make()
