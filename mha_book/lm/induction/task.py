"""Random tokens with a repeated segment: what only the context can predict.

Each sequence is T tokens drawn uniformly from V, except that a segment of L
tokens appears twice: a first copy at position ``first`` and a repeat at
``second >= first + L``, with random tokens around and between them. The
distance ``second - first`` varies from sequence to sequence, so no position
tells where the earlier copy is; and the tokens are random, so no statistics
of the data predict them. Inside the repeat, each token but the first can be
predicted only by finding the earlier copy of the token before it and reading
the token that followed it there: what an induction head does.

A prediction at position t is of token t + 1. :func:`copy_masks` marks, for
the first copy and for the repeat, the positions whose next token is the
segment's 2nd, ..., L-th; :func:`~mha_book.lm.induction.measures.prefix_matching_scores` reads, for a
query in the repeat, the weight on the key an induction head should find.

Legend: B batch, T length, L segment length, V vocabulary.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from mha_book._checks import check_positive_int

__all__ = ["InductionTask", "InductionBatch", "induction_batch", "copy_masks"]


@dataclass(frozen=True)
class InductionTask:
    """The sizes of the repeated-segment task, checked when made.

    Args:
        vocab_size: Tokens V (at least 2).
        seq_len: Sequence length T.
        segment_len: Segment length L (at least 2); ``2 L <= T``.
        min_distance: The repeat starts at least this far after the first
            copy (at least L: the copies do not overlap).

    Example:
        >>> task = InductionTask(vocab_size=32, seq_len=32, segment_len=8)
        >>> task.distances, round(task.chance, 3)
        (range(8, 25), 3.466)
    """

    vocab_size: int = 32
    seq_len: int = 32
    segment_len: int = 8
    min_distance: int | None = None

    def __post_init__(self) -> None:
        V = check_positive_int(self.vocab_size, "vocab_size")
        T = check_positive_int(self.seq_len, "seq_len")
        L = check_positive_int(self.segment_len, "segment_len")
        if V < 2 or L < 2:
            raise ValueError(
                f"vocab_size and segment_len must be at least 2, got {V} and {L}"
            )
        if 2 * L > T:
            raise ValueError(
                f"segment_len must be at most seq_len / 2 = {T // 2} (two copies), "
                f"got {L}"
            )
        d = L if self.min_distance is None else self.min_distance
        check_positive_int(d, "min_distance")
        if not L <= d <= T - L:
            raise ValueError(
                f"min_distance must be in [segment_len, seq_len - segment_len] = "
                f"[{L}, {T - L}], got {d}"
            )

    @property
    def distances(self) -> range:
        """The distances ``second - first`` the task draws from."""
        low = self.segment_len if self.min_distance is None else self.min_distance
        return range(low, self.seq_len - self.segment_len + 1)

    @property
    def chance(self) -> float:
        """The loss of a uniform guess in nats, log V (the first copy's yardstick)."""
        return math.log(self.vocab_size)


@dataclass(frozen=True)
class InductionBatch:
    """A batch of :class:`InductionTask` sequences.

    Attributes:
        tokens: ``(B, T)`` token ids.
        first: ``(B,)`` where each sequence's first copy starts.
        second: ``(B,)`` where its repeat starts.
        segment_len: L.

    Example:
        >>> b = induction_batch(InductionTask(16, 12, 3), 2)
        >>> b.tokens.shape, b.first.shape
        (torch.Size([2, 12]), torch.Size([2]))
    """

    tokens: torch.Tensor
    first: torch.Tensor
    second: torch.Tensor
    segment_len: int


def induction_batch(
    task: InductionTask, batch_size: int, generator: torch.Generator | None = None
) -> InductionBatch:
    """``batch_size`` random sequences of ``task``, drawn from ``generator``.

    The distance is uniform over ``task.distances``, then the first copy's
    start uniform over the places where both copies fit.

    Shape:
        - tokens: ``(B, T)``; first, second: ``(B,)``

    Example:
        >>> task = InductionTask(vocab_size=16, seq_len=20, segment_len=5)
        >>> b = induction_batch(task, 4, torch.Generator().manual_seed(0))
        >>> offsets = torch.arange(5)
        >>> a = b.tokens.gather(1, b.first[:, None] + offsets)  # (B, L)
        >>> r = b.tokens.gather(1, b.second[:, None] + offsets)  # (B, L)
        >>> bool((a == r).all()), bool((b.second - b.first >= 5).all())
        (True, True)
    """
    if not isinstance(task, InductionTask):
        raise TypeError(f"task must be an InductionTask, got {type(task).__name__}")
    B = check_positive_int(batch_size, "batch_size")
    T, L, V = task.seq_len, task.segment_len, task.vocab_size
    low, high = task.distances.start, task.distances.stop  # high: one past
    distance = torch.randint(low, high, (B,), generator=generator)  # (B,)
    room = T - L - distance + 1  # (B,) the first copy's possible starts
    first = (torch.rand(B, generator=generator) * room).long()  # (B,)
    second = first + distance  # (B,)
    tokens = torch.randint(0, V, (B, T), generator=generator)  # (B, T)
    offsets = torch.arange(L)  # (L,)
    segment = tokens.gather(1, first[:, None] + offsets)  # (B, L)
    tokens.scatter_(1, second[:, None] + offsets, segment)  # the repeat
    return InductionBatch(tokens, first, second, L)


def copy_masks(batch: InductionBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """``(first, repeat)``: the positions whose next token is the 2nd, ...,
    L-th token of the first copy, and of the repeat. A loss at position t
    predicts token t + 1, so these are the positions ``first + k`` and
    ``second + k`` for k = 0, ..., L - 2, each in order.

    Shape:
        - first, repeat: ``(B, T)`` bool, L - 1 True per row

    Example:
        >>> b = InductionBatch(torch.zeros(1, 10, dtype=torch.long),
        ...                    torch.tensor([1]), torch.tensor([5]), 3)
        >>> first, repeat = copy_masks(b)
        >>> first.nonzero()[:, 1].tolist(), repeat.nonzero()[:, 1].tolist()
        ([1, 2], [5, 6])
    """
    if not isinstance(batch, InductionBatch):
        raise TypeError(f"batch must be an InductionBatch, got {type(batch).__name__}")
    B, T = batch.tokens.shape
    offsets = torch.arange(batch.segment_len - 1)  # (L - 1,)
    masks = []
    for start in (batch.first, batch.second):
        mask = torch.zeros(B, T, dtype=torch.bool)  # (B, T)
        mask.scatter_(1, start[:, None] + offsets, True)
        masks.append(mask)
    return masks[0], masks[1]
