"""A small causal (decoder-only) Transformer built from :class:`MultiHeadAttention`.

Taught in chapter 10-decoder-char-lm, where it becomes a character-level
language model (see :mod:`mha_book.lm.charlm`).

A decoder-only model has no encoder and therefore no cross-attention: every
block is causal self-attention plus a feed-forward network, each wrapped in a
pre-norm residual connection (as in GPT-2)::

    x = x + self_attn(norm1(x), mask=causal_mask(T))
    x = x + feed_forward(norm2(x))

The position schemes, which chapter 14-positions compares, are :class:`DecoderConfig`'s
``positions``; with ``"none"`` the causal mask alone tells the model
something about order.

Legend: B batch, H heads, T sequence length (queries and keys: S = T here),
D head dim, E = H·D (``embed_dim``), V vocabulary size, L layers. Masks are
bool, True = may attend.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from mha_book.attention.alibi import alibi_bias
from mha_book.attention.masks import causal_mask
from mha_book.attention.positions import sinusoidal_positions
from mha_book.attention.rope import RotaryEmbedding
from mha_book.models._decoder_checks import (
    POSITIONS,
    check_config,
    check_generate_inputs,
    check_idx,
)
from mha_book.models.blocks import DecoderOnlyBlock, FactoryKwargs

__all__ = ["DecoderConfig", "CausalDecoder", "POSITIONS"]


@dataclass(frozen=True)
class DecoderConfig:
    """The hyper-parameters of a :class:`CausalDecoder`, checked when made.

    ``ff_dim=None`` becomes ``4 * embed_dim``. A checkpoint stores
    ``dataclasses.asdict(config)``; ``CausalDecoder(DecoderConfig(**that))``
    rebuilds the model. The fields:

    - ``vocab_size`` V, ``embed_dim`` E, ``num_heads`` H (dividing E),
      ``num_layers`` L, ``max_len`` (the longest sequence; with learned
      positions, their table's rows), ``ff_dim``, ``dropout`` (embeddings,
      attention weights, sublayer outputs);
    - ``positions``: ``"learned"`` (a trained table added to the embeddings,
      GPT-2), ``"sinusoidal"`` (fixed, the original Transformer, which also multiplies
      the token embeddings by √E), ``"rope"``
      (:mod:`mha_book.attention.rope`), ``"alibi"``
      (:mod:`mha_book.attention.alibi`) or ``"none"``;
    - ``tie_weights``: the output head shares the token embedding's matrix.

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
        ff_dim, dropout = check_config(self)  # ff_dim=None: 4·E
        object.__setattr__(self, "ff_dim", ff_dim)  # frozen: set the checked values
        object.__setattr__(self, "dropout", dropout)


def _position_parts(config: DecoderConfig, device, dtype):
    """What ``config.positions`` adds to the model: ``(learned, table, rope)``.

    A learned ``nn.Embedding`` of ``(max_len, E)``, a fixed sinusoidal
    ``(max_len, E)`` table, or a ``RotaryEmbedding`` for heads of E / H; None
    for the others. ALiBi and ``"none"`` add nothing here: ALiBi's bias is made
    in ``forward``.
    """
    E, kind = config.embed_dim, config.positions
    learned = table = rope = None
    if kind == "learned":
        learned = nn.Embedding(config.max_len, E, device=device, dtype=dtype)
    elif kind == "sinusoidal":
        dtype = dtype or torch.get_default_dtype()
        table = sinusoidal_positions(config.max_len, E, device=device, dtype=dtype)
    elif kind == "rope":  # an even E / H, checked by DecoderConfig
        rope = RotaryEmbedding(E // config.num_heads)
    return learned, table, rope


class CausalDecoder(nn.Module):
    """A decoder-only Transformer language model over a vocabulary of V tokens.

    Token embedding, positions (``config.positions``), L
    :class:`~mha_book.models.blocks.DecoderOnlyBlock`, a final LayerNorm and a
    linear head that gives the logits of the next token at every position.
    With ``config.tie_weights`` the head shares its ``(V, E)`` matrix with the
    token embedding.

    Args:
        config: The model's sizes and choices, a :class:`DecoderConfig`.
        device: The device of the parameters.
        dtype: The dtype of the parameters.

    Attributes:
        config: The :class:`DecoderConfig` the model was built from; a
            checkpoint stores it to rebuild the model.

    Example:
        >>> config = DecoderConfig(
        ...     vocab_size=50, embed_dim=32, num_heads=4, num_layers=2, max_len=16
        ... )
        >>> model = CausalDecoder(config)
        >>> idx = torch.randint(0, 50, (3, 10))
        >>> logits, weights = model(idx, need_weights=True)
        >>> logits.shape, len(weights), weights[0].shape
        (torch.Size([3, 10, 50]), 2, torch.Size([3, 4, 10, 10]))
    """

    pos_table: torch.Tensor | None  # a buffer (register_buffer in __init__)

    def __init__(self, config: DecoderConfig, *, device=None, dtype=None) -> None:
        super().__init__()
        if not isinstance(config, DecoderConfig):
            raise TypeError(
                f"config must be a DecoderConfig, got {type(config).__name__}"
            )
        self.config = config
        E, V = config.embed_dim, config.vocab_size
        factory: FactoryKwargs = {"device": device, "dtype": dtype}
        ff_dim = config.ff_dim
        assert ff_dim is not None  # DecoderConfig.__post_init__ made None 4·E
        self.tok_emb = nn.Embedding(V, E, **factory)
        self.pos_emb, table, rope = _position_parts(config, device, dtype)
        # a fixed table: a buffer, not a parameter, and not saved in the state dict
        self.register_buffer("pos_table", table, persistent=False)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(
            DecoderOnlyBlock(
                E,
                config.num_heads,
                ff_dim,
                dropout=config.dropout,
                rope=rope,
                **factory,
            )
            for _ in range(config.num_layers)
        )
        self.norm = nn.LayerNorm(E, **factory)
        self.lm_head = nn.Linear(E, V, bias=False, **factory)
        # Small embeddings (as in GPT-2): with a tied head, N(0, 1) would make
        # the first logits huge and the first loss far above log V.
        nn.init.normal_(self.tok_emb.weight, std=0.02)
        if self.pos_emb is not None:
            nn.init.normal_(self.pos_emb.weight, std=0.02)
        if config.tie_weights:
            self.lm_head.weight = self.tok_emb.weight  # one (V, E) parameter, two uses

    @property
    def max_len(self) -> int:
        """The longest sequence the model accepts, ``config.max_len``."""
        return self.config.max_len

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
        check_idx(idx, self.tok_emb.num_embeddings, self.max_len)
        T = idx.shape[1]
        x = self.tok_emb(idx)  # (B, T, E)
        if self.pos_emb is not None:
            x = x + self.pos_emb.weight[:T]  # (B, T, E) + (T, E)
        elif self.pos_table is not None:  # as the original Transformer: embeddings
            # times √E, so that the table (entries up to ±1) does not swamp them
            x = x * self.config.embed_dim**0.5 + self.pos_table[:T]  # (B, T, E)
        x = self.drop(x)
        mask = causal_mask(T, device=idx.device)  # (T, T), True = may attend
        bias = None
        if self.config.positions == "alibi":
            H = self.config.num_heads
            bias = alibi_bias(H, T, device=x.device, dtype=x.dtype)
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
            >>> config = DecoderConfig(vocab_size=20, embed_dim=16, num_heads=2,
            ...                        num_layers=1, max_len=8)
            >>> model = CausalDecoder(config)
            >>> model.generate(torch.zeros(2, 3, dtype=torch.long), 10).shape
            torch.Size([2, 13])
        """
        check_generate_inputs(idx, max_new_tokens, temperature)
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
