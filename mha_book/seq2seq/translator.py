"""An encoder-decoder Transformer built from the package's own layers, with
greedy decoding, full or cached (chapters 16 and 18).

The encoder reads the source characters; the decoder writes the target one
character at a time, and its cross-attention reads the encoder's output.
With ``bottleneck=True`` the decoder reads only the mean of that output, one
vector per sentence, as sequence-to-sequence models did before attention:
the baseline of the chapter.

Cached decoding (:meth:`Translator.greedy` with ``cached=True``) keeps, per
decoder layer, the self-attention's keys and values in a
:class:`~mha_book.attention.kv_cache.KVCache` (they grow by one position per
step) and the cross-attention's keys and values of the encoder output, which
do not change while a sentence is decoded: they are projected once.

Legend: B batch, S source length, T target length, E model dim, H heads,
D = E / H, V vocabulary size, L decoder layers. Masks are bool, True = may attend.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import cast

import torch
from torch import nn

from mha_book._checks import check_positive_int, check_token_ids
from mha_book.attention.heads import merge_heads, split_heads
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.scaled_dot_product import scaled_dot_product_attention
from mha_book.models.blocks import residual
from mha_book.models.layers import DecoderLayer, EncoderLayer

__all__ = [
    "TranslatorConfig",
    "Translator",
    "encode_texts",
    "decode_ids",
    "project_memory",
]

PAD, START = 0, 1  # ids of "<pad>" and "<s>" in a vocabulary (date_vocabulary)


@dataclass(frozen=True)
class TranslatorConfig:
    """The sizes of a :class:`Translator` (``asdict`` gives its arguments)."""

    vocab_size: int
    embed_dim: int = 64
    num_heads: int = 4
    encoder_layers: int = 2
    decoder_layers: int = 2
    ff_dim: int = 128
    max_len: int = 32
    bottleneck: bool = False

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if name != "bottleneck":
                check_positive_int(value, name)
        if not isinstance(self.bottleneck, bool):
            raise TypeError(f"bottleneck must be a bool, got {self.bottleneck!r}")


def encode_texts(texts: Sequence[str], vocab: Sequence[str]) -> torch.Tensor:
    """Ids of ``texts``, padded with ``PAD`` (0) at the end: ``(B, S)``.

    Example:
        >>> encode_texts(["ab", "b"], ["<pad>", "<s>", "a", "b"])
        tensor([[2, 3],
                [3, 0]])
    """
    if isinstance(texts, str) or not isinstance(texts, (list, tuple)) or not texts:
        raise TypeError(f"texts must be a non-empty list of str, got {texts!r:.60}")
    index = {c: i for i, c in enumerate(vocab)}
    for row, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(f"texts[{row}] must be a str, got {type(text).__name__}")
    ids = torch.zeros(len(texts), max(len(t) for t in texts), dtype=torch.long)
    for row, text in enumerate(texts):
        unknown = [c for c in text if c not in index]
        if unknown or not text:
            raise ValueError(
                f"texts[{row}] must be non-empty, in the vocabulary; got {text!r}"
            )
        ids[row, : len(text)] = torch.tensor([index[c] for c in text])
    return ids


def decode_ids(ids: torch.Tensor, vocab: Sequence[str]) -> list[str]:
    """The strings of ``(B, T)`` ids, one character per id: ``<pad>`` and
    ``<s>`` (which a model may still write) show as "·", so position t of
    the string is position t of the output.

    Example:
        >>> vocab = ["<pad>", "<s>", "-", "0", "1", "2"]
        >>> decode_ids(torch.tensor([[1, 5, 3, 2, 0]]), vocab)
        ['·20-·']
    """
    check_token_ids(ids, "ids", 2, "(B, T)", len(vocab), "len(vocab)")
    rows: list[list[int]] = ids.tolist()
    return ["".join(vocab[i] if i > START else "·" for i in row) for row in rows]


class Translator(nn.Module):
    """Encoder layers, decoder layers and the embeddings and head around them.

    Args:
        config: The sizes; ``bottleneck=True`` gives the decoder only the mean
            of the encoder's outputs (one memory position).

    Shape:
        - src: ``(B, S)`` ids, padded with 0
        - tgt: ``(B, T)`` ids, starting with ``<s>`` (1)
        - logits: ``(B, T, V)``; cross weights: L x ``(B, H, T, S)`` (S = 1
          with a bottleneck)

    Example:
        >>> model = Translator(TranslatorConfig(vocab_size=12, embed_dim=16)).eval()
        >>> src = torch.tensor([[5, 6, 7, 0], [8, 9, 10, 11]])
        >>> full, cached = model.greedy(src, 5), model.greedy(src, 5, cached=True)
        >>> full.shape, torch.equal(full, cached)
        (torch.Size([2, 5]), True)
    """

    def __init__(self, config: TranslatorConfig) -> None:
        super().__init__()
        if not isinstance(config, TranslatorConfig):
            raise TypeError(
                f"config must be a TranslatorConfig, got {type(config).__name__}"
            )
        self.config = c = config
        self.embed = nn.Embedding(c.vocab_size, c.embed_dim)  # source and target
        self.position = nn.Embedding(c.max_len, c.embed_dim)  # learned positions
        sizes = (c.embed_dim, c.num_heads, c.ff_dim)
        self.encoder = nn.ModuleList(
            EncoderLayer(*sizes) for _ in range(c.encoder_layers)
        )
        self.decoder = nn.ModuleList(
            DecoderLayer(*sizes) for _ in range(c.decoder_layers)
        )
        self.head = nn.Linear(c.embed_dim, c.vocab_size)  # E -> V

    def _embed(self, ids: torch.Tensor, offset: int = 0) -> torch.Tensor:
        positions = torch.arange(offset, offset + ids.shape[1], device=ids.device)
        return self.embed(ids) + self.position(positions)  # (B, T, E)

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The memory the decoder reads and its key mask.

        Returns ``(memory, memory_mask)``: ``(B, S, E)`` and ``(B, 1, 1, S)``,
        or ``(B, 1, E)`` and ``(B, 1, 1, 1)`` with a bottleneck.
        """
        check_token_ids(src, "src", 2, "(B, S)", self.config.vocab_size)
        if src.shape[1] > self.config.max_len:
            raise ValueError(
                f"src must be at most max_len = {self.config.max_len} long, "
                f"got S = {src.shape[1]}"
            )
        keep = src != PAD  # (B, S): the real characters
        mask = keep[:, None, None, :]  # (B, 1, 1, S): broadcast over heads, queries
        x = self._embed(src)  # (B, S, E)
        for layer in self.encoder:
            x, _ = layer(x, mask)  # (B, S, E)
        if self.config.bottleneck:  # one vector: the mean over the real characters
            count = keep.sum(1, keepdim=True).clamp(min=1)  # (B, 1)
            x = (x * keep[..., None]).sum(1, keepdim=True) / count[
                ..., None
            ]  # (B, 1, E)
            mask = torch.ones_like(mask[..., :1])  # (B, 1, 1, 1)
        return x, mask

    def forward(
        self, src: torch.Tensor, tgt: torch.Tensor
    ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Logits for every target position, and each layer's cross-attention weights."""
        memory, memory_mask = self.encode(src)  # (B, S, E), (B, 1, 1, S)
        check_token_ids(tgt, "tgt", 2, "(B, T)", self.config.vocab_size)
        B, T, most = src.shape[0], tgt.shape[1], self.config.max_len
        if tgt.shape[0] != B or T > most:
            raise ValueError(
                f"tgt must be (B, T) with src's B = {B} and T <= max_len = {most}, "
                f"got {tuple(tgt.shape)}"
            )
        y = self._embed(tgt)  # (B, T, E)
        cross = []
        for layer in self.decoder:
            y, _, weights = layer(y, memory, memory_mask=memory_mask)  # (B, T, E)
            cross.append(weights)  # (B, H, T, S)
        return self.head(y), cross  # (B, T, V)

    @torch.no_grad()
    def greedy(
        self, src: torch.Tensor, steps: int, *, cached: bool = False
    ) -> torch.Tensor:
        """The ``steps`` most likely characters, one at a time: ``(B, steps)`` ids.

        Without ``cached``, every step runs the whole decoder on all the
        characters so far; with it, each step runs only the newest one.
        """
        check_positive_int(steps, "steps")
        if steps > self.config.max_len:  # positions 0 .. steps - 1
            raise ValueError(
                f"steps must be at most max_len = {self.config.max_len}, got {steps}"
            )
        if cached:
            return self._greedy_cached(src, steps)
        tgt = torch.full((src.shape[0], 1), START, device=src.device)  # (B, 1)
        for _ in range(steps):
            logits, _ = self(src, tgt)  # (B, t, V)
            tgt = torch.cat([tgt, logits[:, -1:].argmax(-1)], 1)  # (B, t + 1)
        return tgt[:, 1:]

    def _greedy_cached(self, src: torch.Tensor, steps: int) -> torch.Tensor:
        step = self.start_cached(src)
        token = torch.full((src.shape[0], 1), START, device=src.device)  # (B, 1)
        out = []
        for _ in range(steps):
            token = step(token).argmax(-1)  # (B, 1)
            out.append(token)
        return torch.cat(out, 1)  # (B, steps)

    def start_cached(self, src: torch.Tensor):
        """Encode ``src`` once; return ``step(token) -> logits``, which runs one
        new target position ``(B, 1)`` through the decoder, ``(B, 1, V)``.

        Fed the target characters one by one, the steps give the logits of
        :meth:`forward`, position by position, in eval mode (the steps apply
        no attention dropout).
        """
        memory, memory_mask = self.encode(src)  # (B, S, E), (B, 1, 1, S)
        # once per sentence: each layer's cross-attention keys and values
        layers = cast(list[DecoderLayer], list(self.decoder))  # what __init__ stacked
        memory_kv = [project_memory(layer.cross_attn, memory) for layer in layers]
        caches = [KVCache() for _ in layers]  # self-attention, one per layer

        def step(token: torch.Tensor) -> torch.Tensor:
            check_token_ids(token, "token", 2, "(B, 1)", self.config.vocab_size)
            if token.shape != (src.shape[0], 1):
                raise ValueError(
                    f"token must be (B, 1) = ({src.shape[0]}, 1), got {tuple(token.shape)}"
                )
            if caches[0].seq_len >= self.config.max_len:
                raise ValueError(
                    f"the target reached max_len = {self.config.max_len} positions"
                )
            y = self._embed(token, offset=caches[0].seq_len)  # (B, 1, E)
            for layer, cache, (k, v) in zip(layers, caches, memory_kv):
                y = decoder_step(layer, y, cache, k, v, memory_mask)  # (B, 1, E)
            return self.head(y)  # (B, 1, V)

        return step


def project_memory(
    attention: MultiHeadAttention, memory: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """The cross-attention's keys and values of ``memory``, ``(B, H, S, D)`` each.

    ``MultiHeadAttention.forward`` projects its keys and values on every call;
    during decoding the memory does not change, so they are projected here
    once per sentence, with the module's own weights.
    """
    if attention.num_kv_heads != attention.num_heads:
        raise ValueError("project_memory needs num_kv_heads == num_heads")
    k = split_heads(attention.k_proj(memory), attention.num_heads)  # (B, H, S, D)
    v = split_heads(attention.v_proj(memory), attention.num_heads)  # (B, H, S, D)
    return k, v


def decoder_step(
    layer: DecoderLayer,
    y: torch.Tensor,
    cache: KVCache,
    k: torch.Tensor,
    v: torch.Tensor,
    memory_mask: torch.Tensor,
) -> torch.Tensor:
    """One new position through ``layer``: what ``layer(...)`` computes for the
    last position, from the cached keys and values. ``y``: ``(B, 1, E)``."""
    pre = layer.norm_first

    def self_attention(h):  # appends this position's keys and values to the cache
        return layer.self_attn.forward_step(h, cache, need_weights=False)[0]

    def cross_attention(h):  # the steps of MultiHeadAttention with k, v given
        q = split_heads(layer.cross_attn.q_proj(h), layer.cross_attn.num_heads)
        context, _ = scaled_dot_product_attention(q, k, v, memory_mask)  # (B, H, 1, D)
        return layer.cross_attn.out_proj(merge_heads(context))  # (B, 1, E)

    y, _ = residual(y, self_attention, layer.norm1, layer.dropout1, norm_first=pre)
    y, _ = residual(y, cross_attention, layer.norm2, layer.dropout2, norm_first=pre)
    y, _ = residual(y, layer._ff_block, layer.norm3, layer.dropout3, norm_first=pre)
    return y
