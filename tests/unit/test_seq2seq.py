"""The date translator of chapter 16: its data, its cached decoder, its measures."""

import datetime
import random

import pytest
import torch

from mha_book.lm import artifacts
from mha_book.seq2seq import measures
from mha_book.seq2seq.dates import (
    FORMATS,
    TARGET_FIELDS,
    date_split,
    date_vocabulary,
    render_date,
)
from mha_book.seq2seq.measures import alignment_shares, exact_matches, silenced
from mha_book.seq2seq.training import date_batch, train_translator
from mha_book.seq2seq.translator import Translator, TranslatorConfig, encode_texts

DAY = datetime.date(2026, 12, 2)  # a Wednesday


@pytest.mark.parametrize(
    "fmt, source, year, month, day",
    [
        ("en_long", "Wednesday, 2 December 2026", "2026", "December", "2"),
        ("en_short", "Dec. 2, 2026", "2026", "Dec.", "2"),
        ("num_dmy", "d/m/y 2/12/2026", "2026", "12", "2"),
        ("num_mdy", "m/d/y 12/2/2026", "2026", "12", "2"),
        ("zh_digits", "2026年12月2日", "2026", "12", "2"),
        ("zh_words", "二〇二六年十二月二日星期三", "二〇二六", "十二", "二"),
    ],
)
def test_each_format_writes_the_date_and_knows_where_each_field_is(
    fmt, source, year, month, day
):
    ex = render_date(DAY, fmt)
    assert (ex.source, ex.target) == (source, "2026-12-02")
    written = {f: ex.source[a:b] for f, (a, b) in ex.spans.items()}
    assert written == {"Y": year, "M": month, "D": day}
    carriers = ex.carriers()
    assert [c is None for c in carriers] == [f == "-" for f in TARGET_FIELDS]
    assert carriers[0] == ex.spans["Y"] and carriers[-1] == ex.spans["D"]


@pytest.mark.parametrize(
    "date, words",
    [
        (datetime.date(1950, 1, 10), "一九五〇年一月十日星期二"),
        (datetime.date(2049, 10, 31), "二〇四九年十月三十一日星期日"),
        (datetime.date(2000, 2, 29), "二〇〇〇年二月二十九日星期二"),
    ],
)
def test_chinese_numerals_and_weekdays(date, words):
    assert render_date(date, "zh_words").source == words


def test_train_and_test_dates_are_apart_and_the_same_on_every_run():
    train, test = date_split()
    assert not set(train) & set(test)
    assert len(test) == (len(train) + len(test)) // 10
    assert date_split() == (train, test)
    assert date_split(seed=1)[1] != test


def test_the_vocabulary_holds_every_character_of_every_example():
    vocab = date_vocabulary()
    assert vocab[:2] == ["<pad>", "<s>"] and len(set(vocab)) == len(vocab)
    rng = random.Random(0)
    dates = rng.sample(date_split()[1], 200)
    text = "".join(render_date(d, f).source for d in dates for f in FORMATS)
    assert set(text) <= set(vocab)


def test_bad_dates_and_formats_are_named():
    with pytest.raises(ValueError, match="fmt must be one of"):
        render_date(DAY, "iso")
    with pytest.raises(ValueError, match=r"date must be in \[1950-01-01, 2049-12-31\]"):
        render_date(datetime.date(2050, 1, 1), "num_dmy")
    with pytest.raises(TypeError, match="date must be a datetime.date, got str"):
        render_date("2026-12-02", "num_dmy")
    with pytest.raises(TypeError, match="date must be a datetime.date, got datetime"):
        render_date(datetime.datetime(2026, 12, 2, 8, 30), "num_dmy")
    with pytest.raises(ValueError, match="test_every must be at least 2"):
        date_split(test_every=1)
    with pytest.raises(
        ValueError, match=r"texts\[0\] must be non-empty, in the vocabulary"
    ):
        encode_texts(["2026年12月2日"], ["<pad>", "<s>", "2"])


def _model(bottleneck=False, seed=0):
    torch.manual_seed(seed)
    config = TranslatorConfig(20, embed_dim=16, num_heads=4, bottleneck=bottleneck)
    return Translator(config).double().eval()


@pytest.mark.parametrize("bottleneck", [False, True])
def test_cached_decoding_equals_the_full_pass(bottleneck):
    model = _model(bottleneck)
    src = torch.randint(2, 20, (3, 9))
    src[0, 6:] = 0  # a shorter sentence, padded
    tgt = torch.cat(
        [torch.ones(3, 1, dtype=torch.long), torch.randint(2, 20, (3, 9))], 1
    )
    full, _ = model(src, tgt)  # (B, T, V)
    step = model.start_cached(src)
    cached = torch.cat([step(tgt[:, t : t + 1]) for t in range(tgt.shape[1])], 1)
    torch.testing.assert_close(cached, full, atol=1e-10, rtol=0)
    assert torch.equal(model.greedy(src, 10, cached=True), model.greedy(src, 10))


def test_padding_changes_nothing_and_the_bottleneck_is_one_memory_position():
    for bottleneck in (False, True):
        model = _model(bottleneck)
        src = torch.tensor([[5, 6, 7]])
        padded = torch.tensor([[5, 6, 7, 0, 0]])
        tgt = torch.tensor([[1, 8, 9]])
        torch.testing.assert_close(model(src, tgt)[0], model(padded, tgt)[0])
        memory, mask = model.encode(padded)
        assert memory.shape[1] == (1 if bottleneck else 5)
        assert mask.shape == (1, 1, 1, memory.shape[1])


def test_bad_ids_are_named():
    model = _model()
    with pytest.raises(
        ValueError, match=r"src must be in \[0, vocab_size\) = \[0, 20\)"
    ):
        model(torch.tensor([[25]]), torch.tensor([[1]]))
    with pytest.raises(TypeError, match="tgt must hold integer token ids"):
        model(torch.tensor([[5]]), torch.tensor([[1.0]]))
    with pytest.raises(ValueError, match="steps must be at most max_len = 32, got 40"):
        model.greedy(torch.tensor([[5]]), 40)
    assert model.greedy(torch.tensor([[5]]), 32).shape == (1, 32)  # every position
    step = model.start_cached(torch.tensor([[5], [6]]))
    with pytest.raises(
        ValueError, match=r"token must be \(B, 1\) = \(2, 1\), got \(2, 2\)"
    ):
        step(torch.tensor([[1, 1], [1, 1]]))
    with pytest.raises(ValueError, match="embed_dim must be a positive int"):
        TranslatorConfig(20, embed_dim=0)


def test_a_silenced_head_adds_nothing_and_only_within_the_block():
    model = _model()
    src, tgt = torch.tensor([[5, 6, 7, 8]]), torch.tensor([[1, 9, 10]])
    before, _ = model(src, tgt)
    seen = {}
    attention = model.decoder[1].cross_attn
    handle = attention.out_proj.register_forward_hook(  # sees the input as used
        lambda m, args, out: seen.__setitem__("input", args[0].clone())
    )
    with silenced(model, [(1, 2)]):
        during, _ = model(src, tgt)
        cached = model.greedy(src, 5, cached=True)
        full = model.greedy(src, 5)
    handle.remove()
    D = attention.embed_dim // attention.num_heads
    heads = seen["input"].unflatten(-1, (attention.num_heads, D))  # (B, T, H, D)
    assert heads[..., 2, :].abs().max() == 0 and heads[..., 1, :].abs().max() > 0
    assert not torch.allclose(before, during)
    assert torch.equal(cached, full)  # the cached path is silenced too
    torch.testing.assert_close(model(src, tgt)[0], before)  # hooks removed


def test_alignment_shares_count_the_strongest_key_inside_the_carrying_span(monkeypatch):
    examples = [render_date(DAY, "zh_digits"), render_date(DAY, "en_short")]
    S = max(len(ex.source) for ex in examples)
    weights = torch.zeros(2, 1, 2, 10, S)  # (B, L=1, H=2, T, S)
    for b, ex in enumerate(examples):
        for t, span in enumerate(ex.carriers()):
            if span is not None:
                weights[b, 0, 0, t, span[0]] = 1.0  # head 0: on the carrying span
                weights[b, 0, 1, t, (span[1]) % len(ex.source)] = (
                    1.0  # head 1: just off
                )
    monkeypatch.setattr(measures, "cross_attention", lambda *args: weights)
    shares = alignment_shares(None, examples, [])
    assert shares.tolist() == [[1.0, 0.0]]


def test_training_is_stored_once_and_loaded_as_it_was(tmp_path, monkeypatch):
    monkeypatch.setenv(artifacts.ARTIFACTS_ENV, str(tmp_path))
    vocab = date_vocabulary()
    train, test = date_split()
    config = TranslatorConfig(
        len(vocab), embed_dim=16, encoder_layers=1, decoder_layers=1
    )
    first, loaded = train_translator(config, train[:50], vocab, steps=3, batch_size=4)
    again, loaded_again = train_translator(
        config, train[:50], vocab, steps=3, batch_size=4
    )
    assert (loaded, loaded_again) == (False, True)
    assert again.losses == first.losses and again.seconds == first.seconds
    for name, w in first.model.state_dict().items():
        assert torch.equal(again.model.state_dict()[name], w)
    examples = [render_date(d, "num_dmy") for d in test[:3]]
    assert len(exact_matches(again.model, examples, vocab)) == 3
    src, tgt_in, tgt_out = date_batch(train, random.Random(0), 4, vocab)
    assert tgt_in.shape == tgt_out.shape == (4, 10)
    assert torch.equal(tgt_in[:, 1:], tgt_out[:, :-1]) and (tgt_in[:, 0] == 1).all()
