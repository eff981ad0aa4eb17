"""mha_book against torch.nn.MultiheadAttention, and the attention kernels, timed.

:func:`run` times four implementations with the same weights (see the
package docstring); :func:`kernel_times` times every kernel of
:data:`mha_book.attention.kernels.ATTENTION_KERNELS` on ``(B, H, T, D)`` inputs;
:func:`forward_times` times the module at several sizes (chapters 05 and 12).
"""

from __future__ import annotations

import inspect
import statistics
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import torch

from mha_book._checks import (
    check_names,
    check_positive_int,
    check_positive_ints,
    check_seconds,
)
from mha_book.attention.kernels import ATTENTION_KERNELS, get_kernel
from mha_book.attention.mha import MultiHeadAttention
from mha_book.bench.timing import (
    attention_flops,
    interleaved_times,
    paired_ratio,
    repeat_orders,
    time_call,
)

__all__ = ["RATIOS", "run", "kernel_times", "forward_times"]

RATIOS = {
    "fast_ratio": ("fast", "torch_fast"),
    "explicit_ratio": ("explicit", "torch_weights"),
}


def run(
    lengths,
    repeats: int,
    *,
    B: int = 2,
    E: int = 512,
    H: int = 8,
    min_seconds: float = 0.02,
) -> list[dict[str, float]]:
    """Time the four implementations; one result dict per length (times in seconds)."""
    lengths = check_positive_ints(lengths, "lengths")
    check_positive_int(repeats, "repeats")
    check_positive_int(B, "B")
    check_seconds(min_seconds, "min_seconds")
    torch.manual_seed(0)
    ours = MultiHeadAttention(E, H).eval()
    theirs = ours.to_torch().eval()
    results = []
    for T in lengths:
        x = torch.randn(B, T, E)
        impls = {
            "explicit": lambda: ours(x, x, x, need_weights=True),
            "fast": lambda: ours(x, x, x, need_weights=False),
            "torch_fast": lambda: theirs(x, x, x, need_weights=False),
            "torch_weights": lambda: theirs(
                x, x, x, need_weights=True, average_attn_weights=False
            ),
        }
        names = list(impls)
        times = {name: [] for name in names}
        with torch.inference_mode():
            for fn in impls.values():
                fn()  # warm-up
            for order in repeat_orders(names, repeats):
                for name in order:
                    times[name].append(time_call(impls[name], min_seconds))
        row = {name: statistics.median(t) for name, t in times.items()}
        row.update(T=T, gflops=attention_flops(B, T, T, E) / row["fast"] / 1e9)
        for ratio, (ours_name, ref_name) in RATIOS.items():
            row[ratio] = paired_ratio(times[ours_name], times[ref_name])
        results.append(row)
    return results


def _kernel(name: str, block_size: int) -> Callable[..., torch.Tensor]:
    """The attention output of ``q, k, v`` (B, H, T, D) by the registered kernel.

    Kernels that tile (their signature has ``block_size``) get ``block_size``;
    asking the signature keeps this free of kernel names.
    """
    check_positive_int(block_size, "block_size")
    kernel = get_kernel(name)
    tiles = "block_size" in inspect.signature(kernel).parameters
    # an option of its own, beyond the signature every kernel shares
    options: dict[str, Any] = {"block_size": block_size} if tiles else {}
    return lambda q, k, v: kernel(q, k, v, **options)[0]


def kernel_times(
    lengths,
    repeats: int,
    *,
    B: int = 1,
    H: int = 8,
    D: int = 64,
    block_size: int = 256,
    kernels: Sequence[str] | None = None,
    threads: int | None = None,
    clock: str = "wall",
) -> list[dict[str, float]]:
    """Median seconds per kernel on ``(B, H, T, D)`` float32 inputs, a dict per T.

    ``kernels`` are names in :data:`~mha_book.attention.kernels.ATTENTION_KERNELS`; by
    default all of them. For each T the kernels are timed in ``repeats``
    interleaved rounds, one call each per round (:func:`interleaved_times`),
    with ``threads`` torch threads (default: as many as torch uses now), on
    the ``clock`` of :data:`~mha_book.bench.timing.CLOCKS`.
    """
    lengths = check_positive_ints(lengths, "lengths")
    for name, n in (("repeats", repeats), ("B", B), ("H", H), ("D", D)):
        check_positive_int(n, name)
    if threads is not None:
        check_positive_int(threads, "threads")
    torch.manual_seed(0)
    names = (
        list(ATTENTION_KERNELS) if kernels is None else check_names(kernels, "kernels")
    )
    fns = {name: _kernel(name, block_size) for name in names}
    results = []
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        for T in lengths:
            q, k, v = (
                torch.randn(B, H, T, D) for _ in range(3)
            )  # (B, H, T, D) each, S = T
            calls = {name: partial(fn, q, k, v) for name, fn in fns.items()}
            with torch.inference_mode():
                times = interleaved_times(calls, repeats, clock=clock)
            results.append(
                {"T": T, **{name: statistics.median(t) for name, t in times.items()}}
            )
    finally:
        torch.set_num_threads(before)
    return results


def forward_times(
    sizes: Sequence[tuple[int, int, int]],
    rounds: int = 9,
    *,
    B: int = 1,
    need_weights: bool = True,
    min_run_time: float = 0.02,
    seed: int = 0,
    clock: str = "cpu",
) -> list[float]:
    """Median seconds of one forward pass of the module, for each ``(E, H, T)``.

    For each size, ``MultiHeadAttention(E, H)`` (eval mode, inference mode,
    float32) runs self-attention on ``(B, T, E)`` inputs. The sizes are timed
    in ``rounds`` interleaved rounds (:func:`interleaved_times`): each round
    times every size once, in a shuffled order, with
    ``torch.utils.benchmark.Timer.blocked_autorange`` (``min_run_time``
    seconds of calls, the median time per call); the result is the median
    over the rounds. Threads: as many as torch uses now. ``clock``: the CPU
    time of this process by default, which leaves out the time a call waited
    while other programs had the processor (see
    :data:`~mha_book.bench.timing.CLOCKS`).

    Example:
        >>> times = forward_times([(16, 2, 8), (16, 2, 16)], rounds=2, min_run_time=0)
        >>> len(times), all(t > 0 for t in times)
        (2, True)
    """
    sizes = _sizes(sizes)
    check_positive_int(B, "B")
    if not isinstance(need_weights, bool):
        raise TypeError(
            f"need_weights must be a bool, got {type(need_weights).__name__}"
        )
    check_positive_int(seed, "seed", allow_zero=True)
    torch.manual_seed(seed)
    calls = {}
    for i, (E, H, T) in enumerate(sizes):
        model = MultiHeadAttention(E, H).eval()
        x = torch.randn(B, T, E)  # (B, T, E)
        calls[str(i)] = partial(model, x, x, x, need_weights=need_weights)
    with torch.inference_mode():
        times = interleaved_times(calls, rounds, min_run_time=min_run_time, clock=clock)
    return [statistics.median(times[str(i)]) for i in range(len(sizes))]


def _sizes(sizes: object) -> list[tuple[int, int, int]]:
    """``sizes`` as ``(E, H, T)`` triples of positive ints, or an error naming them."""
    if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence) or not sizes:
        raise TypeError(f"sizes must be a non-empty list of (E, H, T), got {sizes!r}")
    triples = []
    for i, size in enumerate(sizes):
        if (
            isinstance(size, (str, bytes))
            or not isinstance(size, Sequence)
            or len(size) != 3
        ):
            raise ValueError(f"sizes[{i}] must be a triple (E, H, T), got {size!r}")
        E, H, T = (check_positive_int(n, f"sizes[{i}]") for n in size)
        triples.append((E, H, T))
    return triples
