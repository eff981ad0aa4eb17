"""A task that needs two relations at once: recall the values of two keys.

Each example is a set of N key-value pairs, one token per pair, in random
order, then a query token that names two of the keys, a first and a second.
The answer is the ordered pair of their values, one of V² classes: to give
it, the model must find two tokens by their content (which key they hold),
not by their place, and keep apart which value came from which key.

One softmax head can take both pairs only by splitting its weight between
them, and must then weight them unequally to say which value is which; two
heads can each take one. That is the mechanism the head sweep measures.

Legend: B batch, N pairs, K distinct keys, V distinct values.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mha_book._checks import check_positive_int

__all__ = ["RecallTask", "RecallBatch", "recall_batch"]


@dataclass(frozen=True)
class RecallTask:
    """The sizes of the two-key recall task, checked when made.

    Args:
        num_pairs: Key-value pairs per example N (at least 2).
        num_keys: Distinct keys K (at least N: the keys of an example differ).
        num_values: Distinct values V (at least 2); the answer is one of V².

    Example:
        >>> task = RecallTask(num_pairs=8, num_keys=16, num_values=4)
        >>> task.num_classes, task.chance
        (16, 0.0625)
    """

    num_pairs: int = 8
    num_keys: int = 16
    num_values: int = 4

    def __post_init__(self) -> None:
        n = check_positive_int(self.num_pairs, "num_pairs")
        k = check_positive_int(self.num_keys, "num_keys")
        v = check_positive_int(self.num_values, "num_values")
        if n < 2:
            raise ValueError(f"num_pairs must be at least 2, got {n}")
        if k < n:
            raise ValueError(
                f"num_keys must be at least num_pairs = {n} (an example's keys "
                f"differ), got {k}"
            )
        if v < 2:
            raise ValueError(f"num_values must be at least 2, got {v}")

    @property
    def num_classes(self) -> int:
        """The number of possible answers V² (first value times V, plus the second)."""
        return self.num_values**2

    @property
    def chance(self) -> float:
        """The accuracy of a guess that ignores the input, 1 / V²."""
        return 1.0 / self.num_classes


@dataclass(frozen=True)
class RecallBatch:
    """A batch of examples of :class:`RecallTask`.

    Attributes:
        keys: ``(B, N)`` the key of each pair, all different within a row.
        values: ``(B, N)`` the value of each pair.
        asked: ``(B, 2)`` the first and the second key the query names.
        where: ``(B, 2)`` the positions of those two pairs.
        answer: ``(B,)`` ``V · value[first] + value[second]``.

    Example:
        >>> b = recall_batch(RecallTask(num_pairs=3, num_keys=5, num_values=2), 4)
        >>> b.values.shape, b.where.shape
        (torch.Size([4, 3]), torch.Size([4, 2]))
    """

    keys: torch.Tensor
    values: torch.Tensor
    asked: torch.Tensor
    where: torch.Tensor
    answer: torch.Tensor


def recall_batch(
    task: RecallTask, batch_size: int, generator: torch.Generator | None = None
) -> RecallBatch:
    """``batch_size`` random examples of ``task``, drawn from ``generator``.

    Shape:
        - keys, values: ``(B, N)``
        - asked, where: ``(B, 2)``
        - answer: ``(B,)``, each in ``[0, V²)``

    Example:
        >>> task = RecallTask(num_pairs=4, num_keys=6, num_values=3)
        >>> b = recall_batch(task, 5, torch.Generator().manual_seed(0))
        >>> b.keys.shape, b.asked.shape, b.answer.shape
        (torch.Size([5, 4]), torch.Size([5, 2]), torch.Size([5]))
        >>> bool((b.keys.gather(1, b.where) == b.asked).all())
        True
        >>> first, second = b.values.gather(1, b.where).unbind(1)
        >>> bool((b.answer == 3 * first + second).all())
        True
    """
    if not isinstance(task, RecallTask):
        raise TypeError(f"task must be a RecallTask, got {type(task).__name__}")
    B = check_positive_int(batch_size, "batch_size")
    N, K, V = task.num_pairs, task.num_keys, task.num_values
    # N different keys per row: the first N of a random order of all K
    keys = torch.rand(B, K, generator=generator).argsort(1)[:, :N]  # (B, N)
    values = torch.randint(0, V, (B, N), generator=generator)  # (B, N)
    where = torch.rand(B, N, generator=generator).argsort(1)[:, :2]  # (B, 2)
    asked = keys.gather(1, where)  # (B, 2)
    first, second = values.gather(1, where).unbind(1)  # (B,), (B,)
    return RecallBatch(keys, values, asked, where, V * first + second)
