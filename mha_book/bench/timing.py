"""The timing protocol: paired, shuffled repeats of ``torch.utils.benchmark`` timings.

Each measurement is a :class:`torch.utils.benchmark.Timer` run
(``blocked_autorange``: blocks of calls until ``min_run_time`` has passed, the
median block time per call). Around it the benchmark keeps its own protocol:
within each repeat the implementations are timed one after the other in a
shuffled order (:func:`repeat_orders`), and a ratio is the median of the
per-repeat ratios (:func:`paired_ratio`), so a slow patch of a shared machine
moves both sides of a ratio alike.

Two clocks (:data:`CLOCKS`): ``"wall"`` (elapsed time, the benchmark's) and
``"cpu"`` (the processor time of this process, which the book's pages use):
on a machine busy with other programs, the wall clock also counts the time a
call waited for a core, the CPU clock does not. With one torch thread the CPU
time of a call is the time it ran; with several, the sum over the threads.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Mapping, Sequence

import torch
from torch.utils import benchmark

from mha_book._checks import (
    check_callable,
    check_names,
    check_positive_int,
    check_seconds,
)

__all__ = [
    "attention_flops",
    "time_call",
    "matmul_gflops",
    "repeat_orders",
    "paired_ratio",
    "interleaved_times",
    "CLOCKS",
]

#: The clocks a timing can read, by name (wall time, or this process's CPU time).
CLOCKS: dict[str, Callable[[], float]] = {
    "wall": time.perf_counter,
    "cpu": time.process_time,  # user + system time of this process
}


def attention_flops(B: int, T: int, S: int, E: int) -> int:
    """Multiply-add FLOPs of one forward pass (projections + QK^T + PV).

    Example:
        >>> attention_flops(2, 128, 128, 512)
        603979776
    """
    for name, n in (("B", B), ("T", T), ("S", S), ("E", E)):
        check_positive_int(n, name)
    projections = (
        2 * B * T * E * E * 2 + 2 * B * S * E * E * 2
    )  # q, out (T) and k, v (S)
    products = 2 * (2 * B * T * S * E)  # QK^T and PV, summed over heads: H·D = E
    return projections + products


def _clock(clock: str) -> Callable[[], float]:
    if clock not in CLOCKS:
        raise ValueError(f"clock must be one of {sorted(CLOCKS)}, got {clock!r}")
    return CLOCKS[clock]


def time_call(
    fn: Callable[[], object], min_run_time: float = 0.0, *, clock: str = "wall"
) -> float:
    """Seconds per call of ``fn``, timed by :class:`torch.utils.benchmark.Timer`.

    With ``min_run_time > 0``: ``blocked_autorange``, the median over blocks of
    calls that together last at least that long. With 0: one call.
    ``Timer`` runs with the threads torch uses now (its own default is 1).
    ``clock`` is ``"wall"`` or ``"cpu"`` (see :data:`CLOCKS`).

    Example:
        >>> time_call(lambda: torch.zeros(8).sum()) > 0
        True
        >>> time_call(lambda: torch.zeros(8).sum(), clock="cpu") >= 0
        True
    """
    check_callable(fn, "fn")
    min_run_time = check_seconds(min_run_time, "min_run_time")
    timer = benchmark.Timer(
        "fn()",
        globals={"fn": fn},
        num_threads=torch.get_num_threads(),
        timer=_clock(clock),
    )
    if min_run_time > 0:
        return timer.blocked_autorange(min_run_time=min_run_time).median
    return timer.timeit(number=1).median


def matmul_gflops(n: int = 2048, repeats: int = 5) -> float:
    """Median GFLOP/s of an ``n x n`` float32 matmul on this machine."""
    check_positive_int(n, "n")
    check_positive_int(repeats, "repeats")
    a, b = torch.randn(n, n), torch.randn(n, n)
    with torch.inference_mode():
        _ = a @ b  # warm-up
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
    names = check_names(names, "names")
    check_positive_int(repeats, "repeats")
    rng = random.Random(check_positive_int(seed, "seed", allow_zero=True))
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
    ours, reference = _times(ours, "ours"), _times(reference, "reference")
    if len(ours) != len(reference):
        raise ValueError(
            "ours and reference must hold one time per repeat each, got "
            f"{len(ours)} and {len(reference)}"
        )
    ratios = sorted(a / b for a, b in zip(ours, reference))
    if len(ratios) == 1:
        return ratios[0], ratios[0], ratios[0]
    q1, median, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
    return median, q1, q3


def _times(values: object, name: str) -> list[float]:
    """``values`` as a list of seconds (> 0), or an error that names them."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(
            f"{name} must be a sequence of times in seconds, "
            f"got {type(values).__name__}"
        )
    if not values:
        raise ValueError(f"{name} must hold at least one time, got none")
    return [
        check_seconds(t, f"{name}[{i}]", allow_zero=False) for i, t in enumerate(values)
    ]


def interleaved_times(
    calls: Mapping[str, Callable[[], object]],
    rounds: int,
    *,
    min_run_time: float = 0.0,
    seed: int = 0,
    clock: str = "wall",
) -> dict[str, list[float]]:
    """Seconds per call of each of ``calls``, timed in interleaved rounds.

    Every call runs once as a warm-up. Then each round times every call once
    (:func:`time_call`), in a shuffled order (:func:`repeat_orders`), so the
    variants being compared take turns: a slow patch of a shared machine
    slows one round of each of them rather than all the rounds of one. Take
    the median over the rounds (or :func:`paired_ratio` for a ratio), never
    one round.

    Args:
        calls: Name -> a function of no arguments; all are timed.
        rounds: Rounds (at least 1); each gives one time per call.
        min_run_time: Seconds of calls per timing (see :func:`time_call`);
            0 times a single call.
        seed: Seed of the shuffled orders.
        clock: ``"wall"`` or ``"cpu"`` (see :data:`CLOCKS`).

    Returns:
        Name -> ``rounds`` times in seconds, in the order of the rounds.

    Example:
        >>> times = interleaved_times({"a": lambda: 1, "b": lambda: 2}, rounds=3)
        >>> {name: len(t) for name, t in times.items()}
        {'a': 3, 'b': 3}
    """
    check_positive_int(rounds, "rounds")
    if not isinstance(calls, Mapping):
        raise TypeError(
            f"calls must map names to functions, got {type(calls).__name__}"
        )
    if not calls:
        raise ValueError("calls must name at least one function, got none")
    for name, fn in calls.items():
        check_callable(fn, f"calls[{name!r}]")
    check_seconds(min_run_time, "min_run_time")
    _clock(clock)
    for fn in calls.values():
        fn()  # warm-up: code paths, allocations, thread pools
    times: dict[str, list[float]] = {name: [] for name in calls}
    for order in repeat_orders(list(calls), rounds, seed):
        for name in order:
            times[name].append(time_call(calls[name], min_run_time, clock=clock))
    return times
