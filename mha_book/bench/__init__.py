"""CPU inference benchmark: mha_book against torch.nn.MultiheadAttention.

Discussed in chapter 05-verification, which calls :func:`forward_times`; the
tiled kernel's section in chapter 12-flash-attention and the decoding section
in chapter 13-mqa-gqa-kv-cache, which call :func:`measure_peak_memory`,
:func:`kernel_times` and :func:`decode_speed`. Run it with
``python -m mha_book.bench`` (``--quick`` for a smoke test; ``--lengths``,
``--repeats`` and ``--threads`` to choose).

Legend: B batch, H heads, T query length, S key length (here S = T,
self-attention without a mask), D head dim, E = H·D.

Four implementations share the same weights (through
:meth:`~mha_book.attention.mha.MultiHeadAttention.to_torch`):

- explicit: ``MultiHeadAttention(..., need_weights=True)``
- fast: ``MultiHeadAttention(..., need_weights=False)``
- torch fast: ``nn.MultiheadAttention(..., need_weights=False)``
- torch weights: ``nn.MultiheadAttention(..., need_weights=True)`` with
  ``average_attn_weights=False``

Each measurement is a :class:`torch.utils.benchmark.Timer` run
(``blocked_autorange``, :func:`time_call`). Within each repeat the four are
timed one after the other, in a shuffled order (seeded, see
:func:`repeat_orders`); each time is the median over repeats. Each ratio is
the median of the per-repeat ratios (:func:`paired_ratio`, quartiles in
brackets after the verdicts): the two sides of a ratio ran milliseconds
apart, so a slow patch of a shared machine moves both. FLOPs
count the four projections (``2·B·T·E·E`` each for T = S) and the two
attention products (``2·B·H·T·S·D`` each); the achieved rate is compared
with a dense float32 matmul measured on the same machine.

Two more sections follow the table:

- Kernels: every kernel of :data:`mha_book.attention.kernels.ATTENTION_KERNELS`
  (``explicit``, ``fused``, ``flash``, and any kernel registered there) on
  ``(B, H, T, D)`` inputs: time, and the peak memory each needs beyond its
  inputs, measured in a subprocess (see :func:`measure_peak_memory`). Target:
  the flash kernel's extra memory at most 5% of the explicit kernel's at
  T = 8192.
- Decoding: a small stack of self-attention layers generating tokens with and
  without a :class:`~mha_book.attention.kv_cache.KVCache`, for several ``num_kv_heads``
  (see :func:`decode_speed`). Target: the cache is faster and gives the same
  outputs.

The book's pages time things with the same protocol
(:func:`interleaved_times`: the variants compared take turns, round after
round, and the page shows medians of the CPU time, see :data:`CLOCKS`) and call each measurement through
:func:`measured_once`, so that it is taken once per build and both editions
show the same numbers.

One module per job: :mod:`~mha_book.bench.timing` (the protocol, FLOPs),
:mod:`~mha_book.bench.compare` (module and kernel timings),
:mod:`~mha_book.bench.shared` (one measurement for both editions),
:mod:`~mha_book.bench.memory`, :mod:`~mha_book.bench.decode`,
:mod:`~mha_book.bench.tables` (targets, verdicts) and
:mod:`~mha_book.bench.cli`.
"""

from typing import TYPE_CHECKING

from mha_book._lazy import lazy_exports

# name -> the submodule that defines it, imported on first use (mha_book._lazy)
_EXPORTS = {
    "main": "cli",
    "RATIOS": "compare",
    "forward_times": "compare",
    "kernel_times": "compare",
    "run": "compare",
    "decode_speed": "decode",
    "measure_peak_memory": "memory",
    "measured_once": "shared",
    "EXPLICIT_TARGET": "tables",
    "FAST_TARGET": "tables",
    "FLASH_MEMORY_LENGTH": "tables",
    "FLASH_MEMORY_TARGET": "tables",
    "MATMUL_FRACTION_LENGTH": "tables",
    "MATMUL_FRACTION_TARGET": "tables",
    "format_decode": "tables",
    "format_kernels": "tables",
    "format_table": "tables",
    "CLOCKS": "timing",
    "attention_flops": "timing",
    "interleaved_times": "timing",
    "matmul_gflops": "timing",
    "paired_ratio": "timing",
    "repeat_orders": "timing",
    "time_call": "timing",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from mha_book.bench.cli import main
    from mha_book.bench.compare import RATIOS, forward_times, kernel_times, run
    from mha_book.bench.decode import decode_speed
    from mha_book.bench.memory import measure_peak_memory
    from mha_book.bench.shared import measured_once
    from mha_book.bench.tables import (
        EXPLICIT_TARGET,
        FAST_TARGET,
        FLASH_MEMORY_LENGTH,
        FLASH_MEMORY_TARGET,
        MATMUL_FRACTION_LENGTH,
        MATMUL_FRACTION_TARGET,
        format_decode,
        format_kernels,
        format_table,
    )
    from mha_book.bench.timing import (
        CLOCKS,
        attention_flops,
        interleaved_times,
        matmul_gflops,
        paired_ratio,
        repeat_orders,
        time_call,
    )

__all__ = [
    "main",
    "run",
    "paired_ratio",
    "repeat_orders",
    "time_call",
    "interleaved_times",
    "CLOCKS",
    "matmul_gflops",
    "attention_flops",
    "kernel_times",
    "forward_times",
    "measured_once",
    "measure_peak_memory",
    "decode_speed",
    "format_table",
    "format_kernels",
    "format_decode",
    "RATIOS",
    "FAST_TARGET",
    "EXPLICIT_TARGET",
    "MATMUL_FRACTION_TARGET",
    "MATMUL_FRACTION_LENGTH",
    "FLASH_MEMORY_TARGET",
    "FLASH_MEMORY_LENGTH",
]
