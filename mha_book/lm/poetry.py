"""Five-character Tang verse: the form a model must learn, and how to measure it.

Taught in chapter 15-tang-poems. A poem of the corpus
(:func:`mha_book.lm.corpus.load_tang_poems`) is 4 or 8 lines of exactly five
characters; odd lines end with "，" and even lines with "。", so the text is
periodic with period 6. The functions here measure what a reader of Tang verse
checks first (:func:`is_regular_verse`, :func:`form_share`,
:func:`copy_share`), generate poems from a trained decoder
(:func:`generate_poems`) and find which heads look back one line
(:func:`offset_profile`). The chapter's count-based baseline is
:func:`mha_book.lm.ngram.tuned_bigram`.

Legend: B batch, L layers, H heads, T length, V vocabulary size.
"""

from __future__ import annotations

import json
import operator
import re
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path

import torch

from mha_book._checks import (
    check_positive_int,
    check_rank,
    check_tensor,
)
from mha_book.lm.artifacts import cached
from mha_book.lm.charlm import CharTokenizer
from mha_book.models.decoder import CausalDecoder

__all__ = [
    "LINE_CHARS",
    "is_regular_verse",
    "form_share",
    "copy_share",
    "generate_poems",
    "offset_profile",
]

#: Characters per line; with its punctuation mark a line takes LINE_CHARS + 1.
LINE_CHARS = 5
_CJK = r"[\u3400-\u4dbf\u4e00-\u9fff\U00020000-\U0003ffff]"  # as tools/ship_poems.py
_VERSE = re.compile(
    rf"(?:{_CJK}{{5}}，{_CJK}{{5}}。){{2}}(?:(?:{_CJK}{{5}}，{_CJK}{{5}}。){{2}})?"
)


def is_regular_verse(poem: str) -> bool:
    """True if ``poem`` is 4 or 8 lines of five characters, "，" and "。" alternating.

    Example:
        >>> is_regular_verse("床前明月光，疑是地上霜。举头望明月，低头思故乡。")
        True
        >>> is_regular_verse("床前明月光，疑是地上霜。举头望明月。")  # 3 lines
        False
    """
    if not isinstance(poem, str):
        raise TypeError(f"poem must be a str, got {type(poem).__name__}")
    return _VERSE.fullmatch(poem) is not None


def _check_poems(poems: object, name: str) -> list[str]:
    """A sequence of poems (strs), not one poem read character by character."""
    if isinstance(poems, str):
        raise TypeError(
            f"{name} must be a sequence of poems, got one str (a str would be "
            f"read character by character); pass [{name}]"
        )
    if not isinstance(poems, Iterable):
        raise TypeError(
            f"{name} must be a sequence of poems, got {type(poems).__name__}"
        )
    poems = list(poems)
    for i, poem in enumerate(poems):
        if not isinstance(poem, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(poem).__name__}")
    return poems


def form_share(poems: Sequence[str]) -> float:
    """The fraction of ``poems`` that pass :func:`is_regular_verse`.

    Example:
        >>> form_share(["白日依山尽，黄河入海流。欲穷千里目，更上一层楼。", "白日"])
        0.5
    """
    poems = _check_poems(poems, "poems")
    if not poems:
        raise ValueError("poems must hold at least one poem, got none")
    return sum(is_regular_verse(p) for p in poems) / len(poems)


def copy_share(poems: Sequence[str], corpus: Sequence[str]) -> float:
    """The fraction of ``poems`` found verbatim among the poems of ``corpus``.

    Example:
        >>> copy_share(["甲乙", "丙丁"], ["甲乙", "戊己"])
        0.5
    """
    poems = _check_poems(poems, "poems")
    if not poems:
        raise ValueError("poems must hold at least one poem, got none")
    known = set(_check_poems(corpus, "corpus"))
    return sum(p in known for p in poems) / len(poems)


def generate_poems(
    model: CausalDecoder,
    tokenizer: CharTokenizer,
    num: int,
    *,
    temperature: float = 1.0,
    seed: int = 0,
    max_chars: int = 8 * (LINE_CHARS + 1),
    cache: bool = False,
) -> list[str]:
    """``num`` poems, each sampled after a newline and cut at the next one.

    The corpus puts one poem per line, so a newline is where a poem starts and
    ends. A sample with no newline within ``max_chars`` is kept whole (and
    fails :func:`is_regular_verse` if it is longer than a poem). With
    ``cache=True`` the poems of an identical call (same weights, vocabulary
    and arguments) are loaded from the artifact cache
    (:mod:`mha_book.lm.artifacts`) instead of sampled again.

    Example:
        >>> tok = CharTokenizer("\\n春风")
        >>> from mha_book.models.decoder import DecoderConfig
        >>> model = CausalDecoder(DecoderConfig(tok.vocab_size, 8, 2, 1, max_len=16))
        >>> len(generate_poems(model, tok, 3, max_chars=10))
        3
    """
    num = check_positive_int(num, "num")
    max_chars = check_positive_int(max_chars, "max_chars")
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    seed = operator.index(seed)  # numpy's integers too
    newline = tokenizer.encode("\n", name="tokenizer's newline")  # (1,)

    def sample() -> list[str]:
        start = newline.expand(num, 1).contiguous()  # (B, 1)
        generator = torch.Generator().manual_seed(seed)
        out = model.generate(
            start, max_chars, temperature=temperature, generator=generator
        )  # (B, 1 + max_chars)
        texts = [tokenizer.decode(row[1:]) for row in out]  # drop the first newline
        return [text.split("\n", 1)[0] for text in texts]

    if not cache:
        return sample()
    weights = (asdict(model.config), model.state_dict())  # rope, alibi: same keys
    key = (weights, tokenizer.chars, num, temperature, seed, max_chars)
    poems, _ = cached(
        "poems",
        key,
        sample,
        save=lambda poems, path: Path(path).write_text(json.dumps(poems), "utf-8"),
        load=lambda path: json.loads(Path(path).read_text("utf-8")),
        code=[__name__, type(model).__module__],  # sampling and the model's forward
        kind=list,
    )
    return poems


def offset_profile(weights: Sequence[torch.Tensor], max_offset: int) -> torch.Tensor:
    """Mean attention each head gives to the key ``d`` positions back, d = 0..max_offset.

    For offset d, the weight ``w[b, h, i, i - d]`` is averaged over the batch and
    over every query ``i >= d``. A head that reads the character one line up
    (five characters and a punctuation mark: d = 6) stands out at that offset.

    Args:
        weights: Causal attention weights of each layer, e.g. from
            ``CausalDecoder(..., need_weights=True)``.
        max_offset: Largest offset, below T.

    Shape:
        - weights: L tensors ``(B, H, T, T)``
        - output: ``(L, H, max_offset + 1)``

    Example:
        >>> w = torch.eye(4).expand(1, 2, 4, 4)  # every query reads itself
        >>> offset_profile([w], 2)[0].tolist()
        [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]
    """
    max_offset = check_positive_int(max_offset, "max_offset", allow_zero=True)
    if (
        isinstance(weights, torch.Tensor)
        or not isinstance(weights, Sequence)
        or not weights
    ):
        raise ValueError(
            "weights must be a non-empty list of (B, H, T, T) tensors, one per layer, "
            f"got {weights!r:.60}"
        )
    rows = []
    for layer, w in enumerate(weights):
        check_tensor(w, f"weights[{layer}]")
        check_rank(w, f"weights[{layer}]", 4, "(B, H, T, T)")
        if w.shape[0] == 0:  # a mean over no sequences is NaN
            raise ValueError(
                f"weights[{layer}] must hold at least one sequence, got B = 0"
            )
        T = w.shape[-1]
        if w.shape[-2] != T:
            raise ValueError(
                f"weights[{layer}] must be square in its last two dimensions "
                f"(self-attention, (B, H, T, T)), got {tuple(w.shape)}"
            )
        if not 0 <= max_offset < T:
            raise ValueError(
                f"max_offset must be in [0, T) = [0, {T}), got {max_offset}"
            )
        mean_w = w.double().mean(0)  # (H, T, T)
        rows.append(
            torch.stack(
                [
                    mean_w.diagonal(-d, dim1=-2, dim2=-1).mean(-1)
                    for d in range(max_offset + 1)
                ],
                dim=-1,
            )  # (H, max_offset + 1)
        )
    return torch.stack(rows)  # (L, H, max_offset + 1)
