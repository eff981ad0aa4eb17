"""CPU inference benchmark: mha_book against torch.nn.MultiheadAttention.

Discussed in chapter 05-verification; the tiled kernel's section in chapter
12-flash-attention and the decoding section in chapter 13-mqa-gqa-kv-cache,
which call :func:`measure_peak_memory` and :func:`decode_speed`. Run it with
``python -m mha_book.bench`` (``--quick`` for a smoke test; ``--lengths``,
``--repeats`` and ``--threads`` to choose).

Legend: B batch, H heads, T query length, S key length (here S = T,
self-attention without a mask), D head dim, E = H·D.

Four implementations share the same weights (through
:meth:`MultiHeadAttention.to_torch`):

- (a) explicit: ``MultiHeadAttention(..., need_weights=True)``
- (b) fast: ``MultiHeadAttention(..., need_weights=False)``
- (c) torch fast: ``nn.MultiheadAttention(..., need_weights=False)``
- (d) torch weights: ``nn.MultiheadAttention(..., need_weights=True)`` with
  ``average_attn_weights=False``

Within each repeat the four are timed one after the other, in a shuffled
order (seeded, see :func:`repeat_orders`); each time is the median over repeats. Each
ratio is the median of the per-repeat ratios (:func:`paired_ratio`, quartiles
in brackets after the verdicts): the two sides of a ratio ran milliseconds
apart, so a slow patch of a shared machine moves both. FLOPs
count the four projections (``2·B·T·E·E`` each for T = S) and the two
attention products (``2·B·H·T·S·D`` each); the achieved rate is compared
with a dense float32 matmul measured on the same machine.

Two more sections follow the table:

- Kernels: every kernel of :data:`mha_book.kernels.ATTENTION_KERNELS`
  (``explicit``, ``fused``, ``flash``, and any kernel registered there) on
  ``(B, H, T, D)`` inputs: time, and the peak memory each needs beyond its
  inputs, measured in a subprocess (see :func:`measure_peak_memory`). Target:
  the flash kernel's extra memory at most 5% of the explicit kernel's at
  T = 8192.
- Decoding: a small stack of self-attention layers generating tokens with and
  without a :class:`~mha_book.kv_cache.KVCache`, for several ``num_kv_heads``
  (see :func:`decode_speed`). Target: the cache is faster and gives the same
  outputs.
"""

from __future__ import annotations

import argparse
import ctypes
import inspect
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence

import torch
from torch import nn

from mha_book.kernels import ATTENTION_KERNELS, get_kernel
from mha_book.kv_cache import KVCache
from mha_book.masks import causal_mask
from mha_book.module import MultiHeadAttention

__all__ = [
    "main",
    "run",
    "paired_ratio",
    "repeat_orders",
    "matmul_gflops",
    "attention_flops",
    "kernel_times",
    "measure_peak_memory",
    "decode_speed",
]

FAST_TARGET = 1.0  # fast / torch fast
EXPLICIT_TARGET = 1.1  # explicit / torch weights
MATMUL_FRACTION_TARGET = 0.5  # fast GFLOP/s / matmul GFLOP/s at T = 2048
MATMUL_FRACTION_LENGTH = 2048
FLASH_MEMORY_TARGET = 0.05  # flash extra memory / explicit extra memory at T = 8192
FLASH_MEMORY_LENGTH = 8192
RATIOS = {
    "fast_ratio": ("fast", "torch_fast"),
    "explicit_ratio": ("explicit", "torch_weights"),
}


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


def _time(fn: Callable[[], object], number: int) -> float:
    start = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - start) / number


def matmul_gflops(n: int = 2048, repeats: int = 5) -> float:
    """Median GFLOP/s of an ``n x n`` float32 matmul on this machine."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    with torch.inference_mode():
        a @ b  # warm-up
        times = [_time(lambda: a @ b, 1) for _ in range(repeats)]
    return 2 * n**3 / statistics.median(times) / 1e9


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
            warm = {name: _time(fn, 1) for name, fn in impls.items()}  # warm-up
            number = max(1, int(min_seconds / max(min(warm.values()), 1e-9)))
            for order in repeat_orders(names, repeats):
                for name in order:
                    times[name].append(_time(impls[name], number))
        row = {name: statistics.median(t) for name, t in times.items()}
        row.update(T=T, gflops=attention_flops(B, T, T, E) / row["fast"] / 1e9)
        for ratio, (ours_name, ref_name) in RATIOS.items():
            row[ratio] = paired_ratio(times[ours_name], times[ref_name])
        results.append(row)
    return results


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


# --- kernels: time and peak memory of every registered attention kernel ---


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
                    times[name].append(_time(lambda: fns[name](q, k, v), 1))
        results.append(
            {"T": T, **{name: statistics.median(t) for name, t in times.items()}}
        )
    return results


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
    spec = json.loads(spec)
    torch.set_num_threads(spec["threads"])
    B, H, D = spec["B"], spec["H"], spec["D"]
    rows = []
    with torch.inference_mode():
        for name in spec["kernels"]:
            fn = _kernel(name, spec["block_size"])
            warm = torch.randn(B, H, min(spec["lengths"]), D)
            fn(warm, warm, warm)  # first call: code paths, thread pools
            del warm
            for T in spec["lengths"]:
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
        kernels: Names in :data:`~mha_book.kernels.ATTENTION_KERNELS`, all
            of them by default. The subprocess imports ``mha_book`` afresh,
            so it knows the kernels registered in the package itself.
        B: Batch size.
        H: Heads.
        D: Head dim.
        block_size: Tile size of the kernels that tile (``flash``).
        threads: Torch threads in the subprocess.
        timeout: Seconds before the subprocess is abandoned.

    Returns:
        One dict per pair: ``kernel``, ``T``, ``extra_bytes``, ``seconds``.

    Raises:
        RuntimeError: If the subprocess fails (for example, not on Linux).
    """
    kernels = list(ATTENTION_KERNELS) if kernels is None else list(kernels)
    for name in kernels:
        _kernel(name, block_size)  # ValueError on an unknown name
    spec = json.dumps(
        {
            "kernels": kernels,
            "lengths": sorted(int(T) for T in lengths),
            "B": B,
            "H": H,
            "D": D,
            "block_size": block_size,
            "threads": threads,
        }
    )
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads))
    code = (
        "import sys; from mha_book.bench import _memory_child; "
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


# --- decoding: tokens per second with and without a KV cache ---


class _AttentionStack(nn.Module):
    """Residual causal self-attention layers: just enough model to time decoding."""

    def __init__(self, E: int, H: int, num_kv_heads: int, layers: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            MultiHeadAttention(E, H, num_kv_heads=num_kv_heads) for _ in range(layers)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """All positions of ``x`` (B, T, E) at once, causal mask."""
        mask = causal_mask(x.shape[1], device=x.device)  # (T, T)
        for layer in self.layers:
            x = x + layer(x, x, x, mask, need_weights=False)[0]  # (B, T, E)
        return x

    def step(self, x: torch.Tensor, caches: list[KVCache]) -> torch.Tensor:
        """Only the new positions ``x`` (B, T_new, E).

        The earlier ones are read from ``caches``.
        """
        for layer, cache in zip(self.layers, caches):
            x = x + layer.forward_step(x, cache, need_weights=False)[0]  # (B, T_new, E)
        return x


def decode_speed(
    num_kv_heads: Sequence[int] = (8, 2, 1),
    *,
    E: int = 256,
    H: int = 8,
    layers: int = 4,
    prompt: int = 32,
    new_tokens: int = 32,
    B: int = 1,
    repeats: int = 3,
    seed: int = 0,
) -> list[dict[str, float]]:
    """Decode ``new_tokens`` positions after a prompt, with and without a KV cache.

    For each value of ``num_kv_heads`` a stack of ``layers`` residual
    self-attention layers (float32, eval mode) produces the outputs at
    positions ``prompt, ..., prompt + new_tokens - 1`` of a fixed random input
    sequence, the way a decoder produces one token after another:

    - without a cache: at every step, a full causal pass over all tokens so far;
    - with a cache: one pass over the prompt (prefill), then one call per new
      token that projects only that token and attends to the cached keys.

    Each time is the median over ``repeats`` of the whole loop (prefill included).

    Returns:
        One dict per ``num_kv_heads``: ``num_kv_heads``, ``no_cache_s``,
        ``cache_s``, ``no_cache_tok_s``, ``cache_tok_s`` (new tokens per second),
        ``speedup``, ``max_diff`` (largest difference between the two ways'
        outputs), ``scale`` (largest output magnitude), ``cache_bytes`` (the
        caches after the last step, all layers).
    """
    results = []
    for Hkv in num_kv_heads:
        torch.manual_seed(seed)
        model = _AttentionStack(E, H, Hkv, layers).eval()
        x = torch.randn(B, prompt + new_tokens, E)  # (B, T, E): the whole sequence

        def without_cache():
            return torch.cat(
                [
                    model(x[:, : t + 1])[:, -1:]
                    for t in range(prompt, prompt + new_tokens)
                ],
                1,
            )

        def with_cache():
            caches = [KVCache() for _ in range(layers)]
            model.step(x[:, :prompt], caches)  # prefill
            outs = [
                model.step(x[:, t : t + 1], caches)
                for t in range(prompt, prompt + new_tokens)
            ]
            return torch.cat(outs, 1), caches

        with torch.inference_mode():
            ref, (out, caches) = without_cache(), with_cache()  # also the warm-up
            t_none = statistics.median(_time(without_cache, 1) for _ in range(repeats))
            t_cache = statistics.median(_time(with_cache, 1) for _ in range(repeats))
        results.append(
            {
                "num_kv_heads": Hkv,
                "no_cache_s": t_none,
                "cache_s": t_cache,
                "no_cache_tok_s": new_tokens / t_none,
                "cache_tok_s": new_tokens / t_cache,
                "speedup": t_none / t_cache,
                "max_diff": float((out - ref).abs().max()),
                "scale": float(ref.abs().max()),
                "cache_bytes": sum(c.nbytes for c in caches),
            }
        )
    return results


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def _ratio(row, key: str) -> tuple[float, float, float]:
    """A row's paired ratio (median, q1, q3); from the medians if it has none."""
    if key in row:
        return row[key]
    ours_name, ref_name = RATIOS[key]
    ratio = row[ours_name] / row[ref_name]
    return ratio, ratio, ratio


def _spread(q1: float, q3: float) -> str:
    """``  [q1-q3]`` after a verdict, if the ratio varied between repeats."""
    return f"  [{q1:.2f}-{q3:.2f}]" if q3 > q1 else ""


def format_table(results, matmul: float) -> str:
    """The results as a plain-text table, targets and PASS/MISS included.

    The ratio columns and verdicts use the paired ratios of :func:`run`
    (median over repeats, quartiles in brackets) when a row has them.
    """
    head = (
        "T",
        "explicit ms",
        "fast ms",
        "torch fast ms",
        "torch weights ms",
        "fast/torch",
        "explicit/torch",
        "fast GFLOP/s",
        "of matmul",
    )
    rows = []
    for r in results:
        rows.append(
            (
                str(r["T"]),
                f"{r['explicit'] * 1e3:.3f}",
                f"{r['fast'] * 1e3:.3f}",
                f"{r['torch_fast'] * 1e3:.3f}",
                f"{r['torch_weights'] * 1e3:.3f}",
                f"{_ratio(r, 'fast_ratio')[0]:.2f}x",
                f"{_ratio(r, 'explicit_ratio')[0]:.2f}x",
                f"{r['gflops']:.1f}",
                f"{r['gflops'] / matmul:.2f}",
            )
        )
    widths = [max(len(line[i]) for line in [head, *rows]) for i in range(len(head))]
    fmt = lambda line: "  ".join(c.rjust(w) for c, w in zip(line, widths))  # noqa: E731
    lines = [fmt(head), fmt(tuple("-" * w for w in widths)), *map(fmt, rows), ""]
    lines.append(f"dense float32 matmul: {matmul:.1f} GFLOP/s")
    lines.append("target                                     T       value  verdict")
    for r in results:
        ratio, q1, q3 = _ratio(r, "fast_ratio")
        lines.append(
            f"fast / torch fast <= {FAST_TARGET:.1f}x                   {r['T']:>5}  "
            f"{ratio:>9.2f}x  {_verdict(ratio <= FAST_TARGET)}{_spread(q1, q3)}"
        )
    for r in results:
        ratio, q1, q3 = _ratio(r, "explicit_ratio")
        lines.append(
            f"explicit / torch weights <= {EXPLICIT_TARGET:.1f}x            "
            f"{r['T']:>5}  "
            f"{ratio:>9.2f}x  {_verdict(ratio <= EXPLICIT_TARGET)}{_spread(q1, q3)}"
        )
    at = [r for r in results if r["T"] == MATMUL_FRACTION_LENGTH]
    label = (
        f"fast >= {MATMUL_FRACTION_TARGET} of matmul GFLOP/s         "
        f"{MATMUL_FRACTION_LENGTH:>5}"
    )
    if at:
        frac = at[0]["gflops"] / matmul
        lines.append(
            f"{label}  {frac:>10.2f}  {_verdict(frac >= MATMUL_FRACTION_TARGET)}"
        )
    else:
        lines.append(f"{label}  {'-':>10}  n/a (T = {MATMUL_FRACTION_LENGTH} not run)")
    return "\n".join(lines)


def _columns(head, rows) -> list[str]:
    widths = [max(len(line[i]) for line in [head, *rows]) for i in range(len(head))]
    fmt = lambda line: "  ".join(c.rjust(w) for c, w in zip(line, widths))  # noqa: E731
    return [fmt(head), fmt(tuple("-" * w for w in widths)), *map(fmt, rows)]


def format_kernels(times, memory=None, *, sizes=None) -> str:
    """The kernels section: times, extra memory (if measured) and the memory target."""
    mem = {(r["kernel"], r["T"]): r["extra_bytes"] / 2**20 for r in memory or []}
    names = [k for k in times[0] if k != "T"] if times else []
    head = (
        "T",
        *(f"{k} ms" for k in names),
        *(f"{k} MiB" for k in names),
        "flash/explicit mem",
    )
    rows = []
    for r in times:
        mib = [mem.get((k, r["T"])) for k in names]
        pair = mem.get(("explicit", r["T"])), mem.get(("flash", r["T"]))
        ratio = "-" if None in pair or not pair[0] else f"{pair[1] / pair[0]:.1%}"
        rows.append(
            (
                str(r["T"]),
                *(f"{r[k] * 1e3:.2f}" for k in names),
                *("-" if m is None else f"{m:.1f}" for m in mib),
                ratio,
            )
        )
    where = (
        "" if sizes is None else ", " + ", ".join(f"{k}={v}" for k, v in sizes.items())
    )
    lines = [
        f"kernels: {', '.join(names)} (mha_book.kernels){where}, S=T; "
        "extra memory = peak RSS growth in a subprocess",
        *_columns(head, rows),
    ]
    label = (
        f"flash extra memory <= {FLASH_MEMORY_TARGET:.0%} of explicit        "
        f"{FLASH_MEMORY_LENGTH:>5}"
    )
    ref, tiled = (
        mem.get(("explicit", FLASH_MEMORY_LENGTH)),
        mem.get(("flash", FLASH_MEMORY_LENGTH)),
    )
    if ref and tiled is not None:
        frac = tiled / ref
        lines.append(f"{label}  {frac:>10.1%}  {_verdict(frac <= FLASH_MEMORY_TARGET)}")
    else:
        lines.append(
            f"{label}  {'-':>10}  "
            f"n/a (memory at T = {FLASH_MEMORY_LENGTH} not measured)"
        )
    return "\n".join(lines)


def format_decode(
    rows, *, E: int, H: int, layers: int, prompt: int, new_tokens: int
) -> str:
    """The decoding section: tokens/s with and without a KV cache, per num_kv_heads."""
    head = (
        "num_kv_heads",
        "no cache tok/s",
        "cache tok/s",
        "speed-up",
        "max |diff|",
        "cache KiB",
    )
    cells = [
        (
            str(r["num_kv_heads"]),
            f"{r['no_cache_tok_s']:.1f}",
            f"{r['cache_tok_s']:.1f}",
            f"{r['speedup']:.2f}x",
            f"{r['max_diff']:.1e}",
            f"{r['cache_bytes'] / 1024:.1f}",
        )
        for r in rows
    ]
    lines = [
        f"decoding: {layers} self-attention layers, E={E}, H={H}, prompt {prompt}, "
        f"{new_tokens} new tokens",
        *_columns(head, cells),
    ]
    for r in rows:
        lines.append(
            f"KV cache faster than no cache       Hkv = {r['num_kv_heads']:>3}  "
            f"{r['speedup']:>9.2f}x  {_verdict(r['speedup'] > 1.0)}"
        )
    for r in rows:
        ok = r["max_diff"] <= 1e-4 * max(r["scale"], 1.0)
        lines.append(
            f"cached outputs equal (1e-4 rel.)    Hkv = {r['num_kv_heads']:>3}  "
            f"{r['max_diff']:>10.1e}  {_verdict(ok)}"
        )
    return "\n".join(lines)


def main(argv=None) -> int:
    """Command-line entry point; prints the table and returns 0."""
    parser = argparse.ArgumentParser(
        prog="python -m mha_book.bench", description=(__doc__ or "").split("\n")[0]
    )
    parser.add_argument(
        "--lengths",
        type=int,
        nargs="+",
        default=[128, 512, 1024, 2048],
        help="sequence lengths T (default: 128 512 1024 2048)",
    )
    parser.add_argument(
        "--repeats", type=int, default=11, help="repeats per length (median)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes for a smoke test (B=2, E=32, H=4, T=8 16, 3 repeats)",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch intra-op threads (default: torch's choice)",
    )
    parser.add_argument(
        "--kernel-lengths",
        type=int,
        nargs="+",
        default=[1024, 4096, 8192],
        help="sequence lengths of the kernels section (default: 1024 4096 8192)",
    )
    args = parser.parse_args(argv)
    if (
        args.repeats < 1
        or min(args.lengths) < 1
        or min(args.kernel_lengths) < 1
        or (args.threads is not None and args.threads < 1)
    ):
        parser.error(
            "--repeats, --lengths, --kernel-lengths and --threads must be positive"
        )
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.quick:
        sizes, lengths, repeats, n, min_s = (
            {"B": 2, "E": 32, "H": 4},
            [8, 16],
            3,
            128,
            0.0,
        )
    else:
        sizes, lengths, repeats, n, min_s = (
            {"B": 2, "E": 512, "H": 8},
            args.lengths,
            args.repeats,
            2048,
            0.02,
        )
    print(
        f"mha_book.bench: torch {torch.__version__}, "
        f"{torch.get_num_threads()} threads, float32, "
        f"inference_mode, B={sizes['B']}, E={sizes['E']}, H={sizes['H']}, S=T, "
        f"{repeats} repeats (median)"
    )
    results = run(lengths, repeats, min_seconds=min_s, **sizes)
    print(format_table(results, matmul_gflops(n, repeats=max(3, repeats))))

    if args.quick:  # tiny sizes; no memory subprocess (its import alone takes seconds)
        kernel_sizes, kernel_lengths, memory = (
            {"B": 1, "H": 2, "D": 16, "block_size": 16},
            [32, 64],
            None,
        )
        decode = {
            "num_kv_heads": (4, 2, 1),
            "E": 32,
            "H": 4,
            "layers": 2,
            "prompt": 4,
            "new_tokens": 4,
            "repeats": 1,
        }
    else:
        kernel_sizes, kernel_lengths = (
            {"B": 1, "H": 1, "D": 64, "block_size": 256},
            args.kernel_lengths,
        )
        memory = measure_peak_memory(
            kernel_lengths, threads=torch.get_num_threads(), **kernel_sizes
        )
        decode = {
            "num_kv_heads": (8, 2, 1),
            "E": 512,
            "H": 8,
            "layers": 4,
            "prompt": 64,
            "new_tokens": 64,
            "repeats": 3,
        }
    print()
    print(
        format_kernels(
            kernel_times(kernel_lengths, repeats, **kernel_sizes),
            memory,
            sizes=kernel_sizes,
        )
    )
    print()
    sizes = {k: decode[k] for k in ("E", "H", "layers", "prompt", "new_tokens")}
    print(format_decode(decode_speed(**decode), **sizes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
