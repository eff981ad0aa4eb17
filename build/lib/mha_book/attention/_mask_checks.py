"""Checks of masks and additive biases (one convention: bool, True = may attend).

Every mask or bias given to a kernel, the module or a layer is checked here:
its dtype, device and rank, and that it broadcasts to the scores
``(B, H, T, S)``; the errors name the argument and say what was expected.

Example:
    >>> import torch
    >>> check_mask(torch.ones(2, 5, dtype=torch.bool), (2, 8, 10, 10))
    Traceback (most recent call last):
        ...
    ValueError: mask of shape (2, 5) does not broadcast to (B, H, T, S) = (2, 8, 10, 10)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from mha_book._checks import check_same_dtype_device, check_tensor, fmt_shape

__all__ = ["check_mask", "check_bias", "check_key_mask"]


def _symbols(rank: int) -> str:
    """Symbolic name of a (..., T, S) shape of the given rank."""
    return {2: "(T, S)", 3: "(B, T, S)", 4: "(B, H, T, S)"}.get(rank, "(..., T, S)")


def check_mask(
    mask: object,
    target: Sequence[int],
    *,
    device: torch.device | None = None,
    name: str = "mask",
    key_mask_arg: bool = False,
) -> torch.Tensor:
    """Check a boolean attention mask (True = may attend) against a target shape.

    Args:
        mask: The mask to check.
        target: The shape the mask must broadcast to, e.g. ``(B, H, T, S)``.
        device: If given, the mask must live on this device.
        name: Argument name used in error messages.
        key_mask_arg: The caller also takes a ``key_mask`` ``(B, S)``; name it
            when a ``(B, S)`` mask is refused.

    Returns:
        The mask, unchanged.

    Raises:
        TypeError: If the mask is not a tensor or not ``torch.bool``.
        ValueError: If it does not broadcast to ``target`` or is on another device.
    """
    mask = check_tensor(mask, name)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must have dtype torch.bool (True = may attend), got {mask.dtype}; "
            "for nn.MultiheadAttention's True = blocked, use flip_mask_convention"
        )
    target = tuple(int(n) for n in target)
    hint = ""
    if len(target) == 4 and tuple(mask.shape) == (target[0], target[-1]):
        use = "key_mask=mask or " if key_mask_arg else ""
        hint = f"; for a per-sequence (B, S) mask use {use}mask[:, None, None, :]"
    _check_broadcasts(mask, target, name, hint)
    _check_device(mask, device, name)
    return mask


def check_bias(
    bias: object, target: Sequence[int], like: torch.Tensor, like_name: str = "q"
) -> torch.Tensor:
    """Check an additive attention bias against the scores ``(..., T, S)``.

    The bias is added to the scaled scores before the mask and the softmax.
    It follows the mask's shape rule (``(T, S)``, ``(S,)`` or every dim of
    ``target``), has the dtype and device of ``like`` (the queries) and is
    finite: keys are blocked with the bool mask, never with ``-inf`` here, so
    there is one mask convention and no NaN can come from the bias.

    Example:
        >>> q = torch.zeros(1, 2, 3, 4)
        >>> check_bias(torch.tensor([[0.0, float("nan")]]), (1, 2, 3, 2), q)
        Traceback (most recent call last):
            ...
        ValueError: bias must be finite (block keys with the bool mask), got NaN or inf
    """
    name = "bias"
    bias = check_tensor(bias, name)
    if not bias.is_floating_point():
        raise TypeError(f"{name} must have a floating-point dtype, got {bias.dtype}")
    check_same_dtype_device(like_name, like, name, bias)
    _check_broadcasts(bias, tuple(int(n) for n in target), name)
    if not bool(bias.isfinite().all()):
        raise ValueError(
            f"{name} must be finite (block keys with the bool mask), got NaN or inf"
        )
    return bias


def _check_broadcasts(
    x: torch.Tensor, target: tuple[int, ...], name: str, hint: str = ""
) -> None:
    """``x`` (a mask or a bias) must broadcast to ``target``, by the rank rule below."""
    _check_mask_rank(x, target, name)
    ok = x.dim() <= len(target) and all(
        n in (1, t) for n, t in zip(reversed(x.shape), reversed(target))
    )
    if not ok:
        raise ValueError(
            f"{name} of shape {fmt_shape(x.shape)} does not broadcast to "
            f"{_symbols(len(target))} = {fmt_shape(target)}{hint}"
        )


def _check_device(x: torch.Tensor, device: torch.device | None, name: str) -> None:
    if device is not None and x.device != device:
        raise ValueError(f"{name} must be on device {device}, got {x.device}")


def _check_mask_rank(mask: torch.Tensor, target: tuple[int, ...], name: str) -> None:
    """Refuse masks (and biases) whose axes broadcasting would have to guess.

    Broadcasting aligns shapes from the right, so a mask with fewer dims than
    the scores is read as their LAST dims: a 3-D ``(B, T, S)`` mask against
    ``(B, H, T, S)`` scores is taken as ``(H, T, S)``, and when ``B == H`` no
    error would ever say so. So between ``(T, S)`` (shared by every sequence
    and head; ``(S,)`` too) and the full rank of the scores nothing is accepted.
    """
    rank, full = mask.dim(), len(target)
    if rank <= 2 or rank >= full:
        return
    hint = ""
    if rank == 3 and full == 4:
        hint = (
            f": a per-sequence (B, T, S) {name} is {name}[:, None] = (B, 1, T, S), "
            f"a per-head (H, T, S) {name} is {name}[None] = (1, H, T, S)"
        )
    raise ValueError(
        f"{name} of shape {fmt_shape(mask.shape)} is ambiguous: give it 2 dims "
        f"(T, S) or all {full} dims of {_symbols(full)} = {fmt_shape(target)}, "
        f"with 1 on each axis it is shared along{hint}"
    )


def check_key_mask(
    key_mask: object,
    batch: int,
    keys: int,
    *,
    device: torch.device | None = None,
    source: str = "",
) -> torch.Tensor:
    """Check a per-sequence key mask ``(B, S)``: True = key may be attended.

    ``source`` says where B and S come from, e.g. ``"B from query, S from key"``.
    It is the same bool convention as every other mask here: True marks a
    real key (Hugging Face's ``attention_mask`` as bools), the opposite of
    :class:`torch.nn.MultiheadAttention`'s ``key_padding_mask``.

    Example:
        >>> check_key_mask(torch.ones(2, 4, dtype=torch.bool), 2, 5)
        Traceback (most recent call last):
            ...
        ValueError: key_mask must have shape (B, S) = (2, 5), got (2, 4)
    """
    name = "key_mask"
    key_mask = check_tensor(key_mask, name)
    if key_mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must have dtype torch.bool (True = may attend), got "
            f"{key_mask.dtype}; nn.MultiheadAttention's key_padding_mask is "
            "True = blocked: use flip_mask_convention"
        )
    if tuple(key_mask.shape) != (batch, keys):
        hint = ""
        if key_mask.dim() == 4:
            hint = "; a (B, 1, 1, S) mask from padding_mask goes to mask instead"
        where = f" ({source})" if source else ""
        raise ValueError(
            f"{name} must have shape (B, S) = {fmt_shape((batch, keys))}{where}, "
            f"got {fmt_shape(key_mask.shape)}{hint}"
        )
    _check_device(key_mask, device, name)
    return key_mask
