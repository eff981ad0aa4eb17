"""A character-level language model's data side: characters, windows, losses.

Taught in chapter 10-decoder-char-lm: a tokenizer over characters, random
training windows, the next-token loss, a unigram baseline and a deterministic
evaluation. Training and sampling are in :mod:`mha_book.lm.training`, the
checkpoint in :mod:`mha_book.lm.checkpoint`; the model is
:class:`mha_book.models.decoder.CausalDecoder`.

Legend: B batch, T block (context) length, V vocabulary size, N corpus length.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch
import torch.nn.functional as F

from mha_book._checks import (
    check_positive_int,
    check_rank,
    check_tensor,
    check_token_ids,
    fmt_shape,
)
from mha_book.models.decoder import CausalDecoder

__all__ = [
    "CharTokenizer",
    "split_ids",
    "get_batch",
    "lm_loss",
    "unigram_loss",
    "evaluate",
]


class CharTokenizer:
    """Maps each distinct character to an id (sorted order) and back.

    Args:
        chars: The vocabulary; duplicates are dropped and the rest sorted.

    Example:
        >>> tok = CharTokenizer.from_text("to be or not")
        >>> tok.vocab_size, tok.encode("to be").shape
        (7, torch.Size([5]))
        >>> tok.decode(tok.encode("not"))
        'not'
    """

    def __init__(self, chars: str | Sequence[str]) -> None:
        chars = sorted(set(chars))
        if not chars or any(not isinstance(c, str) or len(c) != 1 for c in chars):
            raise ValueError(
                "chars must be a non-empty collection of single characters"
            )
        self.chars = "".join(chars)
        self._id = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """The tokenizer whose vocabulary is every character of ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return cls(text)

    @property
    def vocab_size(self) -> int:
        """Number of distinct characters V."""
        return len(self.chars)

    def encode(self, text: str, *, name: str = "text") -> torch.Tensor:
        """Ids of the characters of ``text``, shape ``(N,)``, dtype long.

        ``name`` is the argument named in errors (a caller's own name for it).
        """
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a str, got {type(text).__name__}")
        unknown = sorted(set(text) - self._id.keys())
        if unknown:
            raise ValueError(
                f"{name} has characters outside the vocabulary: {unknown[:10]!r}"
            )
        return torch.tensor([self._id[c] for c in text], dtype=torch.long)

    def decode(self, ids: torch.Tensor | Sequence[int]) -> str:
        """The text of a sequence of ids: a 1-D integer tensor or a sequence of ints."""
        if isinstance(ids, torch.Tensor):
            ids = check_token_ids(ids, "ids", 1, "(N,)").tolist()
        elif isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
            raise TypeError(
                "ids must be a 1-D tensor or a sequence of ints, "
                f"got {type(ids).__name__}"
            )
        if any(isinstance(i, bool) or not isinstance(i, numbers.Integral) for i in ids):
            raise TypeError(f"ids must be ints, got {ids[:5]!r}")
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:  # chars[-1] would silently give the last character
            raise ValueError(
                f"ids must lie in [0, vocab_size) = [0, {self.vocab_size}), "
                f"got {bad[:5]}"
            )
        return "".join(self.chars[i] for i in ids)

    def __repr__(self) -> str:
        return f"CharTokenizer(vocab_size={self.vocab_size})"


def split_ids(
    ids: torch.Tensor, val_fraction: float = 0.1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Split a corpus into a training head and a validation tail (no shuffling).

    Example:
        >>> train, val = split_ids(torch.arange(100))
        >>> train.shape, val.shape
        (torch.Size([90]), torch.Size([10]))
    """
    check_token_ids(ids, "ids", 1, "(N,)")
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, numbers.Real):
        raise TypeError(
            f"val_fraction must be a float in (0, 1), got {type(val_fraction).__name__}"
        )
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
    n_train = int(round(len(ids) * (1.0 - val_fraction)))
    if not 0 < n_train < len(ids):
        raise ValueError(
            f"val_fraction = {val_fraction} of ids with {len(ids)} tokens leaves "
            "the training or the validation part empty"
        )
    return ids[:n_train], ids[n_train:]


def get_batch(
    ids: torch.Tensor,
    batch_size: int,
    block_size: int,
    *,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of the corpus and the same windows shifted by one.

    Shape:
        - ids: ``(N,)``
        - x, y: ``(B, T)`` with ``y[:, t] == ids[start + t + 1]``, the target
          of ``x[:, t]``

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x, y = get_batch(torch.arange(100), 4, 8, generator=g)
        >>> x.shape, bool((y == x + 1).all())
        (torch.Size([4, 8]), True)
    """
    check_token_ids(ids, "ids", 1, "(N,)")
    batch_size = check_positive_int(batch_size, "batch_size")
    block_size = check_positive_int(block_size, "block_size")
    if len(ids) < block_size + 1:
        raise ValueError(
            f"ids must hold at least block_size + 1 = {block_size + 1} tokens, "
            f"got {len(ids)}"
        )
    starts = torch.randint(
        len(ids) - block_size, (batch_size,), generator=generator
    )  # (B,)
    offsets = torch.arange(block_size + 1)  # (T + 1,)
    windows = ids[starts[:, None] + offsets]  # (B, T + 1)
    return windows[:, :-1], windows[:, 1:]  # (B, T), (B, T)


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats per token) of next-token logits against targets.

    Shape:
        - logits: ``(B, T, V)``
        - targets: ``(B, T)``, each in ``[0, V)``

    Example:
        >>> logits = torch.zeros(2, 5, 8)  # every token equally likely: log 8 nats
        >>> loss = lm_loss(logits, torch.randint(0, 8, (2, 5)))
        >>> loss.shape, bool(torch.isclose(loss, torch.tensor(8.0).log()))
        (torch.Size([]), True)
    """
    check_tensor(logits, "logits")
    check_rank(logits, "logits", 3, "(B, T, V)")
    if not logits.is_floating_point():
        raise TypeError(f"logits must be a float tensor, got dtype {logits.dtype}")
    check_token_ids(targets, "targets", 2, "(B, T)")
    V = logits.shape[-1]
    if targets.numel() and (int(targets.min()) < 0 or int(targets.max()) >= V):
        raise ValueError(
            f"targets must hold token ids in [0, V) = [0, {V}), "
            f"got ids from {int(targets.min())} to {int(targets.max())}"
        )
    if logits.shape[:2] != targets.shape:
        raise ValueError(
            f"targets must have shape (B, T) = {fmt_shape(logits.shape[:2])}, "
            f"got {fmt_shape(targets.shape)}"
        )
    return F.cross_entropy(
        logits.flatten(0, 1), targets.flatten()
    )  # (B·T, V) vs (B·T,)


def unigram_loss(
    train_ids: torch.Tensor, eval_ids: torch.Tensor, vocab_size: int
) -> float:
    """Cross-entropy (nats per character) of a model that ignores all context.

    It predicts every character with its frequency in ``train_ids`` (add-one
    smoothed): the loss a language model must beat to have learnt anything
    beyond "e is common".

    Example:
        >>> ids = torch.tensor([0, 1])
        >>> round(unigram_loss(ids, ids, 2), 4)  # log 2
        0.6931
    """
    counts = torch.bincount(train_ids, minlength=vocab_size).double() + 1.0  # (V,)
    log_p = counts.log() - counts.sum().log()  # (V,)
    return float(-log_p[eval_ids].mean())


@torch.no_grad()
def evaluate(
    model: CausalDecoder,
    ids: torch.Tensor,
    block_size: int,
    *,
    batch_size: int = 64,
    max_windows: int | None = None,
) -> float:
    """Mean loss over consecutive non-overlapping windows of ``ids`` (deterministic).

    Args:
        model: The language model; evaluated in eval mode, its mode is restored.
        ids: Token ids ``(N,)``.
        block_size: Window length T.
        batch_size: Windows per forward pass.
        max_windows: Use only the first windows (None: all of them).

    Returns:
        The loss in nats per token, averaged over every predicted token.

    Example:
        >>> from mha_book.models.decoder import CausalDecoder, DecoderConfig
        >>> model = CausalDecoder(DecoderConfig(
        ...     vocab_size=10, embed_dim=16, num_heads=2, num_layers=1, max_len=8))
        >>> loss = evaluate(model, torch.randint(0, 10, (100,)), 8, max_windows=4)
        >>> type(loss).__name__, model.training  # a float; the mode is restored
        ('float', True)
    """
    check_token_ids(ids, "ids", 1, "(N,)")
    block_size = check_positive_int(block_size, "block_size")
    batch_size = check_positive_int(batch_size, "batch_size")
    n = (len(ids) - 1) // block_size
    if max_windows is not None:
        n = min(n, max_windows)
    if n < 1:
        raise ValueError(
            f"ids must hold at least block_size + 1 = {block_size + 1} tokens, "
            f"got {len(ids)}"
        )
    starts = torch.arange(n) * block_size  # (n,)
    offsets = torch.arange(block_size + 1)  # (T + 1,)
    was_training = model.training
    model.eval()
    total = 0.0
    try:
        for chunk in starts.split(batch_size):
            windows = ids[chunk[:, None] + offsets]  # (B, T + 1)
            logits, _ = model(windows[:, :-1])  # (B, T, V)
            total += float(lm_loss(logits, windows[:, 1:])) * len(chunk)
    finally:
        model.train(was_training)
    return total / n
