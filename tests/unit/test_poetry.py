"""The verse form and its measures (mha_book.lm.poetry, chapter 15)."""

import pytest
import torch

import mha_book.lm.artifacts as artifacts
from mha_book.attention.masks import causal_mask
from mha_book.lm.charlm import CharTokenizer
from mha_book.lm.poetry import (
    copy_share,
    form_share,
    generate_poems,
    is_regular_verse,
    offset_profile,
)
from mha_book.lm.training import torch_threads
from mha_book.models.decoder import CausalDecoder, DecoderConfig

QUATRAIN = "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"


@pytest.mark.parametrize(
    "poem, ok",
    [
        (QUATRAIN, True),
        (QUATRAIN * 2, True),  # 8 lines
        (QUATRAIN[:12], False),  # one couplet
        (QUATRAIN * 2 + QUATRAIN[:12], False),  # 10 lines
        (QUATRAIN + QUATRAIN[:12], False),  # 6 lines
        (QUATRAIN.replace("，", "。", 1), False),  # marks out of order
        ("白日依山尽尽，黄河入海流。欲穷千里目，更上一层楼。", False),  # 6 characters
        ("白日依山a，黄河入海流。欲穷千里目，更上一层楼。", False),  # not an ideograph
        (QUATRAIN + "\n", False),
        ("", False),
    ],
)
def test_the_form_is_4_or_8_lines_of_five_with_alternating_marks(poem, ok):
    assert is_regular_verse(poem) is ok


def test_shares_count_poems_and_refuse_an_empty_sample():
    assert form_share([QUATRAIN, "白日", QUATRAIN * 2, ""]) == 0.5
    assert copy_share([QUATRAIN, "白日"], [QUATRAIN]) == 0.5
    with pytest.raises(ValueError, match="at least one poem"):
        form_share([])
    with pytest.raises(ValueError, match="at least one poem"):
        copy_share([], [QUATRAIN])


def small_poet():
    tok = CharTokenizer("\n，。白日山")
    torch.manual_seed(0)
    return tok, CausalDecoder(
        DecoderConfig(tok.vocab_size, 8, 2, 1, max_len=64, positions="rope")
    )


def test_generated_poems_are_seeded_and_cut_at_the_newline():
    tok, model = small_poet()
    first = generate_poems(model, tok, 5, seed=3, max_chars=30)
    assert first == generate_poems(model, tok, 5, seed=3, max_chars=30)
    assert len(first) == 5 and all("\n" not in p and len(p) <= 30 for p in first)
    assert first != generate_poems(model, tok, 5, seed=4, max_chars=30)


def test_generated_poems_go_through_the_artifact_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(artifacts.ARTIFACTS_ENV, str(tmp_path))
    tok, model = small_poet()
    first = generate_poems(model, tok, 4, seed=1, max_chars=12, cache=True)
    assert len(list(tmp_path.glob("poems-*.pt"))) == 1
    assert generate_poems(model, tok, 4, seed=1, max_chars=12, cache=True) == first
    other = CausalDecoder(
        DecoderConfig(tok.vocab_size, 8, 2, 1, max_len=64, positions="alibi")
    )
    other.load_state_dict(model.state_dict())  # same weights, another scheme
    generate_poems(other, tok, 4, seed=1, max_chars=12, cache=True)
    assert len(list(tmp_path.glob("poems-*.pt"))) == 2


def test_the_offset_profile_finds_a_head_that_reads_one_line_up():
    T = 20
    six_back = torch.zeros(T, T)
    for i in range(T):
        six_back[i, max(i - 6, 0)] = 1.0  # each query reads 6 back (or the first key)
    uniform = causal_mask(T).float()
    uniform = uniform / uniform.sum(-1, keepdim=True)  # (T, T)
    weights = torch.stack([six_back, uniform])[None]  # (1, 2, T, T): two heads
    profile = offset_profile([weights, weights], max_offset=8)  # (L, H, 9)
    assert profile.shape == (2, 2, 9)
    assert int(profile[0, 0].argmax()) == 6 and profile[0, 0, 6] == 1.0
    assert profile[0, 1, 0] > profile[0, 1, 8]  # early queries see few keys
    with pytest.raises(ValueError, match=r"max_offset must be in \[0, T\)"):
        offset_profile([weights], max_offset=T)
    with pytest.raises(ValueError, match=r"\(B, H, T, T\)"):
        offset_profile([weights[0]], max_offset=2)


def test_torch_threads_sets_and_restores():
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError):
        with torch_threads(1):
            assert torch.get_num_threads() == 1
            raise RuntimeError("inside")
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="n must be a positive"):
        with torch_threads(0):
            pass


# --- bad input: a named error, never a silent wrong answer or NaN ---
QUATRAIN = "床前明月光，疑是地上霜。举头望明月，低头思故乡。"
TINY = CharTokenizer("\n春风")
TINY_MODEL = CausalDecoder(DecoderConfig(TINY.vocab_size, 8, 2, 1, max_len=16))
BAD_INPUTS = {
    # one poem passed as the list of poems was read character by character
    "form_share(str)": (lambda: form_share(QUATRAIN), TypeError, "got one str"),
    "copy_share(str, str)": (lambda: copy_share("ab", "ab"), TypeError, "got one str"),
    "copy_share(corpus str)": (
        lambda: copy_share(["ab"], "ab"),
        TypeError,
        "corpus must be a sequence of poems",
    ),
    "is_regular_verse(None)": (
        lambda: is_regular_verse(None),
        TypeError,
        "poem must be a str",
    ),
    "non-square weights": (
        lambda: offset_profile([torch.rand(1, 1, 3, 4)], 1),
        ValueError,
        r"must be square .* got \(1, 1, 3, 4\)",
    ),
    "max_chars = 0": (
        lambda: generate_poems(TINY_MODEL, TINY, 2, max_chars=0),
        ValueError,
        "max_chars must be a positive int",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS, ids=list(BAD_INPUTS))
def test_bad_input_to_the_poetry_helpers_is_named(case):
    call, error, message = BAD_INPUTS[case]
    with pytest.raises(error, match=message):
        call()
