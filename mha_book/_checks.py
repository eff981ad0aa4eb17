"""Input validation shared by the public entry points of mha_book.

Every public function checks its arguments here and raises ``TypeError`` or
``ValueError`` with a message that names the argument and states what was
expected and what was received. The book's chapter 07-troubleshooting walks
through these messages.

Legend: B batch, H heads, T query length, S key length, D head dim, E = H·D.

Example:
    >>> import torch
    >>> check_mask(torch.ones(2, 5, dtype=torch.bool), (2, 8, 10, 10))
    Traceback (most recent call last):
        ...
    ValueError: mask of shape (2, 5) does not broadcast to (B, H, T, S) = (2, 8, 10, 10)
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch

__all__ = [
    "fmt_shape",
    "check_tensor",
    "check_rank",
    "check_same_dtype_device",
    "check_mask",
    "check_probability",
    "check_positive_int",
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


def _symbols(rank: int) -> str:
    """Symbolic name of a (..., T, S) shape of the given rank."""
    return {2: "(T, S)", 3: "(B, T, S)", 4: "(B, H, T, S)"}.get(rank, "(..., T, S)")


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


def check_mask(
    mask: object,
    target: Sequence[int],
    *,
    device: torch.device | None = None,
    name: str = "mask",
) -> torch.Tensor:
    """Check a boolean attention mask (True = may attend) against a target shape.

    Args:
        mask: The mask to check.
        target: The shape the mask must broadcast to, e.g. ``(B, H, T, S)``.
        device: If given, the mask must live on this device.
        name: Argument name used in error messages.

    Returns:
        The mask, unchanged.

    Raises:
        TypeError: If the mask is not a tensor or not ``torch.bool``.
        ValueError: If it does not broadcast to ``target`` or is on another device.
    """
    check_tensor(mask, name)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must have dtype torch.bool (True = may attend), got {mask.dtype}; "
            "for nn.MultiheadAttention's True = blocked, use flip_mask_convention"
        )
    target = tuple(int(n) for n in target)
    ok = mask.dim() <= len(target) and all(
        m in (1, t) for m, t in zip(reversed(mask.shape), reversed(target))
    )
    if not ok:
        raise ValueError(
            f"{name} of shape {fmt_shape(mask.shape)} does not broadcast to "
            f"{_symbols(len(target))} = {fmt_shape(target)}"
        )
    if device is not None and mask.device != device:
        raise ValueError(f"{name} must be on device {device}, got {mask.device}")
    return mask


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


def check_positive_int(n: object, name: str) -> int:
    """Raise unless ``n`` is a positive int (bool excluded); return it.

    Example:
        >>> check_positive_int(0, "num_heads")
        Traceback (most recent call last):
            ...
        ValueError: num_heads must be a positive int, got 0
    """
    if type(n) is not int and (
        isinstance(n, bool) or not isinstance(n, numbers.Integral)
    ):
        raise TypeError(f"{name} must be a positive int, got {type(n).__name__}")
    if n <= 0:
        raise ValueError(f"{name} must be a positive int, got {n}")
    return int(n)
