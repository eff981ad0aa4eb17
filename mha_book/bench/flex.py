"""Compiled FlexAttention against PyTorch's fused kernel with a mask tensor.

Chapter 17 runs FlexAttention on its eager path, which computes the whole
score matrix: the book's build cannot afford to compile (``torch.compile``
takes tens of seconds on two cores). Its speed is measured here instead, in
``make bench``: for a causal sliding window, the compiled kernel, which skips
the blocks the mask removes entirely, against
:func:`torch.nn.functional.scaled_dot_product_attention` given the same mask
as a dense bool tensor, timed in interleaved rounds (a ratio, not a
duration, is what a shared machine can measure).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

from mha_book._checks import check_positive_int, check_positive_ints
from mha_book.attention import flex
from mha_book.attention.mask_helpers import sliding_window_mask
from mha_book.bench.timing import interleaved_times, paired_ratio

__all__ = ["flex_speed", "format_flex"]


def flex_speed(
    lengths: Sequence[int],
    *,
    window: int = 256,
    B: int = 1,
    H: int = 8,
    D: int = 64,
    repeats: int = 5,
) -> list[dict[str, float]]:
    """Time compiled FlexAttention and the fused kernel on a sliding window.

    Returns:
        One row per length, with ``T``, ``skipped`` (share of 128 × 128 blocks the
        block mask skips), ``flex_s`` and ``fused_s`` (median seconds),
        ``ratio`` and its quartiles ``ratio_q1``, ``ratio_q3`` (flex / fused,
        paired per round), and ``max_diff`` between the two outputs.
    """
    lengths = check_positive_ints(lengths, "lengths")
    window = check_positive_int(window, "window")
    repeats = check_positive_int(repeats, "repeats")
    compiled = torch.compile(flex_attention)
    rows = []
    for T in lengths:
        q, k, v = torch.randn(3, B, H, T, D).unbind(0)  # (B, H, T, D) each
        mask_mod = flex.sliding_window(window)
        block_mask = create_block_mask(mask_mod, None, None, T, T, device="cpu")
        dense = sliding_window_mask(T, window)  # (T, S) bool, True = may attend

        def run_flex():
            return compiled(q, k, v, block_mask=block_mask)

        def run_fused():
            return torch.nn.functional.scaled_dot_product_attention(
                q, k, v, attn_mask=dense
            )

        with torch.inference_mode():
            diff = (run_flex() - run_fused()).abs().max().item()  # compiles once
            times = interleaved_times({"flex": run_flex, "fused": run_fused}, repeats)
        ratio = paired_ratio(times["flex"], times["fused"])
        rows.append(
            {
                "T": T,
                "skipped": block_mask.sparsity() / 100.0,
                "flex_s": statistics.median(times["flex"]),
                "fused_s": statistics.median(times["fused"]),
                "ratio": ratio[0],
                "ratio_q1": ratio[1],
                "ratio_q3": ratio[2],
                "max_diff": diff,
            }
        )
    return rows


def format_flex(rows: list[dict[str, float]], window: int) -> str:
    """The rows of :func:`flex_speed` as a table."""
    lines = [
        f"FlexAttention, compiled, against the fused kernel with a dense mask "
        f"(causal sliding window {window}, float32)",
        f"{'T':>6} {'blocks skipped':>15} {'flex ms':>9} {'fused ms':>9} "
        f"{'flex / fused (q1-q3)':>22} {'max |diff|':>11}",
    ]
    for r in rows:
        spread = f"{r['ratio']:.2f} ({r['ratio_q1']:.2f}-{r['ratio_q3']:.2f})"
        lines.append(
            f"{int(r['T']):>6} {r['skipped']:>15.1%} {1e3 * r['flex_s']:>9.2f} "
            f"{1e3 * r['fused_s']:>9.2f} {spread:>22} {r['max_diff']:>11.1e}"
        )
    return "\n".join(lines)
