"""Train short, test long: one decoder per position scheme, evaluated at longer lengths."""

import math

import pytest
import torch

import mha_book.lm.artifacts as artifacts
import mha_book.lm.extrapolation as extrapolation
from mha_book.lm.charlm import CharTokenizer
from mha_book.lm.extrapolation import train_short_test_long

TOK = CharTokenizer.from_text("abcde")
IDS = TOK.encode("abcdeedcbaabdce" * 30)  # (450,)
TINY = dict(
    vocab_size=5,
    train_len=8,
    factors=(1, 2, 4),
    embed_dim=8,
    num_heads=2,
    num_layers=1,
    steps=3,
    batch_size=2,
)


def test_every_scheme_is_evaluated_at_every_length_learned_only_at_its_own():
    runs = train_short_test_long(IDS, IDS, **TINY)
    assert list(runs) == ["none", "sinusoidal", "learned", "rope", "alibi"]
    for scheme, run in runs.items():
        assert run.scheme == scheme and run.lengths == (8, 16, 32)
        losses = run.val_loss[:1] if scheme == "learned" else run.val_loss
        assert all(math.isfinite(x) and 0 < x < 2 * math.log(5) for x in losses)
        assert math.isfinite(run.train_loss) and run.seconds > 0
    assert runs["learned"].val_loss[1:] == (None, None)


def test_same_seed_same_losses_and_schemes_differ():
    first = train_short_test_long(IDS, IDS, **TINY, schemes=("rope", "alibi"))
    again = train_short_test_long(IDS, IDS, **TINY, schemes=("rope", "alibi"))
    for scheme in first:
        assert first[scheme].val_loss == again[scheme].val_loss
        assert first[scheme].train_loss == again[scheme].train_loss
    assert first["rope"].val_loss != first["alibi"].val_loss


def test_runs_go_through_the_artifact_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(artifacts.ARTIFACTS_ENV, str(tmp_path))
    first = train_short_test_long(IDS, IDS, **TINY, schemes=("alibi",))
    assert len(list(tmp_path.glob("extrapolation-*.pt"))) == 1
    again = train_short_test_long(IDS, IDS, **TINY, schemes=("alibi",))
    assert again == first  # loaded, seconds included: nothing was retrained
    changed = train_short_test_long(
        IDS, IDS, **{**TINY, "steps": 4}, schemes=("alibi",)
    )
    assert changed != first and len(list(tmp_path.glob("extrapolation-*.pt"))) == 2


def test_a_run_busy_elsewhere_is_skipped_then_waited_for(monkeypatch):
    calls = []
    real = artifacts.cached

    def cached(name, key, compute, *, save, load, wait=True, kind=object):
        calls.append((key[0], wait))
        if key[0] == "rope" and not wait:  # another process is training it
            raise artifacts.ArtifactBusy("rope")
        return real(name, key, compute, save=save, load=load, wait=wait)

    monkeypatch.setattr(extrapolation, "cached", cached)
    runs = train_short_test_long(IDS, IDS, **TINY, schemes=("rope", "alibi"))
    assert calls == [("rope", False), ("alibi", False), ("rope", True)]
    assert list(runs) == ["rope", "alibi"]


def test_cached_without_wait_reports_a_busy_lock(tmp_path, monkeypatch):
    monkeypatch.setenv(artifacts.ARTIFACTS_ENV, str(tmp_path))
    args = dict(save=lambda r, p: torch.save(r, p), load=torch.load)
    assert artifacts.cached("x", 1, lambda: 1, **args) == (1, False)
    (lock,) = tmp_path.glob("x-*.lock")
    with artifacts._locked(lock):  # held as another process would hold it
        with pytest.raises(artifacts.ArtifactBusy):
            artifacts.cached("x", 1, lambda: 1, **args, wait=False)
    assert artifacts.cached("x", 1, lambda: 0, **args, wait=False) == (1, True)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="schemes must be among"):
        train_short_test_long(IDS, IDS, **TINY, schemes=("rotary",))
    with pytest.raises(ValueError, match=r"factors must start with 1"):
        train_short_test_long(IDS, IDS, **{**TINY, "factors": (2, 4)})


def test_a_run_made_or_stored_leaves_the_callers_random_state_alone(
    tmp_path, monkeypatch
):
    """A page that loads some stored runs and makes the rest must print, in its
    later cells, what a clean build prints: a run changes no global state."""
    monkeypatch.setenv(artifacts.ARTIFACTS_ENV, str(tmp_path))
    after = []
    for _ in range(2):  # made, then stored
        torch.manual_seed(123)
        train_short_test_long(IDS, IDS, **TINY, schemes=("alibi",))
        after.append(torch.rand(3))
    torch.manual_seed(123)
    assert torch.equal(after[0], torch.rand(3)) and torch.equal(after[1], after[0])
