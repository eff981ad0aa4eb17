"""Cases for the benchmark (mha_book.bench): the timings at tiny sizes, so that
each valid call takes milliseconds, and the tables on rows of the shape the
timings return."""

from __future__ import annotations

import mha_book.bench as bench
from tools.fault_review.outcomes import Api


def _squares(n: int) -> list[int]:
    """A measurement for measured_once: its source can be read."""
    return [i * i for i in range(n)]


def _module_row(T: int) -> dict[str, float]:
    """A row of :func:`mha_book.bench.run`, with made-up times."""
    row = {"T": T, "explicit": 2e-3, "fast": 1e-3, "torch_fast": 1e-3}
    return {**row, "torch_weights": 2e-3, "gflops": 40.0}


_DECODE_ROW = {
    "num_kv_heads": 2,
    "no_cache_s": 0.2,
    "cache_s": 0.1,
    "no_cache_tok_s": 160.0,
    "cache_tok_s": 320.0,
    "speedup": 2.0,
    "max_diff": 1e-7,
    "scale": 3.0,
    "cache_bytes": 4096,
}


def timing_apis() -> list[Api]:
    """The protocol: one call, interleaved rounds, orders, ratios, matmul rate."""
    return [
        Api(
            "time_call",
            bench.time_call,
            lambda: {"fn": lambda: None, "min_run_time": 0.0, "clock": "wall"},
        ),
        Api(
            "interleaved_times",
            bench.interleaved_times,
            lambda: {
                "calls": {"a": lambda: 1, "b": lambda: 2},
                "rounds": 2,
                "min_run_time": 0.0,
                "seed": 0,
                "clock": "cpu",
            },
            {"calls": ("calls", "calls['a']")},
        ),
        Api(
            "repeat_orders",
            bench.repeat_orders,
            lambda: {"names": ["a", "b", "c"], "repeats": 2, "seed": 0},
        ),
        Api(
            "paired_ratio",
            bench.paired_ratio,
            lambda: {"ours": [2.0, 3.0], "reference": [1.0, 2.0]},
            {"ours": ("ours", "ours[1]"), "reference": ("reference", "reference[1]")},
        ),
        Api("matmul_gflops", bench.matmul_gflops, lambda: {"n": 8, "repeats": 1}),
        Api(
            "measured_once",
            # its other arguments are the measurement's own, for it to check
            lambda measure: bench.measured_once(measure, 3),
            lambda: {"measure": _squares},
        ),
    ]


_LENGTHS = {"lengths": ("lengths", "lengths[0]", "lengths[1]")}


def module_timing_apis() -> list[Api]:
    """The module against torch's, and at several sizes."""
    heads = {"E": ("E", "embed_dim"), "H": ("H", "num_heads")}
    return [
        Api(
            "run",
            bench.run,
            lambda: (
                {
                    "lengths": [4],
                    "repeats": 1,
                    "B": 1,
                    "E": 8,
                    "H": 2,
                    "min_seconds": 0.0,
                }
            ),
            {**_LENGTHS, **heads},
        ),
        Api(
            "forward_times",
            bench.forward_times,
            lambda: (
                {
                    "sizes": [(8, 2, 4), (8, 2, 6)],
                    "rounds": 1,
                    "B": 1,
                    "need_weights": True,
                    "min_run_time": 0.0,
                    "seed": 0,
                }
            ),
            {"sizes": ("sizes", "sizes[0]", "sizes[1]")},
        ),
    ]


def decoding_apis() -> list[Api]:
    """Decoding with and without a KV cache, timed."""
    heads = {"E": ("E", "embed_dim"), "H": ("H", "num_heads")}
    return [
        Api(
            "decode_speed",
            bench.decode_speed,
            lambda: (
                {
                    "num_kv_heads": [2, 1],
                    "E": 8,
                    "H": 2,
                    "layers": 1,
                    "prompt": 2,
                    "new_tokens": 2,
                    "B": 1,
                    "repeats": 1,
                    "seed": 0,
                }
            ),
            {"num_kv_heads": ("num_kv_heads", "num_kv_heads[0]"), **heads},
        ),
    ]


def kernel_measurement_apis() -> list[Api]:
    """The kernels timed, and their peak memory in a subprocess."""
    sizes = {"B": 1, "H": 1, "D": 4, "block_size": 4, "kernels": ["explicit"]}
    names = {**_LENGTHS, "kernels": ("kernels", "kernels[0]", "kernel")}
    return [
        Api(
            "kernel_times",
            bench.kernel_times,
            lambda: (
                {"lengths": [4, 8], "repeats": 1, **sizes, "threads": 1, "clock": "cpu"}
            ),
            names,
        ),
        Api(
            "measure_peak_memory",
            bench.measure_peak_memory,
            lambda: {"lengths": [8], **sizes, "threads": 1, "timeout": 60.0},
            names,
        ),
    ]


def table_apis() -> list[Api]:
    """The benchmark's three tables, on rows shaped like the timings' results."""
    memory = [{"kernel": "explicit", "T": 8, "extra_bytes": 2048, "seconds": 1e-3}]
    rows = {
        "results": ("results", "results[0]", "results[1]"),
        "times": ("times", "times[0]", "times[1]"),
        "memory": ("memory", "memory[0]"),
        "rows": ("rows", "rows[0]"),
    }
    return [
        Api(
            "format_table",
            bench.format_table,
            lambda: {"results": [_module_row(8), _module_row(16)], "matmul": 80.0},
            rows,
        ),
        Api(
            "format_kernels",
            bench.format_kernels,
            lambda: {
                "times": [{"T": 8, "explicit": 1e-3}, {"T": 16, "explicit": 2e-3}],
                "memory": list(memory),
                "sizes": {"B": 1, "H": 1},
            },
            rows,
        ),
        Api(
            "format_decode",
            lambda rows, **sizes: bench.format_decode(rows, **sizes),
            lambda: (
                {
                    "rows": [dict(_DECODE_ROW)],
                    "E": 8,
                    "H": 2,
                    "layers": 1,
                    "prompt": 2,
                    "new_tokens": 2,
                }
            ),
            rows,
        ),
    ]


def bench_apis() -> list[Api]:
    return [
        *timing_apis(),
        *module_timing_apis(),
        *decoding_apis(),
        *kernel_measurement_apis(),
        *table_apis(),
    ]
