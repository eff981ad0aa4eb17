"""``python -m mha_book.bench``: the command line."""

from __future__ import annotations

import argparse
from typing import TypedDict

import torch

from mha_book.bench.compare import kernel_times, run
from mha_book.bench.decode import decode_speed
from mha_book.bench.flex import flex_speed, format_flex
from mha_book.bench.memory import measure_peak_memory
from mha_book.bench.tables import format_decode, format_kernels, format_table
from mha_book.bench.timing import matmul_gflops

__all__ = ["main"]


class _KernelSizes(TypedDict):
    """The sizes the kernels are timed and measured at (``**`` into both)."""

    B: int
    H: int
    D: int
    block_size: int


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mha_book.bench",
        description="CPU benchmark: mha_book against torch.nn.MultiheadAttention",
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
        "--strict",
        action="store_true",
        help="exit 1 if any target is missed (for a benchmark check)",
    )
    parser.add_argument(
        "--kernel-lengths",
        type=int,
        nargs="+",
        default=[1024, 4096, 8192],
        help="sequence lengths of the kernels section (default: 1024 4096 8192)",
    )
    return parser


def main(argv=None) -> int:
    """Command-line entry point: prints the tables; returns 0, or with
    ``--strict`` 1 when a target is missed."""
    parser = _parser()
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
    tables = [_run_module_table(args), *_run_kernels_and_decoding(args)]
    _run_flex(args)
    # The verdict column of the tables is where the targets are judged.
    missed = [line for t in tables for line in t.splitlines() if "  MISS" in line]
    if args.strict and missed:
        print(f"\n{len(missed)} target(s) missed (--strict):")
        print("\n".join(f"  {line.strip()}" for line in missed))
        return 1
    return 0


def _run_module_table(args) -> str:
    """The four implementations against each other, and the matmul rate."""
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
    table = format_table(results, matmul_gflops(n, repeats=max(3, repeats)))
    print(table)
    return table


def _run_kernels_and_decoding(args) -> tuple[str, str]:
    """The kernels section (time, memory) and the decoding section."""
    repeats = 3 if args.quick else args.repeats
    if args.quick:  # tiny sizes; no memory subprocess (its import alone takes seconds)
        kernel_sizes, kernel_lengths, memory = (
            _KernelSizes(B=1, H=2, D=16, block_size=16),
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
            _KernelSizes(B=1, H=1, D=64, block_size=256),
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
    kernels = format_kernels(
        kernel_times(kernel_lengths, repeats, **kernel_sizes),
        memory,
        sizes=kernel_sizes,
    )
    print(f"\n{kernels}\n")
    sizes = {k: decode[k] for k in ("E", "H", "layers", "prompt", "new_tokens")}
    decoding = format_decode(decode_speed(**decode), **sizes)
    print(decoding)
    return kernels, decoding


def _run_flex(args) -> None:
    """Compiled FlexAttention (chapter 17), skipped with ``--quick``."""
    if args.quick:
        print("\nFlexAttention: skipped with --quick (compiling takes tens of seconds)")
        return
    rows = flex_speed(args.kernel_lengths, window=256, repeats=args.repeats)
    print(f"\n{format_flex(rows, 256)}")
