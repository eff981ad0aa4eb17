"""Input checks of :func:`mha_book.attention.flash.online_softmax_update` and
:func:`mha_book.attention.flash.flash_attention`, kept out of them so that the
code chapter 12 shows is the algorithm alone."""

from __future__ import annotations

import numbers

import torch

from mha_book._checks import check_tensor, fmt_shape


def check_online_state(m, l, acc, scores, v) -> None:  # noqa: E741 (the paper's l)
    """Raise unless the running statistics and the new tile fit together.

    Example:
        >>> z = torch.zeros
        >>> check_online_state(z(3), z(3), z(3, 5), z(3, 4), z(4, 6))
        Traceback (most recent call last):
            ...
        ValueError: v must have shape (..., bk, Dv) = (..., 4, 5) (bk from scores, Dv from acc), got (4, 6)
    """
    named = {"m": m, "l": l, "acc": acc, "scores": scores, "v": v}
    for name, t in named.items():
        check_tensor(t, name)
    for name, t in named.items():
        if not t.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got {t.dtype}")
        if t.dtype != scores.dtype:
            raise TypeError(
                f"{name} must have the dtype of scores ({scores.dtype}), got {t.dtype}"
            )
    if scores.dim() < 2 or acc.dim() < 1:
        raise ValueError(
            "scores must have shape (..., bq, bk) and acc (..., bq, Dv), got "
            f"{fmt_shape(scores.shape)} and {fmt_shape(acc.shape)}"
        )
    rows, bk, Dv = tuple(scores.shape[:-1]), scores.shape[-1], acc.shape[-1]
    for name, shape in (("m", rows), ("l", rows), ("acc", (*rows, Dv))):
        if tuple(named[name].shape) != shape:
            dims = "(..., bq, Dv)" if name == "acc" else "(..., bq)"
            raise ValueError(
                f"{name} must have shape {dims} = {fmt_shape(shape)} (bq from "
                f"scores), got {fmt_shape(named[name].shape)}"
            )
    try:  # v's leading dims may broadcast against the tile's (shared heads)
        torch.broadcast_shapes(tuple(v.shape[:-2]), rows[:-1])
        fits = v.dim() >= 2 and tuple(v.shape[-2:]) == (bk, Dv)
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(
            f"v must have shape (..., bk, Dv) = (..., {bk}, {Dv}) (bk from scores, "
            f"Dv from acc), got {fmt_shape(v.shape)}"
        )


def check_block_size(block_size: object) -> tuple[int, int]:
    """``block_size`` as ``(bq, bk)``; raise unless a positive int or a pair of them.

    Example:
        >>> check_block_size(32), check_block_size((16, 8))
        ((32, 32), (16, 8))
    """
    pair = (
        block_size
        if isinstance(block_size, (tuple, list))
        else (block_size, block_size)
    )
    sizes = [
        int(n)
        for n in pair
        if isinstance(n, numbers.Integral) and not isinstance(n, bool)
    ]
    if len(pair) != 2 or len(sizes) != 2 or min(sizes) <= 0:
        raise ValueError(
            "block_size must be a positive int or a pair (block_q, block_k) "
            f"of positive ints, got {block_size!r}"
        )
    return sizes[0], sizes[1]
