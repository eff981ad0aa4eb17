"""Input validation of :class:`~mha_book.models.decoder.CausalDecoder` and its config.

Kept out of the model, as :mod:`mha_book.attention._mha_checks` is for the
attention module, so that ``forward`` reads as the computation. Every message
names the argument and says expected vs actual.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from mha_book._checks import (
    check_positive_int,
    check_probability,
    check_token_ids,
    fmt_shape,
)

if TYPE_CHECKING:
    from mha_book.models.decoder import DecoderConfig

__all__ = ["POSITIONS", "check_config", "check_generate_inputs", "check_idx"]

#: The position schemes a decoder can use (chapter 14-positions).
POSITIONS = ("learned", "sinusoidal", "rope", "alibi", "none")


def check_config(config: DecoderConfig) -> tuple[int, float]:
    """Raise unless ``config``'s fields fit together; return ``(ff_dim, dropout)``.

    ``ff_dim`` None becomes 4 · ``embed_dim``.
    """
    for name in ("vocab_size", "embed_dim", "num_heads", "num_layers", "max_len"):
        check_positive_int(getattr(config, name), name)
    ff_dim = 4 * config.embed_dim if config.ff_dim is None else config.ff_dim
    ff_dim = check_positive_int(ff_dim, "ff_dim")
    dropout = check_probability(config.dropout, "dropout")
    if config.positions not in POSITIONS:
        raise ValueError(
            f"positions must be one of {POSITIONS}, got {config.positions!r}"
        )
    head_dim, rest = divmod(config.embed_dim, config.num_heads)
    if config.positions == "rope" and (rest or head_dim % 2):
        raise ValueError(
            "positions='rope' needs an even head dim embed_dim / num_heads, "
            f"got {config.embed_dim} / {config.num_heads}"
        )
    if not isinstance(config.tie_weights, bool):
        raise TypeError(
            f"tie_weights must be a bool, got {type(config.tie_weights).__name__}"
        )
    return ff_dim, dropout


def check_idx(idx: object, vocab_size: int, max_len: int) -> None:
    """Raise unless ``idx`` is ``(B, T)`` token ids in ``[0, vocab_size)``, T <= max_len.

    Example:
        >>> import torch
        >>> check_idx(torch.tensor([[0, 7]]), vocab_size=5, max_len=8)
        Traceback (most recent call last):
            ...
        ValueError: idx must hold token ids in [0, vocab_size) = [0, 5), got ids from 0 to 7
    """
    idx = check_token_ids(idx, "idx", 2, "(B, T)")
    V = vocab_size
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= V):
        raise ValueError(
            f"idx must hold token ids in [0, vocab_size) = [0, {V}), "
            f"got ids from {int(idx.min())} to {int(idx.max())}"
        )
    if idx.shape[1] > max_len:
        raise ValueError(
            f"idx must have at most max_len = {max_len} positions, "
            f"got shape {fmt_shape(idx.shape)}"
        )


def check_generate_inputs(
    idx: object, max_new_tokens: object, temperature: object
) -> None:
    """Raise unless ``generate`` can continue ``idx``: a non-empty ``(B, T)``
    prompt, a positive int of new tokens and a finite positive temperature."""
    idx = check_token_ids(idx, "idx", 2, "(B, T)")
    if idx.shape[1] == 0:  # the first step needs a last token to continue
        raise ValueError(
            f"idx must hold at least one token per sequence (the prompt), "
            f"got shape {fmt_shape(idx.shape)}"
        )
    check_positive_int(max_new_tokens, "max_new_tokens")
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, (int, float))
        or not 0 < temperature < math.inf
    ):
        raise ValueError(
            f"temperature must be a finite positive float, got {temperature!r}"
        )
