"""Tests for mha_book.lm.charlm and mha_book.lm.corpus: the character-level language model."""

import doctest
import hashlib
import math
import sys

import pytest
import torch
from needs import needs

from mha_book.book import display_width
from mha_book.lm import checkpoint, corpus
from mha_book.lm.charlm import (
    CharTokenizer,
    evaluate,
    get_batch,
    lm_loss,
    split_ids,
    unigram_loss,
)
from mha_book.lm.checkpoint import load_checkpoint, save_checkpoint
from mha_book.lm.history import TrainHistory
from mha_book.lm.training import sample, train
from mha_book.models.decoder import CausalDecoder, DecoderConfig

TEXT = "to be, or not to be: that is the question.\n" * 40


@pytest.fixture(scope="module")
def tokenizer():
    return CharTokenizer.from_text(TEXT)


def tiny_model(vocab_size, **kwargs):
    torch.manual_seed(0)
    return CausalDecoder(
        DecoderConfig(
            vocab_size, embed_dim=16, num_heads=2, num_layers=1, max_len=16, **kwargs
        )
    )


def test_tokenizer_round_trip_and_order(tokenizer):
    assert tokenizer.chars == "".join(sorted(set(TEXT)))
    ids = tokenizer.encode("not to be")
    assert ids.dtype == torch.long and ids.shape == (9,)
    assert tokenizer.decode(ids) == "not to be"
    with pytest.raises(ValueError, match=r"outside the vocabulary: \['Z'\]"):
        tokenizer.encode("Zo")


def test_batches_are_shifted_windows():
    ids = torch.arange(1000)
    g = torch.Generator().manual_seed(0)
    x, y = get_batch(ids, 8, 12, generator=g)
    assert x.shape == y.shape == (8, 12)
    assert torch.equal(y[:, :-1], x[:, 1:]) and torch.equal(y, x + 1)
    x2, _ = get_batch(ids, 8, 12, generator=torch.Generator().manual_seed(0))
    assert torch.equal(x, x2)
    with pytest.raises(ValueError, match="at least block_size"):
        get_batch(torch.arange(5), 2, 5)


def test_split_is_a_contiguous_head_and_tail():
    train_ids, val_ids = split_ids(torch.arange(50), 0.2)
    assert torch.equal(torch.cat([train_ids, val_ids]), torch.arange(50))
    assert len(val_ids) == 10


def test_unigram_loss_is_the_entropy_of_the_frequencies():
    ids = torch.tensor([0, 0, 0, 1])
    # add-one smoothing: p = (4/6, 2/6)
    expected = -(3 * math.log(4 / 6) + math.log(2 / 6)) / 4
    assert math.isclose(unigram_loss(ids, ids, 2), expected, rel_tol=1e-12)


def test_evaluate_is_deterministic_and_matches_the_loss(tokenizer):
    model = tiny_model(tokenizer.vocab_size)
    ids = tokenizer.encode(TEXT[:200])
    a, b = evaluate(model, ids, 16), evaluate(model, ids, 16, batch_size=3)
    assert math.isclose(a, b, rel_tol=1e-6)
    window = ids[:17]
    with torch.no_grad():
        logits, _ = model(window[None, :-1])
    one = evaluate(model, ids, 16, max_windows=1)
    assert math.isclose(one, float(lm_loss(logits, window[None, 1:])), rel_tol=1e-6)


def test_training_learns_and_is_reproducible(tokenizer):
    ids = tokenizer.encode(TEXT)
    train_ids, val_ids = split_ids(ids)
    histories, states = [], []
    for _ in range(2):
        model = tiny_model(tokenizer.vocab_size)
        histories.append(
            train(
                model,
                train_ids,
                steps=60,
                batch_size=8,
                block_size=16,
                lr=1e-2,
                val_ids=val_ids,
                eval_every=30,
                progress=False,
            )
        )
        states.append(model.state_dict())
    h = histories[0]
    assert h.train_loss == histories[1].train_loss  # same seed, same numbers
    assert all(torch.equal(states[0][k], states[1][k]) for k in states[0])
    assert h.val_steps == [30, 60] and len(h.train_loss) == 60
    assert h.val_loss[-1] < unigram_loss(train_ids, val_ids, tokenizer.vocab_size) - 0.5
    assert h.seconds > 0


@needs("tqdm")
@pytest.mark.parametrize(
    ("progress", "in_build", "shown"),
    [
        (True, True, True),
        (False, False, False),
        (None, False, True),  # a notebook, a terminal: a bar by default
        (None, True, False),  # the book's build keeps its output clean
    ],
)
def test_progress_bar_by_default_outside_the_build_and_only_on_stdout(
    tokenizer, capsys, monkeypatch, progress, in_build, shown
):
    if in_build:
        monkeypatch.setenv("MHA_BOOK_BUILD_DIR", "/tmp/book")
    else:
        monkeypatch.delenv("MHA_BOOK_BUILD_DIR", raising=False)
    model = tiny_model(tokenizer.vocab_size)
    ids = tokenizer.encode(TEXT)
    args = {} if progress is None else {"progress": progress}
    train(model, ids, steps=3, batch_size=2, block_size=8, **args)
    captured = capsys.readouterr()
    assert ("3/3" in captured.out) if shown else captured.out == ""
    assert captured.err == ""


@needs("tqdm")
@pytest.mark.parametrize(("lang", "words"), [("zh", "训练"), ("en", "train")])
def test_the_bar_speaks_the_notebooks_language(
    tokenizer, capsys, monkeypatch, lang, words
):
    monkeypatch.setenv("MHA_BOOK_LANG", lang)
    monkeypatch.delenv("MHA_BOOK_BUILD_DIR", raising=False)
    model = tiny_model(tokenizer.vocab_size)
    train(model, tokenizer.encode(TEXT), steps=2, batch_size=2, block_size=8)
    out = capsys.readouterr().out
    assert words in out and ("损失" in out) == (lang == "zh")


def test_without_tqdm_the_default_trains_without_a_bar_and_true_says_why(
    tokenizer, capsys, monkeypatch
):
    monkeypatch.delenv("MHA_BOOK_BUILD_DIR", raising=False)
    # import tqdm raises, and find_spec("tqdm") is None
    monkeypatch.setitem(sys.modules, "tqdm", None)
    model = tiny_model(tokenizer.vocab_size)
    ids = tokenizer.encode(TEXT)
    history = train(model, ids, steps=2, batch_size=2, block_size=8)
    assert len(history.train_loss) == 2 and capsys.readouterr().out == ""
    with pytest.raises(ImportError, match=r"progress=True needs tqdm"):
        train(model, ids, steps=2, batch_size=2, block_size=8, progress=True)


def test_summary_is_one_row_per_validation_step(tokenizer):
    ids = tokenizer.encode(TEXT)
    train_ids, val_ids = split_ids(ids)
    h = train(
        tiny_model(tokenizer.vocab_size),
        train_ids,
        steps=20,
        batch_size=4,
        block_size=16,
        val_ids=val_ids,
        eval_every=8,
        progress=False,
    )
    lines = h.summary().splitlines()
    assert lines[0].split() == ["step", "train_loss", "val_loss"]
    rows = [line.split() for line in lines[1:]]
    assert [int(r[0]) for r in rows] == h.val_steps == [8, 16, 20]
    assert math.isclose(float(rows[0][1]), sum(h.train_loss[:8]) / 8, abs_tol=5e-4)
    assert math.isclose(float(rows[2][1]), sum(h.train_loss[16:]) / 4, abs_tol=5e-4)
    assert [float(r[2]) for r in rows] == [round(v, 3) for v in h.val_loss]
    every = [line.split() for line in h.summary(every=5).splitlines()[1:]]
    assert [r[0] for r in every] == ["5", "10", "15", "20"]
    assert [len(r) for r in every] == [2, 2, 2, 3]  # validation only at step 20
    no_val = train(
        tiny_model(tokenizer.vocab_size),
        train_ids,
        steps=4,
        batch_size=2,
        block_size=8,
        progress=False,
    )
    assert len(no_val.summary().splitlines()) == 2  # a single row, for the last step
    with pytest.raises(ValueError, match="empty"):
        TrainHistory().summary()


def test_the_loss_table_speaks_the_book_language(monkeypatch):
    h = TrainHistory([4.0, 3.0, 2.0, 1.0], val_steps=[2, 4], val_loss=[3.25, 1.5])
    monkeypatch.setenv("MHA_BOOK_LANG", "zh")
    zh = h.summary().splitlines()
    monkeypatch.setenv("MHA_BOOK_LANG", "en")
    en = h.summary().splitlines()
    assert zh[0].split() == ["步数", "训练损失", "验证损失"]
    assert en[0].split() == ["step", "train_loss", "val_loss"]
    assert zh[1:] == en[1:]  # the same numbers
    # a Chinese character takes two columns: the headers end where the numbers do
    assert display_width(zh[0]) == display_width(en[0]) == len(en[1])


def test_sampling_is_seeded_and_respects_the_prompt(tokenizer):
    model = tiny_model(tokenizer.vocab_size)
    a = sample(model, tokenizer, "to be", 30, temperature=0.8, seed=1)
    b = sample(model, tokenizer, "to be", 30, temperature=0.8, seed=1)
    c = sample(model, tokenizer, "to be", 30, temperature=0.8, seed=2)
    assert a == b != c
    assert a.startswith("to be") and len(a) == 35


def test_checkpoint_round_trip(tokenizer, tmp_path):
    for positions, tie in (("learned", True), ("sinusoidal", False)):
        model = tiny_model(tokenizer.vocab_size, positions=positions, tie_weights=tie)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.01 * torch.randn_like(p))
        path = save_checkpoint(tmp_path / f"{positions}.pt", model, tokenizer)
        loaded, tok2 = load_checkpoint(path)
        assert tok2.chars == tokenizer.chars
        assert loaded.config == model.config
        assert (loaded.lm_head.weight is loaded.tok_emb.weight) == tie
        idx = tokenizer.encode("to be or not")[None]
        assert torch.equal(loaded(idx)[0], model.eval()(idx)[0])


def test_load_rejects_other_files(tmp_path):
    path = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(2)}, path)
    with pytest.raises(ValueError, match="not a mha_book.lm.charlm/2 checkpoint"):
        load_checkpoint(path)


def test_corpus_is_large_real_and_clean():
    text = corpus.load_shakespeare()
    assert len(text) > 300_000
    assert text.startswith("HAMLET, PRINCE OF DENMARK")
    assert "Gutenberg" not in text and "\r" not in text and "\n\n\n" not in text
    assert text == corpus.load_shakespeare()  # deterministic
    titles = [s["title"] for s in corpus.play_sources()]
    assert titles == ["Hamlet", "Macbeth", "Julius Caesar"]


def test_shipped_plays_match_their_recorded_digests():
    # sources.json is written by tools/ship_plays.py from shakespeare 0.6's
    # source archive; a changed byte in a shipped play fails here.
    sources = corpus.play_sources()
    assert [s["name"] for s in sources] == list(corpus.PLAYS)
    for source in sources:
        data = corpus.load_play(source["name"]).encode("utf-8")
        assert hashlib.sha256(data).hexdigest() == source["sha256"], source["name"]
        assert source["url"].startswith("http://www.gutenberg.org/")


def test_plays_are_cleaned_as_the_tool_cleans_them():
    from tools import ship_plays

    assert doctest.testmod(ship_plays).failed == 0
    for name in corpus.PLAYS:
        text = corpus.load_play(name)
        assert ship_plays.normalise(ship_plays.strip_gutenberg(text)) == text


def test_unknown_play_lists_the_available_ones():
    with pytest.raises(ValueError, match="hamlet, macbeth, julius_caesar"):
        corpus.load_play("no_such_play")


def _saved(tokenizer, tmp_path):
    model = tiny_model(tokenizer.vocab_size)
    return save_checkpoint(tmp_path / "model.pt", model, tokenizer), model


def test_a_crash_while_saving_keeps_the_previous_checkpoint(
    tokenizer, tmp_path, monkeypatch
):
    path, model = _saved(tokenizer, tmp_path)
    before = path.read_bytes()

    def crash(obj, f, *args, **kwargs):
        f.write(b"half a checkpoint")
        raise KeyboardInterrupt  # the process is stopped mid-write

    monkeypatch.setattr(torch, "save", crash)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(path, model, tokenizer)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "model.pt"
    ]  # no temp file left
    monkeypatch.undo()
    load_checkpoint(path)


@pytest.mark.parametrize(
    "damage, message",
    [
        (lambda p: p.unlink(), "does not exist"),
        (lambda p: p.write_bytes(b""), "is empty"),
        (
            lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
            "not a readable",
        ),
        (lambda p: p.write_text("just text", encoding="utf-8"), "not a readable"),
    ],
)
def test_a_damaged_checkpoint_file_is_named_in_the_error(
    tokenizer, tmp_path, damage, message
):
    path, _ = _saved(tokenizer, tmp_path)
    damage(path)
    with pytest.raises((ValueError, FileNotFoundError), match=message) as err:
        load_checkpoint(path)
    assert str(path) in str(err.value)


def _rewrite(path, change, redigest=False):
    """Change a saved checkpoint; with ``redigest`` store a matching digest."""
    data = torch.load(path, weights_only=True)
    change(data)
    if redigest:
        data["digest"] = checkpoint.checkpoint_digest(
            data["config"], data["state_dict"], data["chars"]
        )
    torch.save(data, path)


def test_changed_weights_fail_the_digest(tokenizer, tmp_path):
    path, _ = _saved(tokenizer, tmp_path)
    _rewrite(path, lambda d: d["state_dict"]["tok_emb.weight"].add_(1.0))
    with pytest.raises(ValueError, match=f"{path} is damaged"):
        load_checkpoint(path)


def test_a_vocabulary_that_does_not_fit_the_model_is_refused(tokenizer, tmp_path):
    path, _ = _saved(tokenizer, tmp_path)
    _rewrite(path, lambda d: d.update(chars=d["chars"][:-1]), redigest=True)
    with pytest.raises(ValueError, match="characters but the model's vocab_size is"):
        load_checkpoint(path)


@pytest.mark.parametrize(
    "edit",
    [
        lambda chars: chars[:-1] + chars[0],  # a repeat: 9 distinct for 10 ids
        lambda chars: chars[1] + chars[0] + chars[2:],  # another order: other ids
    ],
    ids=["a repeated character", "characters out of order"],
)
def test_characters_edited_with_a_new_digest_are_refused(tokenizer, tmp_path, edit):
    """Loaded, a repeat shrank the tokenizer below the model's vocabulary and
    another order was sorted back silently, changing every id."""
    path, _ = _saved(tokenizer, tmp_path)
    _rewrite(path, lambda d: d.update(chars=edit(d["chars"])), redigest=True)
    with pytest.raises(ValueError, match="must be distinct and in sorted order"):
        load_checkpoint(path)


def test_a_folder_is_not_a_checkpoint(tmp_path):
    with pytest.raises(IsADirectoryError, match="is a folder, not a checkpoint file"):
        load_checkpoint(tmp_path)


def test_a_configuration_the_model_rejects_is_named(tokenizer, tmp_path):
    path, _ = _saved(tokenizer, tmp_path)
    _rewrite(path, lambda d: d["config"].update(no_such_argument=1), redigest=True)
    with pytest.raises(ValueError, match=f"{path}: the model cannot be rebuilt"):
        load_checkpoint(path)
