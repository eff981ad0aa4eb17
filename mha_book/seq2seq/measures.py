"""What the date translator learned (chapters 16 and 18): exact
matches, where each cross-attention head looks against the ground truth, and
what the model loses when heads are silenced.

Legend: B examples, L decoder layers, H heads, T = 10 target characters, S source length.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence

import torch

from mha_book.models.layers import DecoderLayer
from mha_book.seq2seq.dates import TARGET_FIELDS, DateExample
from mha_book.seq2seq.translator import START, Translator, decode_ids, encode_texts

__all__ = [
    "translate",
    "exact_matches",
    "cross_attention",
    "alignment_shares",
    "silenced",
]


def translate(model: Translator, sources: Sequence[str], vocab: list[str]) -> list[str]:
    """The model's greedy translation of each source (cached decoding).

    Example:
        >>> from mha_book.seq2seq.translator import Translator, TranslatorConfig
        >>> vocab = ["<pad>", "<s>", *"0123456789-/"]
        >>> model = Translator(TranslatorConfig(vocab_size=len(vocab), embed_dim=16))
        >>> [len(out) for out in translate(model.eval(), ["2/12/2026", "1950"], vocab)]
        [10, 10]
    """
    _check_vocab(model, vocab)
    src = encode_texts(sources, vocab)  # (B, S)
    return decode_ids(model.greedy(src, len(TARGET_FIELDS), cached=True), vocab)


def _check_vocab(model: Translator, vocab: Sequence[str]) -> None:
    """The vocabulary must be the model's: one id per row of its embedding."""
    if not isinstance(model, Translator):
        raise TypeError(f"model must be a Translator, got {type(model).__name__}")
    if len(vocab) != model.config.vocab_size:
        raise ValueError(
            f"vocab must be the model's, of vocab_size = {model.config.vocab_size} "
            f"symbols, got {len(vocab)}"
        )


def _check_examples(examples: object) -> Sequence[DateExample]:
    if isinstance(examples, (str, bytes)) or not isinstance(examples, Sequence):
        raise TypeError(
            "examples must be a list of DateExample records (render_date), got "
            f"{type(examples).__name__}"
        )
    for i, ex in enumerate(examples):
        if not isinstance(ex, DateExample):
            raise TypeError(
                f"examples[{i}] must be a DateExample (render_date), got "
                f"{type(ex).__name__}"
            )
    return examples


def exact_matches(
    model: Translator, examples: Sequence[DateExample], vocab: list[str]
) -> list[bool]:
    """For each example, whether the whole translation is right.

    Example:
        >>> import datetime
        >>> from mha_book.seq2seq.dates import render_date
        >>> from mha_book.seq2seq.translator import Translator, TranslatorConfig
        >>> vocab = ["<pad>", "<s>", *"0123456789-/ dmy"]
        >>> model = Translator(TranslatorConfig(vocab_size=len(vocab), embed_dim=16))
        >>> examples = [render_date(datetime.date(2026, 12, 2), "num_dmy")] * 2
        >>> len(exact_matches(model.eval(), examples, vocab))  # untrained: wrong
        2
    """
    examples = _check_examples(examples)
    outputs = translate(model, [ex.source for ex in examples], vocab)
    return [out == ex.target for out, ex in zip(outputs, examples)]


@torch.no_grad()
def cross_attention(
    model: Translator, examples: Sequence[DateExample], vocab: list[str]
) -> torch.Tensor:
    """Each decoder layer's cross-attention weights while the model reads the
    right target (teacher forcing): ``(B, L, H, T, S)``, S the longest
    source; the columns of a shorter source's padding hold 0."""
    src = encode_texts([ex.source for ex in examples], vocab)  # (B, S)
    tgt = encode_texts([ex.target for ex in examples], vocab)  # (B, T)
    tgt_in = torch.cat([torch.full_like(tgt[:, :1], START), tgt[:, :-1]], 1)
    _, weights = model(src, tgt_in)  # L x (B, H, T, S)
    return torch.stack(weights, 1)  # (B, L, H, T, S)


def alignment_shares(
    model: Translator, examples: Sequence[DateExample], vocab: list[str]
) -> torch.Tensor:
    """For each head of each decoder layer, the share of target digits whose
    strongest cross-attention falls on the source span that carries them
    (:meth:`~mha_book.seq2seq.dates.DateExample.carriers`): ``(L, H)``.

    The query at target position t is the one that predicts character t.
    """
    weights = cross_attention(model, examples, vocab)  # (B, L, H, T, S)
    if weights.shape[-1] == 1:
        raise ValueError(
            "alignment_shares needs a model that attends to every source position, not a bottleneck"
        )
    strongest = weights.argmax(-1)  # (B, L, H, T)
    hits = torch.zeros(strongest.shape[1:3])  # (L, H)
    count = 0
    for b, ex in enumerate(examples):
        for t, span in enumerate(ex.carriers()):
            if span is not None:
                where = strongest[b, :, :, t]  # (L, H)
                hits += ((where >= span[0]) & (where < span[1])).float()
                count += 1
    if count == 0:
        raise ValueError("examples must hold at least one example, got none")
    return hits / count


@contextlib.contextmanager
def silenced(model: Translator, heads: Iterable[tuple[int, int]]) -> Iterator[None]:
    """Within the block, the cross-attention heads ``(layer, head)`` add nothing:
    their part of the input of ``out_proj`` is zeroed (in full and cached
    decoding alike)."""
    hooks = []
    by_layer: dict[int, list[int]] = {}
    for layer, head in _check_heads(model, heads):
        by_layer.setdefault(layer, []).append(head)
    for layer, silent in by_layer.items():
        decoder_layer = model.decoder[layer]
        assert isinstance(decoder_layer, DecoderLayer)  # what Translator stacks
        attention = decoder_layer.cross_attn
        keep = torch.ones(attention.num_heads, 1)  # (H, 1)
        keep[silent] = 0.0
        scale = keep.expand(
            -1, attention.embed_dim // attention.num_heads
        ).flatten()  # (E,)

        def hook(module, args, scale=scale):
            return (args[0] * scale.to(args[0]),)  # (B, T, E): head h is D columns

        hooks.append(attention.out_proj.register_forward_pre_hook(hook))
    try:
        yield
    finally:
        for handle in hooks:
            handle.remove()


def _check_heads(model: Translator, heads: object) -> list[tuple[int, int]]:
    """``heads`` as ``(layer, head)`` pairs of the decoder, or an error naming it."""
    L, H = len(model.decoder), model.config.num_heads
    if isinstance(heads, (str, bytes)) or not isinstance(heads, Iterable):
        raise TypeError(f"heads must be a list of (layer, head) pairs, got {heads!r}")
    pairs = []
    for pair in heads:
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in pair)
            or not (0 <= pair[0] < L and 0 <= pair[1] < H)
        ):
            raise ValueError(
                f"heads must hold (layer, head) pairs of ints in [0, {L}) x [0, {H}), "
                f"got {pair!r}"
            )
        pairs.append((pair[0], pair[1]))
    return pairs
