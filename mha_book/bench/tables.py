"""The benchmark's tables and its targets, with a PASS/MISS verdict each."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from mha_book._checks import check_positive_int
from mha_book.bench.compare import RATIOS

__all__ = ["format_table", "format_kernels", "format_decode"]

FAST_TARGET = 1.0  # fast / torch fast
EXPLICIT_TARGET = 1.1  # explicit / torch weights
MATMUL_FRACTION_TARGET = 0.5  # fast GFLOP/s / matmul GFLOP/s at T = 2048
MATMUL_FRACTION_LENGTH = 2048
FLASH_MEMORY_TARGET = 0.05  # flash extra memory / explicit extra memory at T = 8192
FLASH_MEMORY_LENGTH = 8192

MEMORY_KEYS = ("kernel", "T", "extra_bytes")  # a row of measure_peak_memory
DECODE_KEYS = (  # a row of decode_speed
    "num_kv_heads", "no_cache_tok_s", "cache_tok_s", "speedup", "max_diff",
    "scale", "cache_bytes",
)  # fmt: skip


def _rows(rows: object, name: str, keys: tuple[str, ...]) -> list[Mapping]:
    """``rows`` as a list of dicts that hold ``keys``, or an error naming them."""
    if isinstance(rows, (str, bytes, Mapping)) or not isinstance(rows, Sequence):
        raise TypeError(
            f"{name} must be a list of result dicts, got {type(rows).__name__}"
        )
    for i, row in enumerate(rows):
        if not isinstance(row, Mapping):
            raise TypeError(f"{name}[{i}] must be a dict, got {type(row).__name__}")
        missing = [key for key in keys if key not in row]
        if missing:
            raise ValueError(
                f"{name}[{i}] must hold {', '.join(keys)}; missing {', '.join(missing)}"
            )
    return list(rows)


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

    The ratio columns and verdicts use the paired ratios of :func:`~mha_book.bench.compare.run`
    (median over repeats, quartiles in brackets) when a row has them.
    """
    keys = ("T", "explicit", "fast", "torch_fast", "torch_weights", "gflops")
    results = _rows(results, "results", keys)
    if isinstance(matmul, bool) or not isinstance(matmul, (int, float)):
        raise TypeError(
            f"matmul must be a rate in GFLOP/s, got {type(matmul).__name__}"
        )
    if not (math.isfinite(matmul) and matmul > 0):
        raise ValueError(f"matmul must be a finite rate > 0 in GFLOP/s, got {matmul}")
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
    lines.append(
        "target                                     T       value  verdict"
        "  [quartiles of the paired ratios]"
    )
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
    times = _rows(times, "times", ("T",))
    names = [k for k in times[0] if k != "T"] if times else []
    _rows(times, "times", ("T", *names))  # every row times the same kernels
    memory = [] if memory is None else _rows(memory, "memory", MEMORY_KEYS)
    if sizes is not None and not isinstance(sizes, Mapping):
        raise TypeError(f"sizes must be a dict or None, got {type(sizes).__name__}")
    mem = {(r["kernel"], r["T"]): r["extra_bytes"] / 2**20 for r in memory}
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
        f"kernels: {', '.join(names)} (mha_book.attention.kernels){where}, S=T; "
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
    rows = _rows(rows, "rows", DECODE_KEYS)
    for name, n in (("E", E), ("H", H), ("layers", layers), ("prompt", prompt)):
        check_positive_int(n, name)
    check_positive_int(new_tokens, "new_tokens")
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
