"""Errors that name the argument and say what was expected, where the
package used to fail deep inside torch or Python (round three)."""

import datetime
import random

import pytest
import torch

from mha_book.seq2seq.dates import date_vocabulary, render_date
from mha_book.seq2seq.measures import exact_matches, translate
from mha_book.seq2seq.training import date_batch, train_translator
from mha_book.seq2seq.translator import Translator, TranslatorConfig, decode_ids

VOCAB = date_vocabulary()


@pytest.fixture(scope="module")
def model():
    config = TranslatorConfig(vocab_size=len(VOCAB), embed_dim=16)
    return Translator(config).eval()


@pytest.mark.parametrize(
    ("ids", "kind", "says"),
    [
        ([[1, 2]], TypeError, "ids must be a torch.Tensor"),
        (torch.tensor([1, 2]), ValueError, r"ids must have shape \(B, T\)"),
        (torch.tensor([[10**4]]), ValueError, r"\[0, len\(vocab\)\)"),
        (torch.tensor([[1.0]]), TypeError, "integer token ids"),
    ],
)
def test_decode_ids_names_what_it_was_given(ids, kind, says):
    with pytest.raises(kind, match=says):
        decode_ids(ids, VOCAB)


def test_the_translator_refuses_targets_that_do_not_fit(model):
    src = torch.ones(2, 3, dtype=torch.long)
    with pytest.raises(ValueError, match="src's B = 2"):
        model(src, torch.ones(3, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="T <= max_len = 32"):
        model(src, torch.ones(2, 40, dtype=torch.long))
    with pytest.raises(ValueError, match="meta device"):
        model(src.to("meta"), torch.ones(2, 3, dtype=torch.long))


def test_measures_refuse_another_vocabulary_and_strings(model):
    with pytest.raises(ValueError, match="vocab must be the model's"):
        translate(model, ["1/2/2026"], VOCAB[:-1])
    with pytest.raises(TypeError, match="examples must be a list of DateExample"):
        exact_matches(model, "1/2/2026", VOCAB)
    with pytest.raises(TypeError, match=r"examples\[0\] must be a DateExample"):
        exact_matches(model, ["1/2/2026"], VOCAB)
    example = render_date(datetime.date(2026, 12, 2), "num_dmy")
    assert len(exact_matches(model, [example], VOCAB)) == 1


def test_no_dates_is_refused_by_name():
    with pytest.raises(ValueError, match="dates must be a non-empty list"):
        date_batch([], random.Random(0), 4, VOCAB)
    config = TranslatorConfig(vocab_size=len(VOCAB), embed_dim=16)
    with pytest.raises(ValueError, match="dates must be a non-empty list"):
        train_translator(config, [], VOCAB, steps=1)


@pytest.mark.parametrize(
    ("mods", "says"),
    [
        ({"mask_mod": "padding"}, r"mask_mod was made for B = 1"),
        ({"mask_mod": "document"}, r"mask_mod was made for S = 3"),
        ({"score_mod": "alibi"}, r"score_mod was made for H = 3"),
        ({"mask_mod": "three args"}, r"mask_mod must accept.*TypeError"),
    ],
)
def test_a_mod_that_does_not_fit_the_inputs_is_named(mods, says):
    from mha_book.attention import flex

    made = {
        "padding": flex.padding(torch.tensor([3])),  # one length, two rows
        "document": flex.document(torch.tensor([0, 0, 1])),  # 3 ids, 6 keys
        "alibi": flex.alibi(3),  # 3 slopes, 4 heads
        "three args": lambda b, h, q_idx: q_idx >= 0,
    }
    q = torch.randn(2, 4, 6, 8)
    with pytest.raises(ValueError, match=says):
        flex.flex_attend(q, q, q, **{k: made[v] for k, v in mods.items()})


def test_a_mask_mod_returning_a_python_bool_is_refused():
    from mha_book.attention import flex

    with pytest.raises(TypeError, match="must return a tensor"):
        flex.dense_mask(lambda b, h, q_idx, kv_idx: bool(q_idx >= kv_idx), 3, 3)


def test_offset_profile_and_the_explorer_name_empty_and_meta_inputs():
    from mha_book.lm.poetry import offset_profile
    from mha_book.viz.explorer import explore

    with pytest.raises(ValueError, match="weights must be a non-empty list"):
        offset_profile([], 2)
    with pytest.raises(ValueError, match="meta device"):
        explore(["a", "b"], torch.empty(1, 1, 2, 2, device="meta"))


def test_artifacts_name_a_folder_in_the_way_and_a_name_too_long(tmp_path, monkeypatch):
    from mha_book.lm import artifacts

    monkeypatch.setenv(artifacts.ARTIFACTS_ENV, str(tmp_path))
    args = dict(save=lambda v, p: torch.save(v, p), load=torch.load)
    with pytest.raises(ValueError, match="at most 200 characters"):
        artifacts.cached("x" * 300, 1, lambda: 1, **args)
    assert artifacts.cached("x", 1, lambda: 1, **args) == (1, False)
    for suffix in (".pt", ".lock", ".sha256"):
        [stored] = tmp_path.glob("x-*.pt")
        part = stored.with_suffix(suffix)
        part.unlink()
        part.mkdir()
        with pytest.raises(IsADirectoryError, match="is a folder where"):
            artifacts.cached("x", 1, lambda: 1, **args)
        part.rmdir()
        if suffix == ".pt":
            assert artifacts.cached("x", 1, lambda: 1, **args) == (1, False)
