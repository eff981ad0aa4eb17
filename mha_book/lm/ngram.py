"""Count-based baselines: the bigram model interpolated with the unigram model.

Taught in chapter 10-decoder-char-lm (the loss a model that sees one character
back reaches) and used again in chapter 15-tang-poems. A bigram model predicts
the next character from the current one with the frequencies counted on the
training text; pairs never seen there would get probability 0, so it is mixed
with the unigram model (add-one smoothed character frequencies):

    p(b | a) = λ · c(a, b) / c(a) + (1 − λ) · p(b).

The weight λ is tuned on held-out text (the tail of the training text, never
the validation text) by :func:`tuned_bigram`, which is the baseline the pages
use. Counts are kept sparse: a vocabulary of 5,821 characters has 34 million
pairs, of which a corpus holds a few hundred thousand.

Legend: N corpus length, V vocabulary size, B samples.
"""

from __future__ import annotations

import numbers

import torch

from mha_book._checks import check_positive_int, check_token_ids

__all__ = ["InterpolatedBigram", "tuned_bigram"]


def _check_weight(weight: object) -> float:
    if isinstance(weight, bool) or not isinstance(weight, numbers.Real):
        raise TypeError(
            f"weight must be a float in [0, 1), got {type(weight).__name__}"
        )
    if not 0.0 <= float(weight) < 1.0:
        raise ValueError(
            f"weight must be in [0, 1) (1 leaves unseen pairs at 0), got {weight}"
        )
    return float(weight)


class InterpolatedBigram:
    """The bigram model interpolated with the add-one unigram model.

    ``p(b | a) = weight · c(a, b) / c(a) + (1 − weight) · p(b)``, counted on
    ``ids``; after a character that never precedes another in ``ids``
    (``c(a) = 0``) the unigram model alone. Every probability is positive and
    every row sums to 1.

    Args:
        ids: Training token ids.
        vocab_size: V.
        weight: λ, the bigram's share, in ``[0, 1)``; :func:`tuned_bigram`
            picks it on held-out text.

    Shape:
        - ids: ``(N,)``
        - :meth:`probs`: ``(B,)`` current tokens to ``(B, V)`` rows

    Example:
        >>> model = InterpolatedBigram(torch.tensor([0, 1, 0, 1, 0]), 2, weight=0.5)
        >>> model.probs(torch.tensor([0])).shape
        torch.Size([1, 2])
        >>> [round(p, 4) for p in model.probs(torch.tensor([0]))[0].tolist()]
        [0.2857, 0.7143]
    """

    def __init__(self, ids: torch.Tensor, vocab_size: int, weight: float) -> None:
        V = check_positive_int(vocab_size, "vocab_size")
        ids = check_token_ids(ids, "ids", 1, "(N,)", vocab_size=V)
        if len(ids) < 2:
            raise ValueError(
                f"ids must hold at least 2 tokens (one pair), got {len(ids)}"
            )
        self.vocab_size, self.weight = V, _check_weight(weight)
        unigram = torch.bincount(ids, minlength=V).double() + 1.0  # (V,): add-one
        self.unigram = unigram / unigram.sum()  # (V,)
        pairs = ids[:-1] * V + ids[1:]  # (N - 1,): one key a·V + b per pair
        self._keys, self._counts = torch.unique(pairs, return_counts=True)  # sorted
        self._row_counts = torch.bincount(ids[:-1], minlength=V)  # (V,): c(a)

    def _bigram(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """c(a, b) / c(a) for each pair, with the unigram where c(a) = 0: ``(n,)``."""
        keys = a * self.vocab_size + b  # (n,)
        at = torch.searchsorted(self._keys, keys).clamp(max=len(self._keys) - 1)
        counts = torch.where(self._keys[at] == keys, self._counts[at], 0).double()
        rows = self._row_counts[a].double()  # (n,)
        return torch.where(rows > 0, counts / rows.clamp(min=1), self.unigram[b])

    def log_likelihoods(self, ids: torch.Tensor) -> torch.Tensor:
        """``log p(ids[t + 1] | ids[t])`` for every t: ``(N - 1,)``."""
        ids = check_token_ids(ids, "ids", 1, "(N,)", vocab_size=self.vocab_size)
        if len(ids) < 2:
            raise ValueError(
                f"ids must hold at least 2 tokens (one to predict), got {len(ids)}"
            )
        a, b = ids[:-1], ids[1:]
        p = self.weight * self._bigram(a, b) + (1 - self.weight) * self.unigram[b]
        return p.log()

    def loss(self, ids: torch.Tensor) -> float:
        """Cross-entropy (nats per token) of predicting ``ids[1:]`` from ``ids[:-1]``."""
        return float(-self.log_likelihoods(ids).mean())

    def probs(self, current: torch.Tensor) -> torch.Tensor:
        """The distribution of the next token after each of ``current``: ``(B, V)``."""
        current = check_token_ids(
            current, "current", 1, "(B,)", vocab_size=self.vocab_size
        )
        V, w = self.vocab_size, self.weight
        totals = self._row_counts[current]  # (B,): c(a)
        share = 1.0 - w * (totals > 0).double()  # (B,): 1 - λ, or 1 where c(a) = 0
        rows = share[:, None] * self.unigram  # (B, V): the unigram's part
        starts = torch.searchsorted(self._keys, current * V)  # (B,): row a's pairs
        lengths = torch.searchsorted(self._keys, (current + 1) * V) - starts  # (B,)
        row = torch.repeat_interleave(torch.arange(len(current)), lengths)  # (P,)
        first = torch.repeat_interleave(starts - lengths.cumsum(0) + lengths, lengths)
        at = first + torch.arange(len(row))  # (P,): every pair of every row
        cols = self._keys[at] - current[row] * V  # (P,): b of each pair
        rows.index_put_(
            (row, cols), w * self._counts[at].double() / totals[row], accumulate=True
        )
        return rows

    def sample(
        self, start: int, length: int, *, num: int, generator: torch.Generator
    ) -> torch.Tensor:
        """``num`` sequences of ``length`` tokens after the token ``start``: ``(num, length)``."""
        check_positive_int(start, "start", allow_zero=True)
        if start >= self.vocab_size:
            raise ValueError(
                f"start must be in [0, vocab_size) = [0, {self.vocab_size}), got {start}"
            )
        length = check_positive_int(length, "length")
        num = check_positive_int(num, "num")
        if not isinstance(generator, torch.Generator):
            raise TypeError(
                f"generator must be a torch.Generator, got {type(generator).__name__}"
            )
        out = torch.full((num, length + 1), start, dtype=torch.long)  # (B, 1 + length)
        for t in range(length):
            cdf = self.probs(out[:, t]).cumsum(-1)  # (B, V)
            u = torch.rand(num, 1, generator=generator, dtype=cdf.dtype)  # (B, 1)
            pick = torch.searchsorted(cdf, u * cdf[:, -1:])  # (B, 1): inverse CDF
            out[:, t + 1] = pick[:, 0].clamp(max=self.vocab_size - 1)
        return out[:, 1:]

    def __repr__(self) -> str:
        return f"InterpolatedBigram(vocab_size={self.vocab_size}, weight={self.weight:.2f})"


def tuned_bigram(
    train_ids: torch.Tensor, vocab_size: int, *, heldout_fraction: float = 0.1
) -> InterpolatedBigram:
    """The interpolated bigram model, its weight tuned on held-out training text.

    The last ``heldout_fraction`` of ``train_ids`` is held out: counted on
    the rest, the model's loss on the held-out part is a convex function of
    λ, and the λ that minimises it is found by ternary search. The model
    returned is counted on all of ``train_ids`` with that λ. The validation
    text plays no part.

    Args:
        train_ids: Training token ids.
        vocab_size: V.
        heldout_fraction: The share of ``train_ids`` held out to tune λ.

    Shape:
        - train_ids: ``(N,)``

    Returns:
        An :class:`InterpolatedBigram`; its ``weight`` is the tuned λ.

    Example:
        >>> ids = torch.tensor([0, 1, 2] * 30 + [0, 2, 1])  # (93,)
        >>> model = tuned_bigram(ids, 3)
        >>> model.weight > 0.5  # the pairs repeat: trust them
        True
    """
    V = check_positive_int(vocab_size, "vocab_size")
    train_ids = check_token_ids(train_ids, "train_ids", 1, "(N,)", vocab_size=V)
    if isinstance(heldout_fraction, bool) or not isinstance(
        heldout_fraction, numbers.Real
    ):
        raise TypeError(
            f"heldout_fraction must be a float in (0, 1), got {type(heldout_fraction).__name__}"
        )
    if not 0.0 < heldout_fraction < 1.0:
        raise ValueError(f"heldout_fraction must be in (0, 1), got {heldout_fraction}")
    n_fit = int(round(len(train_ids) * (1.0 - heldout_fraction)))
    if n_fit < 2 or len(train_ids) - n_fit < 2:
        raise ValueError(
            f"heldout_fraction = {heldout_fraction} of train_ids with {len(train_ids)} "
            "tokens leaves fewer than 2 tokens to count or to tune on"
        )
    fit, heldout = train_ids[:n_fit], train_ids[n_fit:]
    counted = InterpolatedBigram(fit, V, weight=0.0)
    a, b = heldout[:-1], heldout[1:]
    bigram, unigram = counted._bigram(a, b), counted.unigram[b]  # (n,), (n,)

    def heldout_loss(w: float) -> float:
        return float(-(w * bigram + (1 - w) * unigram).log().mean())

    lo, hi = 0.0, 1.0 - 1e-6  # the loss is convex in λ: ternary search
    for _ in range(60):
        m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if heldout_loss(m1) <= heldout_loss(m2):
            hi = m2
        else:
            lo = m1
    return InterpolatedBigram(train_ids, V, weight=(lo + hi) / 2)
