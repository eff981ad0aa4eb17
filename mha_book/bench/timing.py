"""The timing protocol: paired, shuffled repeats of ``torch.utils.benchmark`` timings.

Each measurement is a :class:`torch.utils.benchmark.Timer` run
(``blocked_autorange``: blocks of calls until ``min_run_time`` has passed, the
median block time per call). Around it the benchmark keeps its own protocol:
within each repeat the implementations are timed one after the other in a
shuffled order (:func:`repeat_orders`), and a ratio is the median of the
per-repeat ratios (:func:`paired_ratio`), so a slow patch of a shared machine
moves both sides of a ratio alike.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence

import torch
from torch.utils import benchmark

__all__ = [
    "attention_flops",
    "time_call",
    "matmul_gflops",
    "repeat_orders",
    "paired_ratio",
]


def attention_flops(B: int, T: int, S: int, E: int) -> int:
    """Multiply-add FLOPs of one forward pass (projections + QK^T + PV).

    Example:
        >>> attention_flops(2, 128, 128, 512)
        603979776
    """
    projections = (
        2 * B * T * E * E * 2 + 2 * B * S * E * E * 2
    )  # q, out (T) and k, v (S)
    products = 2 * (2 * B * T * S * E)  # QK^T and PV, summed over heads: H·D = E
    return projections + products


def time_call(fn: Callable[[], object], min_run_time: float = 0.0) -> float:
    """Seconds per call of ``fn``, timed by :class:`torch.utils.benchmark.Timer`.

    With ``min_run_time > 0``: ``blocked_autorange``, the median over blocks of
    calls that together last at least that long. With 0: one call.
    ``Timer`` runs with the threads torch uses now (its own default is 1).

    Example:
        >>> time_call(lambda: torch.zeros(8).sum()) > 0
        True
    """
    timer = benchmark.Timer(
        "fn()", globals={"fn": fn}, num_threads=torch.get_num_threads()
    )
    if min_run_time > 0:
        return timer.blocked_autorange(min_run_time=min_run_time).median
    return timer.timeit(number=1).median


def matmul_gflops(n: int = 2048, repeats: int = 5) -> float:
    """Median GFLOP/s of an ``n x n`` float32 matmul on this machine."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    with torch.inference_mode():
        a @ b  # warm-up
        times = [time_call(lambda: a @ b) for _ in range(repeats)]
    return 2 * n**3 / statistics.median(times) / 1e9


def repeat_orders(names: Sequence[str], repeats: int, seed: int = 0) -> list[list[str]]:
    """One shuffled order of ``names`` per repeat, the same on every run.

    A fixed rotation would always time each implementation right after the
    same other one: one whose weights are still in the CPU caches or one
    whose are not, which tilts a ratio by a few percent at short lengths.
    Shuffling gives every implementation every predecessor.

    Example:
        >>> orders = repeat_orders(["a", "b", "c"], 4)
        >>> len(orders), all(sorted(o) == ["a", "b", "c"] for o in orders)
        (4, True)
    """
    rng = random.Random(seed)
    return [rng.sample(list(names), len(names)) for _ in range(repeats)]


def paired_ratio(
    ours: Sequence[float], reference: Sequence[float]
) -> tuple[float, float, float]:
    """Median and quartiles of ``ours[r] / reference[r]`` over the repeats r.

    Both were timed within the same repeat, a few milliseconds apart, so a
    slow patch of a shared machine affects the two alike; the quartiles
    show how far the ratio moves from repeat to repeat.

    Example:
        >>> paired_ratio([2.0, 3.0, 4.0], [2.0, 2.0, 4.0])  # ratios 1, 1.5, 1
        (1.0, 1.0, 1.25)
    """
    ratios = sorted(a / b for a, b in zip(ours, reference, strict=True))
    if len(ratios) == 1:
        return ratios[0], ratios[0], ratios[0]
    q1, median, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return median, q1, q3
