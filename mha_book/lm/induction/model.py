"""An attention-only decoder: L layers of causal multi-head attention, no MLP.

The model of the chapter on induction heads (after Elhage et al.'s toy
models): token embedding, positions, then L pre-norm residual attention
layers, a final LayerNorm and an unembedding::

    x = tok_emb(idx) + pos_emb[:T]            # "learned"; "rope", "none": no sum
    x = x + attn_l(norm_l(x), mask=causal)    # l = 0, ..., L - 1
    logits = lm_head(norm(x))

With no feed-forward layer, everything a layer writes is a sum of its heads'
outputs, so a head can be silenced (:func:`mha_book.lm.heads.masking.masked`)
and its part read off. The attention is
:class:`~mha_book.attention.mha.MultiHeadAttention`; the heads are named
``("layers.l.attn", h)`` as :func:`~mha_book.lm.heads.masking.attention_heads`
lists them. The forward pass has
:class:`~mha_book.models.decoder.CausalDecoder`'s signature, so the chapter's
measures read both.

Legend: B batch, T length, V vocabulary, E model dim, H heads, L layers.
Masks are bool, True = may attend.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from mha_book._checks import check_positive_int, check_token_ids
from mha_book.attention.masks import causal_mask
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.rope import RotaryEmbedding

__all__ = ["POSITIONS", "AttentionOnlyConfig", "AttentionOnlyDecoder"]

#: The position schemes of :class:`AttentionOnlyConfig`.
POSITIONS = ("learned", "rope", "none")


@dataclass(frozen=True)
class AttentionOnlyConfig:
    """The sizes of an :class:`AttentionOnlyDecoder`, checked when made.

    Args:
        vocab_size: Tokens V.
        embed_dim: Model dim E.
        num_heads: Heads per layer H; must divide E (into an even head dim
            with ``"rope"``).
        num_layers: Attention layers L.
        max_len: The longest sequence (the rows of a learned position table).
        positions: ``"learned"``, ``"rope"`` or ``"none"`` (the causal mask
            alone tells the model anything about order).

    Example:
        >>> AttentionOnlyConfig(vocab_size=32, embed_dim=32, num_heads=2,
        ...                     num_layers=2, max_len=24).head_dim
        16
    """

    vocab_size: int
    embed_dim: int = 32
    num_heads: int = 2
    num_layers: int = 2
    max_len: int = 32
    positions: str = "learned"

    def __post_init__(self) -> None:
        for name in ("vocab_size", "embed_dim", "num_heads", "num_layers", "max_len"):
            check_positive_int(getattr(self, name), name)
        if self.embed_dim % self.num_heads:
            raise ValueError(
                f"num_heads must divide embed_dim = {self.embed_dim}, "
                f"got num_heads = {self.num_heads}"
            )
        if self.positions not in POSITIONS:
            raise ValueError(
                f"positions must be one of {POSITIONS}, got {self.positions!r}"
            )
        if self.positions == "rope" and self.head_dim % 2:
            raise ValueError(
                "positions='rope' needs an even head dim embed_dim / num_heads, "
                f"got {self.embed_dim} / {self.num_heads} = {self.head_dim}"
            )

    @property
    def head_dim(self) -> int:
        """D = E / H."""
        return self.embed_dim // self.num_heads


class _AttentionLayer(nn.Module):
    """One pre-norm residual attention layer: ``x + attn(norm(x))``."""

    def __init__(self, config: AttentionOnlyConfig) -> None:
        super().__init__()
        rope = None
        if config.positions == "rope":
            rope = RotaryEmbedding(config.head_dim)
        self.norm = nn.LayerNorm(config.embed_dim)
        self.attn = MultiHeadAttention(config.embed_dim, config.num_heads, rope=rope)

    def forward(self, x, mask, need_weights):
        h = self.norm(x)  # (B, T, E)
        out, weights = self.attn(h, h, h, mask, need_weights=need_weights)
        return x + out, weights  # (B, T, E), (B, H, T, T) or None


class AttentionOnlyDecoder(nn.Module):
    """A causal language model of attention layers only.

    Args:
        config: An :class:`AttentionOnlyConfig`.

    Example:
        >>> config = AttentionOnlyConfig(vocab_size=16, embed_dim=16, num_heads=2,
        ...                              num_layers=2, max_len=12)
        >>> model = AttentionOnlyDecoder(config)
        >>> logits, weights = model(torch.randint(0, 16, (3, 10)), need_weights=True)
        >>> logits.shape, len(weights), weights[1].shape
        (torch.Size([3, 10, 16]), 2, torch.Size([3, 2, 10, 10]))
        >>> from mha_book.lm.heads.masking import attention_heads
        >>> attention_heads(model)[2]
        ('layers.1.attn', 0)
    """

    def __init__(self, config: AttentionOnlyConfig) -> None:
        super().__init__()
        if not isinstance(config, AttentionOnlyConfig):
            raise TypeError(
                f"config must be an AttentionOnlyConfig, got {type(config).__name__}"
            )
        self.config = config
        E, V = config.embed_dim, config.vocab_size
        self.tok_emb = nn.Embedding(V, E)
        self.pos_emb = None
        if config.positions == "learned":
            self.pos_emb = nn.Embedding(config.max_len, E)
        self.layers = nn.ModuleList(
            _AttentionLayer(config) for _ in range(config.num_layers)
        )
        self.norm = nn.LayerNorm(E)
        self.lm_head = nn.Linear(E, V, bias=False)

    def forward(
        self, idx: torch.Tensor, *, need_weights: bool = False
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """Logits of the next token at every position, and each layer's weights.

        Shape:
            - idx: ``(B, T)``, ``T <= max_len``, ids in ``[0, V)``
            - logits: ``(B, T, V)``; ``logits[:, t]`` predicts token ``t + 1``
            - weights: L tensors ``(B, H, T, T)`` (None unless ``need_weights``)

        Raises:
            TypeError: If ``idx`` does not hold integer ids.
            ValueError: If ``idx`` is not ``(B, T)``, T exceeds ``max_len`` or an
                id is out of range.

        Example:
            >>> model = AttentionOnlyDecoder(AttentionOnlyConfig(8, 8, 2, 1, 4))
            >>> model(torch.zeros(1, 5, dtype=torch.long))
            Traceback (most recent call last):
                ...
            ValueError: idx must be at most max_len = 4 tokens long, got T = 5
        """
        check_token_ids(idx, "idx", 2, "(B, T)", self.config.vocab_size)
        T = idx.shape[1]
        if T > self.config.max_len:
            raise ValueError(
                f"idx must be at most max_len = {self.config.max_len} tokens long, "
                f"got T = {T}"
            )
        x = self.tok_emb(idx)  # (B, T, E)
        if self.pos_emb is not None:
            x = x + self.pos_emb.weight[:T]  # (B, T, E) + (T, E)
        mask = causal_mask(T, device=idx.device)  # (T, T), True = may attend
        weights = []
        for layer in self.layers:
            x, w = layer(x, mask, need_weights)  # (B, T, E), (B, H, T, T)
            weights.append(w)
        logits = self.lm_head(self.norm(x))  # (B, T, V)
        return logits, (tuple(weights) if need_weights else None)
