"""Input validation shared by the public entry points of mha_book.

Every public function checks its arguments here and raises ``TypeError`` or
``ValueError`` with a message that names the argument and states what was
expected and what was received. The book's chapter 07-troubleshooting walks
through these messages.

Legend: B batch, H heads, T query length, S key length, D head dim, E = H·D.

The checks of masks and biases are in :mod:`mha_book.attention._mask_checks`.

Example:
    >>> check_positive_int(0, "num_heads")
    Traceback (most recent call last):
        ...
    ValueError: num_heads must be a positive int, got 0
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import torch

__all__ = [
    "fmt_shape",
    "check_tensor",
    "check_rank",
    "check_same_dtype_device",
    "check_probability",
    "check_positive_int",
    "check_token_ids",
    "check_seconds",
    "check_positive_ints",
    "check_names",
    "check_callable",
]


def fmt_shape(shape: Sequence[int]) -> str:
    """Format a shape as a plain tuple, e.g. ``(2, 8, 10, 10)``.

    Example:
        >>> fmt_shape(torch.Size([2, 5]))
        '(2, 5)'
        >>> fmt_shape([7])
        '(7)'
    """
    return "(" + ", ".join(str(int(n)) for n in shape) + ")"


def check_tensor(x: object, name: str) -> torch.Tensor:
    """Raise ``TypeError`` unless ``x`` is a tensor; return it."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    return x


def check_rank(
    x: torch.Tensor, name: str, rank: int, symbols: str, *, at_least: bool = False
) -> None:
    """Raise ``ValueError`` unless ``x.dim() == rank`` (or ``>= rank``).

    Example:
        >>> check_rank(torch.zeros(2, 3), "query", 3, "(B, T, E)")
        Traceback (most recent call last):
            ...
        ValueError: query must have shape (B, T, E) (3 dims), got shape (2, 3) (2 dims)
    """
    ok = x.dim() >= rank if at_least else x.dim() == rank
    if not ok:
        dims = f"at least {rank} dims" if at_least else f"{rank} dims"
        raise ValueError(
            f"{name} must have shape {symbols} ({dims}), "
            f"got shape {fmt_shape(x.shape)} ({x.dim()} dims)"
        )


def check_same_dtype_device(
    ref_name: str, ref: torch.Tensor, name: str, x: torch.Tensor
) -> None:
    """Raise if ``x`` differs from ``ref`` in dtype or device.

    ``TypeError`` for the dtype, ``ValueError`` for the device.
    """
    if x.dtype != ref.dtype:
        raise TypeError(
            f"{name} must have the dtype of {ref_name} ({ref.dtype}), got {x.dtype}"
        )
    if x.device != ref.device:
        raise ValueError(
            f"{name} must be on the device of {ref_name} ({ref.device}), got {x.device}"
        )


def check_probability(p: object, name: str) -> float:
    """Raise unless ``p`` is a real number in ``[0, 1)``; return it as float.

    Example:
        >>> check_probability(1.0, "dropout_p")
        Traceback (most recent call last):
            ...
        ValueError: dropout_p must be in [0, 1), got 1.0
    """
    if isinstance(p, bool) or not isinstance(p, numbers.Real):
        raise TypeError(f"{name} must be a float in [0, 1), got {type(p).__name__}")
    if not 0.0 <= float(p) < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {p}")
    return float(p)


def check_token_ids(
    ids: object,
    name: str,
    rank: int,
    symbols: str,
    vocab_size: int | None = None,
    vocab_name: str = "vocab_size",
) -> torch.Tensor:
    """Raise unless ``ids`` is an integer tensor of the given rank, with every
    id in ``[0, vocab_size)`` when that is given; return it.

    Example:
        >>> check_token_ids(torch.zeros(2, 3), "idx", 2, "(B, T)")
        Traceback (most recent call last):
            ...
        TypeError: idx must hold integer token ids, got dtype torch.float32
        >>> check_token_ids(torch.tensor([0, 3]), "ids", 1, "(N,)", vocab_size=3)
        Traceback (most recent call last):
            ...
        ValueError: ids must be in [0, vocab_size) = [0, 3), got values in [0, 3]
    """
    ids = check_tensor(ids, name)
    check_rank(ids, name, rank, symbols)
    if ids.is_meta:
        raise ValueError(f"{name} must hold token ids, got a tensor on the meta device")
    if ids.is_floating_point() or ids.is_complex() or ids.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer token ids, got dtype {ids.dtype}")
    if vocab_size is not None and ids.numel():
        low, high = int(ids.min()), int(ids.max())
        if not 0 <= low <= high < vocab_size:
            raise ValueError(
                f"{name} must be in [0, {vocab_name}) = [0, {vocab_size}), "
                f"got values in [{low}, {high}]"
            )
    return ids


def check_positive_int(n: object, name: str, *, allow_zero: bool = False) -> int:
    """Raise unless ``n`` is a positive int (bool excluded); return it.

    With ``allow_zero``, 0 is accepted too (a count or an offset).

    Example:
        >>> check_positive_int(0, "num_heads")
        Traceback (most recent call last):
            ...
        ValueError: num_heads must be a positive int, got 0
        >>> check_positive_int(-1, "offset", allow_zero=True)
        Traceback (most recent call last):
            ...
        ValueError: offset must be a non-negative int, got -1
    """
    kind = "a non-negative int" if allow_zero else "a positive int"
    if type(n) is not int and (
        isinstance(n, bool) or not isinstance(n, numbers.Integral)
    ):
        raise TypeError(f"{name} must be {kind}, got {type(n).__name__}")
    if n < 0 or (n == 0 and not allow_zero):
        raise ValueError(f"{name} must be {kind}, got {n}")
    return int(n)


def check_seconds(x: object, name: str, *, allow_zero: bool = True) -> float:
    """Raise unless ``x`` is a finite real number of seconds, >= 0 (or > 0).

    Example:
        >>> check_seconds(float("inf"), "min_run_time")
        Traceback (most recent call last):
            ...
        ValueError: min_run_time must be a finite number of seconds >= 0, got inf
    """
    bound = ">= 0" if allow_zero else "> 0"
    if isinstance(x, bool) or not isinstance(x, numbers.Real):
        raise TypeError(
            f"{name} must be a number of seconds {bound}, got {type(x).__name__}"
        )
    if not math.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
        raise ValueError(f"{name} must be a finite number of seconds {bound}, got {x}")
    return float(x)


def check_positive_ints(values: object, name: str) -> list[int]:
    """Raise unless ``values`` is a non-empty sequence of positive ints; return them.

    Example:
        >>> check_positive_ints([128, 0], "lengths")
        Traceback (most recent call last):
            ...
        ValueError: lengths[1] must be a positive int, got 0
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(
            f"{name} must be a sequence of positive ints, got {type(values).__name__}"
        )
    if not values:
        raise ValueError(f"{name} must hold at least one positive int, got none")
    return [check_positive_int(n, f"{name}[{i}]") for i, n in enumerate(values)]


def check_names(values: object, name: str) -> list[str]:
    """Raise unless ``values`` is a non-empty sequence of str (one str is not).

    Example:
        >>> check_names("explicit", "kernels")
        Traceback (most recent call last):
            ...
        TypeError: kernels must be a sequence of names (str), got one str: 'explicit'
    """
    if isinstance(values, str):
        raise TypeError(
            f"{name} must be a sequence of names (str), got one str: {values!r}"
        )
    if not isinstance(values, Sequence):
        raise TypeError(
            f"{name} must be a sequence of names (str), got {type(values).__name__}"
        )
    if not values:
        raise ValueError(f"{name} must hold at least one name, got none")
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(value).__name__}")
    return list(values)


def check_callable(fn: object, name: str) -> None:
    """Raise ``TypeError`` unless ``fn`` can be called."""
    if not callable(fn):
        raise TypeError(f"{name} must be callable, got {type(fn).__name__}")


def check_fits_memory(nbytes: int, name: str, device=None) -> None:
    """Refuse an allocation of ``nbytes`` that the device could never hold, before
    it is tried: on the CPU the machine's physical memory, on a GPU its total.

    Example:
        >>> check_fits_memory(2**20, "capacity")
        >>> check_fits_memory(2**70, "capacity")
        Traceback (most recent call last):
        ...
        ValueError: capacity would need 1.07e+09 TiB of memory, more than this cpu has (...)
    """
    device = torch.device("cpu" if device is None else device)
    if device.type == "cuda" and torch.cuda.is_available():
        total = torch.cuda.get_device_properties(device).total_memory
    elif device.type == "cpu":
        import os

        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # pragma: no cover: not POSIX
            return
    else:
        return  # meta and other devices: nothing to hold
    if nbytes > total:
        raise ValueError(
            f"{name} would need {nbytes / 2**40:.3g} TiB of memory, more than this "
            f"{device.type} has ({total / 2**30:.1f} GiB)"
        )
