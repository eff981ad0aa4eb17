"""Boolean attention masks: padding, causal, and conversion to torch's convention.

Taught in chapter 02-scaled-dot-product (masking) and chapter
07-troubleshooting (the two conventions).

Legend: B batch, H heads, T query length, S key length.

Every mask here is a ``torch.bool`` tensor where True means "may attend", as
in :func:`torch.nn.functional.scaled_dot_product_attention`. Masks combine
with ``&`` (both must allow) and broadcast against the scores ``(B, H, T, S)``:

    >>> m = padding_mask(torch.tensor([3, 5]), 5) & causal_mask(5)
    >>> m.shape, m.dtype
    (torch.Size([2, 1, 5, 5]), torch.bool)
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import torch

from mha_book._checks import check_tensor, fmt_shape

__all__ = ["padding_mask", "causal_mask", "flip_mask_convention"]


def _check_length(n: object, name: str) -> int:
    # numbers.Integral admits numpy.int64 and friends; bool is refused.
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be a non-negative int, got {type(n).__name__}")
    if n < 0:
        raise ValueError(f"{name} must be a non-negative int, got {n}")
    return int(n)


def padding_mask(lengths: torch.Tensor | Sequence[int], max_len: int) -> torch.Tensor:
    """Mask that hides the padding at the end of each sequence.

    Args:
        lengths: Number of real tokens in each sequence, each in ``[0, max_len]``.
            A sequence of length 0 gives rows with no allowed key, whose
            attention output is 0.
        max_len: The padded key length S.

    Shape:
        - lengths: ``(B,)``
        - output: ``(B, 1, 1, S)``, True at real tokens. The two singleton dims
          broadcast over heads H and queries T against scores ``(B, H, T, S)``.
          ``mask[:, 0, 0, :]`` is the ``(B, S)`` form.

    Returns:
        A bool tensor on the device of ``lengths``.

    Raises:
        TypeError: If ``lengths`` is not integer or ``max_len`` not an int.
        ValueError: If ``lengths`` is not 1-D or a length lies outside ``[0, max_len]``.

    Example:
        >>> m = padding_mask(torch.tensor([2, 4]), 4)
        >>> m.shape
        torch.Size([2, 1, 1, 4])
        >>> m[:, 0, 0, :].int()
        tensor([[1, 1, 0, 0],
                [1, 1, 1, 1]], dtype=torch.int32)
    """
    if not isinstance(lengths, torch.Tensor):
        if isinstance(lengths, (str, bytes)) or not isinstance(lengths, Sequence):
            raise TypeError(
                "lengths must be a 1-D tensor or a sequence of ints, "
                f"got {type(lengths).__name__}"
            )
        if len(lengths) == 0:  # as_tensor([]) is float32: say what is wrong instead
            raise ValueError("lengths must hold one length per sequence, got none")
        try:
            lengths = torch.as_tensor(lengths)
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(
                f"lengths must be a sequence of ints, got {lengths!r}"
            ) from None
    max_len = _check_length(max_len, "max_len")
    if (
        lengths.is_floating_point()
        or lengths.is_complex()
        or lengths.dtype == torch.bool
    ):
        raise TypeError(f"lengths must have an integer dtype, got {lengths.dtype}")
    if lengths.dim() != 1:
        raise ValueError(
            f"lengths must have shape (B,), got shape {fmt_shape(lengths.shape)}"
        )
    if lengths.numel() and (int(lengths.min()) < 0 or int(lengths.max()) > max_len):
        raise ValueError(
            f"lengths must lie in [0, max_len] = [0, {max_len}], got {lengths.tolist()}"
        )
    positions = torch.arange(max_len, device=lengths.device)  # (S,)
    mask = positions < lengths[:, None]  # (B, S)
    return mask[:, None, None, :]  # (B, 1, 1, S)


def causal_mask(
    T: int, S: int | None = None, *, device: torch.device | str | None = None
) -> torch.Tensor:
    """Mask that lets each query see only keys at or before its own position.

    Queries and keys are aligned at the END (bottom-right): query ``i`` may
    attend key ``j`` iff ``j <= i + (S - T)``. With ``S > T`` this is what a
    decoder with a KV cache needs: the T new queries are the last T positions
    of the S keys. With ``S == T`` it is the usual lower triangle.

    Note that ``is_causal=True`` in
    :func:`torch.nn.functional.scaled_dot_product_attention` aligns at the
    top-left (``j <= i``) instead; the two agree only when ``S == T``. With
    ``S < T`` the first ``T - S`` queries have no allowed key (their output is 0).

    Args:
        T: Query length.
        S: Key length; defaults to ``T``.
        device: Device of the returned mask.

    Shape:
        - output: ``(T, S)``, broadcasts against ``(B, H, T, S)``.

    Returns:
        A bool tensor, True where attending is allowed.

    Example:
        >>> causal_mask(3).int()
        tensor([[1, 0, 0],
                [1, 1, 0],
                [1, 1, 1]], dtype=torch.int32)
        >>> causal_mask(2, 4).int()
        tensor([[1, 1, 1, 0],
                [1, 1, 1, 1]], dtype=torch.int32)
    """
    T = _check_length(T, "T")
    S = T if S is None else _check_length(S, "S")
    ones = torch.ones(T, S, dtype=torch.bool, device=device)  # (T, S)
    return ones.tril(diagonal=S - T)  # (T, S)


def flip_mask_convention(mask: torch.Tensor) -> torch.Tensor:
    """Convert between "True = may attend" and "True = blocked" (self-inverse).

    Two conventions meet in PyTorch:

    - :func:`torch.nn.functional.scaled_dot_product_attention`'s bool
      ``attn_mask`` and every mask in this package: True = may attend.
    - :class:`torch.nn.MultiheadAttention`'s bool ``attn_mask`` (shape
      ``(T, S)`` or ``(B·H, T, S)``) and ``key_padding_mask`` (shape ``(B, S)``):
      True = blocked (not allowed to attend).

    So ``attn_mask=flip_mask_convention(causal_mask(T, S))`` and
    ``key_padding_mask=flip_mask_convention(padding_mask(lengths, S))[:, 0, 0, :]``
    express our masks to ``nn.MultiheadAttention``.

    Args:
        mask: A bool mask in either convention.

    Shape:
        - mask: any
        - output: same as ``mask``

    Returns:
        ``~mask``; applying it twice gives the original mask back.

    Raises:
        TypeError: If ``mask`` is not a bool tensor (a float mask is additive:
            0 / -inf, and has no True/False to flip).

    Example:
        >>> blocked = flip_mask_convention(causal_mask(3))
        >>> blocked.int()
        tensor([[0, 1, 1],
                [0, 0, 1],
                [0, 0, 0]], dtype=torch.int32)
        >>> torch.equal(flip_mask_convention(blocked), causal_mask(3))
        True
    """
    check_tensor(mask, "mask")
    if mask.dtype != torch.bool:
        raise TypeError(f"mask must have dtype torch.bool, got {mask.dtype}")
    return ~mask
