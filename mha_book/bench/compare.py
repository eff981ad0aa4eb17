"""mha_book against torch.nn.MultiheadAttention, and the attention kernels, timed.

:func:`run` times four implementations with the same weights (see the
package docstring); :func:`kernel_times` times every kernel of
:data:`mha_book.kernels.ATTENTION_KERNELS` on ``(B, H, T, D)`` inputs.
"""

from __future__ import annotations

import inspect
import statistics
from collections.abc import Callable, Sequence

import torch

from mha_book.bench.timing import (
    attention_flops,
    paired_ratio,
    repeat_orders,
    time_call,
)
from mha_book.kernels import ATTENTION_KERNELS, get_kernel
from mha_book.module import MultiHeadAttention

__all__ = ["RATIOS", "run", "kernel_times"]

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
    kernel = get_kernel(name)
    tiles = "block_size" in inspect.signature(kernel).parameters
    options = {"block_size": block_size} if tiles else {}
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
) -> list[dict[str, float]]:
    """Median seconds per kernel on ``(B, H, T, D)`` float32 inputs, a dict per T.

    ``kernels`` are names in :data:`~mha_book.kernels.ATTENTION_KERNELS`; by
    default all of them.
    """
    torch.manual_seed(0)
    names = list(ATTENTION_KERNELS) if kernels is None else list(kernels)
    fns = {name: _kernel(name, block_size) for name in names}
    results = []
    for T in lengths:
        q, k, v = (
            torch.randn(B, H, T, D) for _ in range(3)
        )  # (B, H, T, D) each, S = T
        times = {name: [] for name in names}
        with torch.inference_mode():
            for fn in fns.values():
                fn(q, k, v)  # warm-up
            for order in repeat_orders(names, repeats):
                for name in order:
                    times[name].append(time_call(lambda: fns[name](q, k, v)))
        results.append(
            {"T": T, **{name: statistics.median(t) for name, t in times.items()}}
        )
    return results
