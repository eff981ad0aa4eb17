"""More bool masks: sliding windows, padded causal masks, key masks folded in.

Built from :mod:`mha_book.attention.masks`; the same convention, True = may attend,
and the same end alignment of queries and keys as
:func:`~mha_book.attention.masks.causal_mask`.

Legend: B batch, T query length, S key length.

Example:
    >>> sliding_window_mask(4, 2).int()
    tensor([[1, 0, 0, 0],
            [1, 1, 0, 0],
            [0, 1, 1, 0],
            [0, 0, 1, 1]], dtype=torch.int32)
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from mha_book._checks import check_positive_int
from mha_book.attention.masks import _check_length, causal_mask, padding_mask

__all__ = ["sliding_window_mask", "padded_causal_mask", "with_key_mask"]


def sliding_window_mask(
    T: int,
    window: int,
    S: int | None = None,
    *,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Causal mask that also forgets keys more than ``window - 1`` positions back.

    Query ``i`` sits at position ``i' = i + S - T`` (aligned at the end, as in
    :func:`~mha_book.attention.masks.causal_mask`) and may attend key ``j`` iff
    ``i' - window < j <= i'``: itself and the ``window - 1`` keys before it,
    as in Longformer's and Mistral's local attention. With ``window >= S`` it
    is ``causal_mask(T, S)``.

    Args:
        T: Query length.
        window: Number of keys each query sees, itself included; at least 1.
        S: Key length; defaults to ``T``.
        device: Device of the returned mask.

    Shape:
        - output: ``(T, S)``, broadcasts against ``(B, H, T, S)``.

    Raises:
        ValueError: If ``window < 1``. TypeError: if it is not an int.

    Example:
        >>> sliding_window_mask(2, 2, S=4).int()  # the last 2 of 4 positions
        tensor([[0, 1, 1, 0],
                [0, 0, 1, 1]], dtype=torch.int32)
    """
    window = check_positive_int(window, "window")
    T = _check_length(T, "T")
    S = T if S is None else _check_length(S, "S")
    causal = causal_mask(T, S, device=device)  # (T, S): j <= i'
    ones = torch.ones(T, S, dtype=torch.bool, device=device)  # (T, S)
    recent = ones.triu(diagonal=S - T - window + 1)  # (T, S): j > i' - window
    return causal & recent  # (T, S)


def padded_causal_mask(
    lengths: torch.Tensor | Sequence[int], max_len: int, side: str = "right"
) -> torch.Tensor:
    """Causal self-attention masks for a batch of sequences padded to ``max_len``.

    Each sequence's causal triangle starts at its first real token: with
    ``side="right"`` its tokens are positions ``0 .. L-1``, with
    ``side="left"`` they are the last ``L`` positions. A real query attends
    the real keys at or before it; padding keys are blocked. A padding query
    attends nothing: its row is all False, and the package's kernels give a
    fully masked row zeros (output and gradients), so padding stays out of
    the result.

    Args:
        lengths: Number of real tokens in each sequence, in ``[0, max_len]``.
        max_len: The padded length T (= S).
        side: Where the padding is: ``"right"`` (after the tokens) or
            ``"left"`` (before them, as for batched generation).

    Shape:
        - lengths: ``(B,)``
        - output: ``(B, 1, T, T)``, broadcasts against ``(B, H, T, T)``.

    Raises:
        ValueError: If ``side`` is neither ``"left"`` nor ``"right"``, or on
            the length errors of :func:`~mha_book.attention.masks.padding_mask`.

    Example:
        >>> m = padded_causal_mask([2, 3], 3, side="left")
        >>> m.shape
        torch.Size([2, 1, 3, 3])
        >>> m[0, 0].int()  # one padding token, then two real ones
        tensor([[0, 0, 0],
                [0, 1, 0],
                [0, 1, 1]], dtype=torch.int32)
    """
    if side not in ("left", "right"):
        raise ValueError(f"side must be 'left' or 'right', got {side!r}")
    real = padding_mask(lengths, max_len)[:, 0, 0, :]  # (B, T): True at tokens
    if side == "left":
        real = real.flip(-1)  # (B, T): the tokens are the last L positions
    causal = causal_mask(max_len, device=real.device)  # (T, T)
    mask = causal & real[:, None, :] & real[:, :, None]  # (B, T, T)
    return mask[:, None]  # (B, 1, T, T)


def with_key_mask(
    mask: torch.Tensor | None, key_mask: torch.Tensor | None
) -> torch.Tensor | None:
    """Fold a per-sequence key mask ``(B, S)`` into ``mask``; both True = may attend.

    Shape:
        - mask: None, ``(T, S)`` or 4-D, broadcastable to ``(B, H, T, S)``
        - key_mask: None or ``(B, S)``
        - output: ``mask & key_mask[:, None, None, :]``, or the one given

    Example:
        >>> with_key_mask(causal_mask(3), torch.tensor([[True, True, False]])).shape
        torch.Size([1, 1, 3, 3])
    """
    if key_mask is None:
        return mask
    key_mask = key_mask[:, None, None, :]  # (B, S) -> (B, 1, 1, S): every head, query
    return key_mask if mask is None else mask & key_mask  # (B, H|1, T|1, S)
