"""CPU inference benchmark: mha_book against torch.nn.MultiheadAttention.

Discussed in chapter 05-verification. Run it with ``python -m mha_book.bench``
(``--quick`` for a smoke test; ``--lengths``, ``--repeats`` and ``--threads``
to choose).

Legend: B batch, H heads, T query length, S key length (here S = T,
self-attention without a mask), D head dim, E = H·D.

Four implementations share the same weights (through
:meth:`MultiHeadAttention.to_torch`):

- (a) explicit: ``MultiHeadAttention(..., need_weights=True)``
- (b) fast: ``MultiHeadAttention(..., need_weights=False)``
- (c) torch fast: ``nn.MultiheadAttention(..., need_weights=False)``
- (d) torch weights: ``nn.MultiheadAttention(..., need_weights=True, average_attn_weights=False)``

Within each repeat the four are timed one after the other, in an order that
rotates from repeat to repeat; each figure is the median over repeats. FLOPs
count the four projections (``2·B·T·E·E`` each for T = S) and the two
attention products (``2·B·H·T·S·D`` each); the achieved rate is compared
with a dense float32 matmul measured on the same machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable

import torch

from mha_book.module import MultiHeadAttention

__all__ = ["main", "run", "matmul_gflops", "attention_flops"]

FAST_TARGET = 1.0  # fast / torch fast
EXPLICIT_TARGET = 1.1  # explicit / torch weights
MATMUL_FRACTION_TARGET = 0.5  # fast GFLOP/s / matmul GFLOP/s at T = 2048
MATMUL_FRACTION_LENGTH = 2048


def attention_flops(B: int, T: int, S: int, E: int) -> int:
    """Multiply-add FLOPs of one forward pass (projections + QK^T + PV).

    Example:
        >>> attention_flops(2, 128, 128, 512)
        603979776
    """
    projections = 2 * B * T * E * E * 2 + 2 * B * S * E * E * 2  # q, out (T) and k, v (S)
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


def run(lengths, repeats: int, *, B: int = 2, E: int = 512, H: int = 8,
        min_seconds: float = 0.02) -> list[dict[str, float]]:
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
            "torch_weights": lambda: theirs(x, x, x, need_weights=True, average_attn_weights=False),
        }
        names = list(impls)
        times = {name: [] for name in names}
        with torch.inference_mode():
            warm = {name: _time(fn, 1) for name, fn in impls.items()}  # warm-up
            number = max(1, int(min_seconds / max(min(warm.values()), 1e-9)))
            for r in range(repeats):
                for name in names[r % 4:] + names[:r % 4]:  # rotate the order
                    times[name].append(_time(impls[name], number))
        row = {name: statistics.median(t) for name, t in times.items()}
        row.update(T=T, gflops=attention_flops(B, T, T, E) / row["fast"] / 1e9)
        results.append(row)
    return results


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def format_table(results, matmul: float) -> str:
    """The results as a plain-text table, targets and PASS/MISS included."""
    head = ("T", "explicit ms", "fast ms", "torch fast ms", "torch weights ms",
            "fast/torch", "explicit/torch", "fast GFLOP/s", "of matmul")
    rows = []
    for r in results:
        rows.append((str(r["T"]), f"{r['explicit'] * 1e3:.3f}", f"{r['fast'] * 1e3:.3f}",
                     f"{r['torch_fast'] * 1e3:.3f}", f"{r['torch_weights'] * 1e3:.3f}",
                     f"{r['fast'] / r['torch_fast']:.2f}x", f"{r['explicit'] / r['torch_weights']:.2f}x",
                     f"{r['gflops']:.1f}", f"{r['gflops'] / matmul:.2f}"))
    widths = [max(len(line[i]) for line in [head, *rows]) for i in range(len(head))]
    fmt = lambda line: "  ".join(c.rjust(w) for c, w in zip(line, widths))  # noqa: E731
    lines = [fmt(head), fmt(tuple("-" * w for w in widths)), *map(fmt, rows), ""]
    lines.append(f"dense float32 matmul: {matmul:.1f} GFLOP/s")
    lines.append("target                                     T       value  verdict")
    for r in results:
        ratio = r["fast"] / r["torch_fast"]
        lines.append(f"fast / torch fast <= {FAST_TARGET:.1f}x                   {r['T']:>5}  "
                     f"{ratio:>9.2f}x  {_verdict(ratio <= FAST_TARGET)}")
    for r in results:
        ratio = r["explicit"] / r["torch_weights"]
        lines.append(f"explicit / torch weights <= {EXPLICIT_TARGET:.1f}x            {r['T']:>5}  "
                     f"{ratio:>9.2f}x  {_verdict(ratio <= EXPLICIT_TARGET)}")
    at = [r for r in results if r["T"] == MATMUL_FRACTION_LENGTH]
    label = f"fast >= {MATMUL_FRACTION_TARGET} of matmul GFLOP/s         {MATMUL_FRACTION_LENGTH:>5}"
    if at:
        frac = at[0]["gflops"] / matmul
        lines.append(f"{label}  {frac:>10.2f}  {_verdict(frac >= MATMUL_FRACTION_TARGET)}")
    else:
        lines.append(f"{label}  {'-':>10}  n/a (T = {MATMUL_FRACTION_LENGTH} not run)")
    return "\n".join(lines)


def main(argv=None) -> int:
    """Command-line entry point; prints the table and returns 0."""
    parser = argparse.ArgumentParser(prog="python -m mha_book.bench",
                                     description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[128, 512, 1024, 2048],
                        help="sequence lengths T (default: 128 512 1024 2048)")
    parser.add_argument("--repeats", type=int, default=11, help="repeats per length (median)")
    parser.add_argument("--quick", action="store_true",
                        help="tiny sizes for a smoke test (B=2, E=32, H=4, T=8 16, 3 repeats)")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch intra-op threads (default: torch's choice)")
    args = parser.parse_args(argv)
    if args.repeats < 1 or min(args.lengths) < 1 or (args.threads is not None and args.threads < 1):
        parser.error("--repeats, --lengths and --threads must be positive")
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    if args.quick:
        sizes, lengths, repeats, n, min_s = {"B": 2, "E": 32, "H": 4}, [8, 16], 3, 128, 0.0
    else:
        sizes, lengths, repeats, n, min_s = {"B": 2, "E": 512, "H": 8}, args.lengths, args.repeats, 2048, 0.02
    print(f"mha_book.bench: torch {torch.__version__}, {torch.get_num_threads()} threads, float32, "
          f"inference_mode, B={sizes['B']}, E={sizes['E']}, H={sizes['H']}, S=T, "
          f"{repeats} repeats (median)")
    results = run(lengths, repeats, min_seconds=min_s, **sizes)
    print(format_table(results, matmul_gflops(n, repeats=max(3, repeats))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
