"""Peak memory each attention kernel needs beyond its inputs, in a fresh process.

Linux only: it resets the process's peak resident set size through
``/proc/self/clear_refs`` before every measurement (see
:func:`measure_peak_memory`).
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

import torch

from mha_book._checks import (
    check_names,
    check_positive_int,
    check_positive_ints,
    check_seconds,
)
from mha_book.attention.kernels import ATTENTION_KERNELS
from mha_book.bench.compare import _kernel

__all__ = ["measure_peak_memory"]


def _rss_kib(field: str) -> int:
    """``VmRSS`` (resident now) or ``VmHWM`` (peak resident) of this process, in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"/proc/self/status has no {field}")


def _reset_peak_rss() -> None:
    """Reset VmHWM to the current RSS (Linux: write 5 to /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError as err:
        raise RuntimeError(
            "measure_peak_memory needs Linux's /proc/self/clear_refs to reset "
            f"the peak resident set size: {err}"
        ) from None


def _release_free_memory() -> None:
    """Hand freed but still resident memory back to the OS (glibc's malloc_trim).

    Otherwise the next call could reuse those resident pages, and its growth
    in RSS would understate what it allocates. (Tensors are freed as soon as
    their last reference goes; no garbage collection is needed first.)
    """
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: nothing to trim
        pass


def _memory_child(spec: str) -> None:
    """Run in a fresh interpreter by :func:`measure_peak_memory`; print JSON rows."""
    job: dict[str, Any] = json.loads(spec)
    torch.set_num_threads(job["threads"])
    B, H, D = job["B"], job["H"], job["D"]
    rows = []
    with torch.inference_mode():
        for name in job["kernels"]:
            fn = _kernel(name, job["block_size"])
            warm = torch.randn(B, H, min(job["lengths"]), D)
            fn(warm, warm, warm)  # first call: code paths, thread pools
            del warm
            for T in job["lengths"]:
                q, k, v = (
                    torch.randn(B, H, T, D) for _ in range(3)
                )  # (B, H, T, D), pages touched
                _release_free_memory()
                _reset_peak_rss()
                before = _rss_kib("VmRSS")
                start = time.perf_counter()
                out = fn(q, k, v)  # (B, H, T, D)
                seconds = time.perf_counter() - start
                peak = _rss_kib("VmHWM")
                rows.append(
                    {
                        "kernel": name,
                        "T": T,
                        "extra_bytes": (peak - before) * 1024,
                        "seconds": seconds,
                    }
                )
                del out, q, k, v
    print(json.dumps(rows))


def measure_peak_memory(
    lengths: Sequence[int],
    kernels: Sequence[str] | None = None,
    *,
    B: int = 1,
    H: int = 1,
    D: int = 64,
    block_size: int = 256,
    threads: int = 1,
    timeout: float = 600.0,
) -> list[dict[str, float]]:
    """Peak memory each kernel needs beyond its inputs, measured in a fresh process.

    One subprocess runs every ``(kernel, T)`` pair, kernel by kernel with T
    increasing, on float32 inputs ``(B, H, T, D)`` (S = T, no mask, inference
    mode). For each pair it creates the inputs, returns freed memory to the
    OS (``malloc_trim``), resets the process's peak resident set size (Linux
    ``VmHWM``, via ``/proc/self/clear_refs``), reads the current RSS, runs the
    kernel once and reads the peak again: the difference is the extra memory
    of that call, output included. Resetting the peak makes each pair as
    honest as its own process would be, at the cost of one ``import torch``.
    Times are of that single call.

    Args:
        lengths: Sequence lengths T (= S).
        kernels: Names in :data:`~mha_book.attention.kernels.ATTENTION_KERNELS`, all
            of them by default. The subprocess imports ``mha_book`` afresh,
            so it knows the kernels registered in the package itself.
        B: Batch size.
        H: Heads.
        D: Head dim.
        block_size: Tile size of the kernels that tile (``flash``).
        threads: Torch threads in the subprocess.
        timeout: Seconds before the subprocess is abandoned.

    Returns:
        One dict per pair, with ``kernel``, ``T``, ``extra_bytes`` and
        ``seconds``.

    Raises:
        RuntimeError: If the subprocess fails (for example, not on Linux).
    """
    lengths = check_positive_ints(lengths, "lengths")
    kernels = (
        list(ATTENTION_KERNELS) if kernels is None else check_names(kernels, "kernels")
    )
    sizes = {"B": B, "H": H, "D": D, "threads": threads}
    sizes = {name: check_positive_int(n, name) for name, n in sizes.items()}
    block_size = check_positive_int(block_size, "block_size")
    timeout = check_seconds(timeout, "timeout", allow_zero=False)
    for name in kernels:
        _kernel(name, block_size)  # ValueError on an unknown name
    spec = json.dumps(
        {
            "kernels": kernels,
            "lengths": sorted(lengths),
            "block_size": block_size,
            **sizes,
        }
    )
    threads = sizes["threads"]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    code = (
        "import sys; from mha_book.bench.memory import _memory_child; "
        "_memory_child(sys.argv[1])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, spec],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"memory subprocess failed (exit {proc.returncode}): {proc.stderr[-2000:]}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])
