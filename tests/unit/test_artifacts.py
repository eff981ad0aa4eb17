"""The artifact cache serves a stored run only when nothing it depends on changed."""

import hashlib
import json
import os

import numpy
import pytest
import torch

import mha_book.lm.artifacts as artifacts
from mha_book.lm.training import train
from mha_book.models.decoder import CausalDecoder, DecoderConfig

IDS = torch.randint(0, 11, (400,), generator=torch.Generator().manual_seed(0))


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(artifacts.ARTIFACTS_ENV, str(tmp_path))
    return tmp_path


def run(seed=0, steps=6, cache=True):
    torch.manual_seed(seed)
    model = CausalDecoder(DecoderConfig(11, 8, 2, 1, 16))
    history = train(
        model,
        IDS,
        steps=steps,
        batch_size=4,
        block_size=8,
        val_ids=IDS[:50],
        progress=False,
        cache=cache,
    )
    return model, history


def test_an_identical_run_is_loaded_with_its_weights_and_history(store):
    trained, first = run()
    loaded, second = run()
    assert not first.from_cache and second.from_cache
    assert second.train_loss == first.train_loss
    assert second.val_loss == first.val_loss and second.seconds == first.seconds
    for name, w in trained.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], w), name
    assert loaded.training  # left in train mode, as train() leaves it
    assert len(list(store.glob("train-*.pt"))) == 1


@pytest.mark.parametrize(
    "change", ["an argument", "the initial weights", "the package"]
)
def test_any_change_recomputes(store, monkeypatch, change):
    run()
    if change == "the package":
        monkeypatch.setattr(artifacts, "code_digest", lambda modules: "edited code")
    _, again = run(
        seed=1 if change == "the initial weights" else 0,
        steps=7 if change == "an argument" else 6,
    )
    assert not again.from_cache
    assert len(list(store.glob("train-*.pt"))) == 2


def test_without_the_folder_or_without_cache_nothing_is_stored(store, monkeypatch):
    run(cache=False)
    assert not list(store.glob("*.pt"))
    monkeypatch.delenv(artifacts.ARTIFACTS_ENV)
    assert not run()[1].from_cache and not run()[1].from_cache


def test_a_damaged_artifact_is_recomputed(store):
    _, first = run()
    [path] = store.glob("train-*.pt")
    path.write_bytes(b"not a checkpoint")
    _, again = run()
    assert not again.from_cache and again.train_loss == first.train_loss
    assert run()[1].from_cache  # stored again


def test_a_loaded_result_counts_as_used_now(store):
    run()
    [path] = store.glob("train-*.pt")
    os.utime(path, (1, 1))  # stored long ago
    assert run()[1].from_cache
    assert path.stat().st_mtime > 1  # pruning keeps the results a build used


def test_a_flipped_bit_is_never_loaded(store):
    """A stored model that still loads, with one weight changed on disk, used
    to be served as it was: the SHA-256 beside it now says it is not the one
    stored, and the run is made again."""
    trained, first = run()
    [path] = store.glob("train-*.pt")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10  # one bit, inside the weights
    path.write_bytes(bytes(data))
    loaded, again = run()
    assert not again.from_cache and again.train_loss == first.train_loss
    for name, w in trained.state_dict().items():
        assert torch.equal(loaded.state_dict()[name], w), name
    assert run()[1].from_cache


def test_a_stored_result_of_the_wrong_type_is_computed_again(store):
    def save(value, path):
        path.write_text(json.dumps(value), encoding="utf-8")

    def load(path):
        return json.loads(path.read_text(encoding="utf-8"))

    def poems():
        return ["床前明月光"]

    args = dict(save=save, load=load, kind=list)
    assert artifacts.cached("poems", 1, poems, **args) == (["床前明月光"], False)
    [path] = store.glob("poems-*.pt")
    path.write_text(json.dumps({"not": "poems"}), encoding="utf-8")
    path.with_suffix(".sha256").write_text(  # a consistent forgery
        hashlib.sha256(path.read_bytes()).hexdigest()
    )
    assert artifacts.cached("poems", 1, poems, **args) == (["床前明月光"], False)


@pytest.mark.parametrize("name", ["../x", "a/b", "", ".hidden", "x..y"])
def test_a_name_that_is_not_a_plain_file_name_is_refused(store, name):
    with pytest.raises(ValueError, match="name must be a plain file name"):
        artifacts.cached(name, 1, lambda: 1, save=lambda v, p: None, load=lambda p: 1)
    assert list(store.parent.glob("x*")) == []


def test_an_artifacts_folder_that_is_a_file_is_named(tmp_path, monkeypatch):
    not_a_folder = tmp_path / "artifacts"
    not_a_folder.write_text("")
    monkeypatch.setenv(artifacts.ARTIFACTS_ENV, str(not_a_folder))
    with pytest.raises(
        NotADirectoryError, match="MHA_BOOK_ARTIFACTS must name a folder"
    ):
        artifacts.cached("x", 1, lambda: 1, save=lambda v, p: None, load=lambda p: 1)


def test_arrays_are_digested_by_every_element():
    a = numpy.arange(10000)
    b = a.copy()
    b[5000] = -1
    assert artifacts.digest(a) != artifacts.digest(b)
    assert artifacts.digest(a) == artifacts.digest(numpy.arange(10000))
    assert artifacts.digest({"b", "a"}) == artifacts.digest({"a", "b"})
    with pytest.raises(TypeError, match="array of Python objects"):
        artifacts.digest(numpy.array([object()]))
