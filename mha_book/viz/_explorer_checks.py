"""The checks of the attention explorer's inputs (mha_book.viz.explorer).

Each raises ``TypeError`` or ``ValueError`` with a message that names the
argument, what was expected and what was received.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import torch

from mha_book._checks import fmt_shape

ROW_SUM_TOL = 1e-3
PAYLOAD_KEYS = ("tokens", "key_tokens", "weights", "layer", "head", "title", "labels")


def check_index(n: object, name: str, size: int, also: str = "") -> int:
    """``n`` as an int in ``[0, size)``, or a named error."""
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be an int{also}, got {n!r}")
    if not 0 <= int(n) < size:
        raise ValueError(f"{name} must be in [0, {size}){also}, got {n}")
    return int(n)


def check_tokens(tokens: object, name: str = "tokens") -> list[str]:
    if isinstance(tokens, str) or not isinstance(tokens, Sequence):
        raise TypeError(
            f"{name} must be a list of str (one per position), got {type(tokens).__name__}"
        )
    if len(tokens) == 0:
        raise ValueError(f"{name} must hold at least one token, got an empty sequence")
    for i, token in enumerate(tokens):
        if not isinstance(token, str):
            raise TypeError(f"{name}[{i}] must be a str, got {type(token).__name__}")
    return list(tokens)


def check_attentions(
    attentions: object, T: int, S: int | None = None, slack: float = 0.0
) -> torch.Tensor:
    """The weights as one float64 ``(L, H, T, S)`` tensor, or a named error.

    ``S`` is the number of keys: ``T`` for self-attention (the default), the
    number of key tokens for cross-attention.
    """
    if isinstance(attentions, torch.Tensor):
        if attentions.dim() != 4:
            raise ValueError(
                "attentions must be a tensor of shape (L, H, T, T) or a sequence of "
                f"L tensors (H, T, T); got a tensor of shape {fmt_shape(attentions.shape)}"
            )
        layers = list(attentions.unbind(0))
        names = [f"attentions[{i}]" for i in range(len(layers))]
    elif isinstance(attentions, Sequence) and not isinstance(attentions, str):
        layers, names = [], []
        for i, a in enumerate(attentions):
            name = f"attentions[{i}]"
            if not isinstance(a, torch.Tensor):
                raise TypeError(
                    f"{name} must be a torch.Tensor, got {type(a).__name__}"
                )
            if a.dim() == 4 and a.shape[0] == 1:
                a = a[0]  # (1, H, T, T) -> (H, T, T): a batch of one
            elif a.dim() != 3:
                raise ValueError(
                    f"{name} must have shape (H, T, T) or (1, H, T, T), "
                    f"got {fmt_shape(a.shape)}"
                )
            layers.append(a)
            names.append(name)
    else:
        raise TypeError(
            "attentions must be a torch.Tensor (L, H, T, T) or a sequence of "
            f"tensors (H, T, T), got {type(attentions).__name__}"
        )
    if not layers:
        raise ValueError("attentions must hold at least one layer, got none")
    H = layers[0].shape[0]
    if H == 0:
        raise ValueError(f"{names[0]} must hold at least one head, got H = 0")
    keys = "T" if S is None else "S"
    where = "" if S is None else ", S = len(key_tokens)"
    S = T if S is None else S
    for a, name in zip(layers, names):
        if tuple(a.shape) != (H, T, S):
            raise ValueError(
                f"{name} must have shape (H, T, {keys}) = {fmt_shape((H, T, S))} "
                f"(T = len(tokens){where}, H as in attentions[0]), "
                f"got {fmt_shape(a.shape)}"
            )
        if not a.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got {a.dtype}")
        if a.is_meta:
            raise ValueError(
                f"{name} must hold weights, got a tensor on the meta device"
            )
    weights = torch.stack([a.detach().to("cpu", torch.float64) for a in layers])
    # A softmax stored in bfloat16 sums to 1 only within its rounding (about
    # 0.002): the tolerance is the coarsest given dtype's epsilon, at least 1e-3.
    tol = max([ROW_SUM_TOL, *(torch.finfo(a.dtype).eps for a in layers)]) + slack
    check_rows(weights, tol)
    return weights  # (L, H, T, S)


def check_rows(weights: torch.Tensor, tol: float = ROW_SUM_TOL) -> None:
    """Each row of ``(L, H, T, T)`` must be a distribution over the keys."""
    bad = ~weights.isfinite()
    if bad.any():
        where = tuple(int(n) for n in bad.nonzero()[0])
        raise ValueError(
            f"attentions must be finite, got {weights[where].item()} at "
            f"(layer, head, query, key) = {where}"
        )
    if (weights < 0).any():
        where = tuple(int(n) for n in (weights < 0).nonzero()[0])
        raise ValueError(
            "attentions must be non-negative (softmax weights), got "
            f"{weights[where].item():.4g} at (layer, head, query, key) = {where}"
        )
    sums = weights.sum(-1)  # (L, H, T)
    off = (sums - 1).abs() > tol
    if off.any():
        where = tuple(int(n) for n in off.nonzero()[0])
        raise ValueError(
            f"each row of attentions must sum to 1 within {tol:g} (a softmax "
            f"over the keys; drop padded positions first), got {sums[where].item():.4g} "
            f"at (layer, head, query) = {where}"
        )


def check_payload(payload: object) -> dict[str, Any]:
    """A payload as :func:`~mha_book.viz.explorer.explore` makes it, or a named error."""
    if not isinstance(payload, dict):
        raise TypeError(
            f"payload must be a dict as explore() makes it, got {type(payload).__name__}"
        )
    missing = [key for key in PAYLOAD_KEYS if key not in payload]
    if missing:
        raise ValueError(
            f"payload must hold {', '.join(PAYLOAD_KEYS)}; missing {', '.join(missing)}"
        )
    T = len(check_tokens(payload["tokens"]))
    keys = payload["key_tokens"]  # None: self-attention, the keys are the tokens
    S = None if keys is None else len(check_tokens(keys, "payload['key_tokens']"))
    try:
        weights = torch.tensor(payload["weights"], dtype=torch.float64)
    except (TypeError, ValueError):
        raise TypeError(
            "payload['weights'] must be nested lists [L][H][T][T] of numbers"
        ) from None
    # each weight rounded to 0.001 (explore): a row may be off by T halves of it
    weights = check_attentions(weights, T, S, slack=(S or T) * 5e-4)  # (L, H, T, S)
    check_index(payload["layer"], "payload['layer']", weights.shape[0])
    if payload["head"] != "all":
        check_index(payload["head"], "payload['head']", weights.shape[1], " or 'all'")
    if not isinstance(payload["labels"], dict):
        raise TypeError(
            f"payload['labels'] must be a dict, got {type(payload['labels']).__name__}"
        )
    return payload
