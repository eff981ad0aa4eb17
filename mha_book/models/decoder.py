"""A small causal (decoder-only) Transformer built from :class:`MultiHeadAttention`.

Taught in chapter 10-decoder-char-lm, where it becomes a character-level
language model (see :mod:`mha_book.lm.charlm`).

A decoder-only model has no encoder and therefore no cross-attention: every
block is causal self-attention plus a feed-forward network, each wrapped in a
pre-norm residual connection (as in GPT-2)::

    x = x + self_attn(norm1(x), mask=causal_mask(T))
    x = x + feed_forward(norm2(x))

Positions (chapter 14-positions): a learned table or fixed sinusoids added to
the token embeddings, rotary embeddings applied to queries and keys (RoPE),
ALiBi's distance penalty added to the scores, or none at all (the causal mask
alone then tells the model something about order).

Legend: B batch, H heads, T sequence length (queries and keys: S = T here),
D head dim, E = H·D (``embed_dim``), V vocabulary size, L layers.

Masks are bool, True = may attend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from mha_book._checks import (
    check_positive_int,
    check_probability,
    check_token_ids,
    fmt_shape,
)
from mha_book.attention.alibi import alibi_bias
from mha_book.attention.masks import causal_mask
from mha_book.attention.positions import sinusoidal_positions
from mha_book.attention.rope import RotaryEmbedding
from mha_book.models.blocks import DecoderOnlyBlock

__all__ = ["DecoderConfig", "CausalDecoder", "POSITIONS"]

POSITIONS = ("learned", "sinusoidal", "rope", "alibi", "none")


@dataclass(frozen=True)
class DecoderConfig:
    """The hyper-parameters of a :class:`CausalDecoder`, checked when made.

    ``ff_dim=None`` becomes ``4 * embed_dim``. A checkpoint stores
    ``dataclasses.asdict(config)``; ``CausalDecoder(**that)`` rebuilds the model.

    Example:
        >>> DecoderConfig(vocab_size=65, embed_dim=48, num_heads=4, num_layers=3,
        ...               max_len=64).ff_dim
        192
    """

    vocab_size: int
    embed_dim: int
    num_heads: int
    num_layers: int
    max_len: int
    ff_dim: int | None = None
    dropout: float = 0.0
    positions: str = "learned"
    tie_weights: bool = True

    def __post_init__(self) -> None:
        for name in ("vocab_size", "embed_dim", "num_heads", "num_layers", "max_len"):
            check_positive_int(getattr(self, name), name)
        ff_dim = 4 * self.embed_dim if self.ff_dim is None else self.ff_dim
        # frozen: fill in the checked values through object.__setattr__
        object.__setattr__(self, "ff_dim", check_positive_int(ff_dim, "ff_dim"))
        object.__setattr__(self, "dropout", check_probability(self.dropout, "dropout"))
        if self.positions not in POSITIONS:
            raise ValueError(
                f"positions must be one of {POSITIONS}, got {self.positions!r}"
            )
        head_dim, rest = divmod(self.embed_dim, self.num_heads)
        if self.positions == "rope" and (rest or head_dim % 2):
            raise ValueError(
                "positions='rope' needs an even head dim embed_dim / num_heads, "
                f"got {self.embed_dim} / {self.num_heads}"
            )
        if not isinstance(self.tie_weights, bool):
            raise TypeError(
                f"tie_weights must be a bool, got {type(self.tie_weights).__name__}"
            )


class CausalDecoder(nn.Module):
    """A decoder-only Transformer language model over a vocabulary of V tokens.

    Token embedding, positions (see ``positions``), L
    :class:`~mha_book.models.blocks.DecoderOnlyBlock`, a final LayerNorm and a linear
    head that gives the logits of the next token at every position. With ``tie_weights`` the head
    shares its ``(V, E)`` matrix with the token embedding.

    Args:
        vocab_size: Vocabulary size V.
        embed_dim: Model dimension E.
        num_heads: Heads per block H; must divide E.
        num_layers: Number of blocks L.
        max_len: Longest sequence the model accepts (its context length);
            with learned positions, the number of rows of their table.
        ff_dim: Feed-forward hidden size; default 4·E.
        dropout: Dropout after the embeddings, on attention weights and sublayer
            outputs.
        positions: How the model knows where a token is: ``"learned"`` (a
            trained ``(max_len, E)`` table added to the embeddings, GPT-2),
            ``"sinusoidal"`` (fixed sines and cosines added, the original
            Transformer), ``"rope"`` (queries and keys rotated by position,
            :mod:`mha_book.attention.rope`), ``"alibi"`` (a per-head distance penalty
            added to the scores, :mod:`mha_book.attention.alibi`) or ``"none"``.
        tie_weights: Share the output head's weight with the token embedding.
        device: Device of the parameters.
        dtype: Dtype of the parameters.

    Attributes:
        config: The constructor arguments (without device and dtype) as a
            :class:`DecoderConfig`, enough to rebuild the model for a checkpoint.

    Example:
        >>> model = CausalDecoder(
        ...     vocab_size=50, embed_dim=32, num_heads=4, num_layers=2, max_len=16
        ... )
        >>> idx = torch.randint(0, 50, (3, 10))
        >>> logits, weights = model(idx, need_weights=True)
        >>> logits.shape, len(weights), weights[0].shape
        (torch.Size([3, 10, 50]), 2, torch.Size([3, 4, 10, 10]))
    """

    def __init__(
        self,
        vocab_size: int,
        embed_dim: int,
        num_heads: int,
        num_layers: int,
        max_len: int,
        *,
        ff_dim: int | None = None,
        dropout: float = 0.0,
        positions: str = "learned",
        tie_weights: bool = True,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.config = DecoderConfig(
            vocab_size=vocab_size,
            embed_dim=embed_dim,
            num_heads=num_heads,
            num_layers=num_layers,
            max_len=max_len,
            ff_dim=ff_dim,
            dropout=dropout,
            positions=positions,
            tie_weights=tie_weights,
        )
        ff_dim, dropout = self.config.ff_dim, self.config.dropout
        self.max_len = max_len
        factory = {"device": device, "dtype": dtype}
        self.num_heads = num_heads
        self.positions = positions
        self.tok_emb = nn.Embedding(vocab_size, embed_dim, **factory)
        self.pos_emb = None
        if positions == "learned":
            self.pos_emb = nn.Embedding(max_len, embed_dim, **factory)
        # a fixed table: a buffer, not a parameter, and not saved in the state dict
        table = None
        if positions == "sinusoidal":
            table = sinusoidal_positions(
                max_len,
                embed_dim,
                device=device,
                dtype=dtype or torch.get_default_dtype(),
            )
        self.register_buffer("pos_table", table, persistent=False)
        rope = None
        if positions == "rope":  # an even E / H, checked by DecoderConfig
            rope = RotaryEmbedding(embed_dim // num_heads)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            DecoderOnlyBlock(
                embed_dim, num_heads, ff_dim, dropout=dropout, rope=rope, **factory
            )
            for _ in range(num_layers)
        )
        self.norm = nn.LayerNorm(embed_dim, **factory)
        self.lm_head = nn.Linear(embed_dim, vocab_size, bias=False, **factory)
        # Small embeddings (as in GPT-2): with a tied head, N(0, 1) would make
        # the first logits huge and the first loss far above log V.
        nn.init.normal_(self.tok_emb.weight, std=0.02)
        if self.pos_emb is not None:
            nn.init.normal_(self.pos_emb.weight, std=0.02)
        if tie_weights:
            self.lm_head.weight = self.tok_emb.weight  # one (V, E) parameter, two uses

    def forward(
        self,
        idx: torch.Tensor,
        *,
        need_weights: bool = False,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
        """Logits of the next token at every position.

        Args:
            idx: Token ids, each in ``[0, V)``.
            need_weights: Also return every block's attention weights.

        Shape:
            - idx: ``(B, T)`` with ``T <= max_len``
            - logits: ``(B, T, V)``; ``logits[:, t]`` predicts token ``t + 1``
            - weights: L tensors ``(B, H, T, T)``, zero above the diagonal

        Returns:
            ``(logits, weights)``; ``weights`` is None unless ``need_weights``.

        Raises:
            TypeError: If ``idx`` is not an integer tensor.
            ValueError: If ``idx`` is not ``(B, T)`` or T exceeds ``max_len``.
        """
        check_token_ids(idx, "idx", 2, "(B, T)")
        V = self.tok_emb.num_embeddings
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= V):
            raise ValueError(
                f"idx must hold token ids in [0, vocab_size) = [0, {V}), "
                f"got ids from {int(idx.min())} to {int(idx.max())}"
            )
        T = idx.shape[1]
        if T > self.max_len:
            raise ValueError(
                f"idx must have at most max_len = {self.max_len} positions, "
                f"got shape {fmt_shape(idx.shape)}"
            )
        x = self.tok_emb(idx)  # (B, T, E)
        if self.pos_emb is not None:
            x = x + self.pos_emb.weight[:T]  # (B, T, E) + (T, E)
        elif self.pos_table is not None:
            x = x + self.pos_table[:T]  # (B, T, E) + (T, E)
        x = self.drop(x)
        mask = causal_mask(T, device=idx.device)  # (T, T), True = may attend
        bias = None
        if self.positions == "alibi":
            bias = alibi_bias(self.num_heads, T, device=x.device, dtype=x.dtype)
            bias = bias[None]  # (1, H, T, T)
        weights = []
        for block in self.blocks:
            x, w = block(x, mask, need_weights, bias)  # (B, T, E), (B, H, T, T)
            weights.append(w)
        logits = self.lm_head(self.norm(x))  # (B, T, V)
        return logits, (tuple(weights) if need_weights else None)

    @torch.no_grad()
    def generate(
        self,
        idx: torch.Tensor,
        max_new_tokens: int,
        *,
        temperature: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """Extend ``idx`` by sampling one token at a time (in eval mode).

        The next token is drawn from ``softmax(logits / temperature)``: below 1
        the distribution sharpens, above 1 it flattens. Only the last
        ``max_len`` tokens are fed back as context.

        Args:
            idx: Prompt token ids.
            max_new_tokens: Number of tokens to append.
            temperature: Positive float.
            generator: Random generator for reproducible samples.

        Shape:
            - idx: ``(B, T)``
            - output: ``(B, T + max_new_tokens)``

        Returns:
            The prompt followed by the sampled tokens.

        Example:
            >>> model = CausalDecoder(
            ...     vocab_size=20, embed_dim=16, num_heads=2, num_layers=1, max_len=8
            ... )
            >>> model.generate(torch.zeros(2, 3, dtype=torch.long), 10).shape
            torch.Size([2, 13])
        """
        check_token_ids(idx, "idx", 2, "(B, T)")
        if idx.shape[1] == 0:  # the first step needs a last token to continue
            raise ValueError(
                f"idx must hold at least one token per sequence (the prompt), "
                f"got shape {fmt_shape(idx.shape)}"
            )
        max_new_tokens = check_positive_int(max_new_tokens, "max_new_tokens")
        if (
            isinstance(temperature, bool)
            or not isinstance(temperature, (int, float))
            or not 0 < temperature < math.inf
        ):
            raise ValueError(
                f"temperature must be a finite positive float, got {temperature!r}"
            )
        was_training = self.training
        self.eval()
        try:
            for _ in range(max_new_tokens):
                logits, _ = self(idx[:, -self.max_len :])  # (B, T', V)
                last = logits[:, -1]  # (B, V)
                # Shift the largest logit to 0 before dividing: a tiny temperature
                # then gives 0 and -inf (greedy), never inf - inf = NaN.
                last = last - last.max(dim=-1, keepdim=True).values
                probs = torch.softmax(last / temperature, dim=-1)  # (B, V)
                nxt = torch.multinomial(probs, 1, generator=generator)  # (B, 1)
                idx = torch.cat([idx, nxt], dim=1)  # (B, T + 1)
        finally:
            self.train(was_training)
        return idx
