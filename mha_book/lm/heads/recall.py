"""The model of the two-key recall task: one attention layer, then a feed-forward.

The pair tokens and the query token are embeddings summed from tables (key +
value for a pair; first + second key for the query), with no positions, so
attention can find a pair only by its content. The query token attends over
the N pairs and itself; a feed-forward network reads the result and a linear
layer scores the V² answers::

    h = q + attn(q, [pairs; q])
    h = h + feed_forward(norm1(h))
    logits = out(norm2(h))

The attention is :class:`~mha_book.attention.mha.MultiHeadAttention` (MHA,
or GQA and MQA with ``num_kv_heads``) or
:class:`~mha_book.attention.latent.LatentAttention` (MLA, with
``latent_dim``: the pairs' latents are cached and the query token decoded
against them, as MLA decodes). Everything but the attention is the same for
every head count, and MHA's four projections are ``(E, E)`` whatever H is.

Legend: B batch, N pairs, S = N + 1 keys, E model dim, H heads, D = E / H,
Hkv key/value heads, C latent dim, R rope dim, V values.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from mha_book._checks import check_positive_int
from mha_book.attention.latent import LatentAttention, LatentCache
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.rope import apply_rotary
from mha_book.lm.heads.task import RecallBatch, RecallTask

__all__ = ["RecallConfig", "RecallModel", "cache_numbers_per_token"]


@dataclass(frozen=True)
class RecallConfig:
    """A :class:`RecallModel`'s sizes and its kind of attention.

    Args:
        task: The :class:`~mha_book.lm.heads.task.RecallTask`.
        embed_dim: Model dim E.
        num_heads: Query heads H; must divide E.
        num_kv_heads: Key/value heads for GQA (1: MQA); None: MHA.
        latent_dim: MLA's latent C; None: not MLA.
        rope_dim: MLA's rotated dim R (even), used only with ``latent_dim``.

    Example:
        >>> RecallConfig(RecallTask(), embed_dim=32, num_heads=8).head_dim
        4
    """

    task: RecallTask
    embed_dim: int = 32
    num_heads: int = 4
    num_kv_heads: int | None = None
    latent_dim: int | None = None
    rope_dim: int = 2

    def __post_init__(self) -> None:
        if not isinstance(self.task, RecallTask):
            raise TypeError(
                f"task must be a RecallTask, got {type(self.task).__name__}"
            )
        E = check_positive_int(self.embed_dim, "embed_dim")
        H = check_positive_int(self.num_heads, "num_heads")
        if E % H:
            raise ValueError(
                f"num_heads must divide embed_dim = {E}, got num_heads = {H}"
            )
        if self.latent_dim is not None and self.num_kv_heads is not None:
            raise ValueError(
                "num_kv_heads and latent_dim: expected at most one (GQA or MLA), "
                f"got {self.num_kv_heads} and {self.latent_dim}"
            )

    @property
    def head_dim(self) -> int:
        """D = E / H."""
        return self.embed_dim // self.num_heads

    @property
    def kind(self) -> str:
        """``"MHA"``, ``"GQA"``, ``"MQA"`` or ``"MLA"``."""
        if self.latent_dim is not None:
            return "MLA"
        if self.num_kv_heads is None or self.num_kv_heads == self.num_heads:
            return "MHA"
        return "MQA" if self.num_kv_heads == 1 else "GQA"


def cache_numbers_per_token(config: RecallConfig) -> int:
    """Numbers the attention layer would cache per token while decoding:
    ``2 · Hkv · D`` for MHA, GQA and MQA, ``C + R`` for MLA.

    Example:
        >>> task = RecallTask()
        >>> [cache_numbers_per_token(RecallConfig(task, 32, 8, num_kv_heads=g))
        ...  for g in (8, 2, 1)]
        [64, 16, 8]
        >>> cache_numbers_per_token(RecallConfig(task, 32, 8, latent_dim=14))
        16
    """
    if config.latent_dim is not None:
        return config.latent_dim + config.rope_dim
    kv_heads = config.num_kv_heads or config.num_heads
    return 2 * kv_heads * config.head_dim


class RecallModel(nn.Module):
    """One attention layer and a feed-forward network over the recall task.

    Args:
        config: A :class:`RecallConfig`.

    Example:
        >>> task = RecallTask(num_pairs=4, num_keys=6, num_values=3)
        >>> model = RecallModel(RecallConfig(task, embed_dim=16, num_heads=4))
        >>> from mha_book.lm.heads.task import recall_batch
        >>> batch = recall_batch(task, 5)
        >>> model(batch).shape, model.attention_maps(batch).shape
        (torch.Size([5, 9]), torch.Size([5, 4, 5]))
    """

    def __init__(self, config: RecallConfig) -> None:
        super().__init__()
        if not isinstance(config, RecallConfig):
            raise TypeError(
                f"config must be a RecallConfig, got {type(config).__name__}"
            )
        self.config = config
        task, E, H = config.task, config.embed_dim, config.num_heads
        self.key_emb = nn.Embedding(task.num_keys, E)
        self.value_emb = nn.Embedding(task.num_values, E)
        self.first_emb = nn.Embedding(task.num_keys, E)  # the query's first key
        self.second_emb = nn.Embedding(task.num_keys, E)  # and its second
        self.attn: MultiHeadAttention | LatentAttention
        if config.latent_dim is None:
            self.attn = MultiHeadAttention(E, H, num_kv_heads=config.num_kv_heads)
        else:
            self.attn = LatentAttention(
                E,
                H,
                head_dim=config.head_dim,
                latent_dim=config.latent_dim,
                rope_dim=config.rope_dim,
            )
        self.norm1, self.norm2 = nn.LayerNorm(E), nn.LayerNorm(E)
        self.linear1, self.linear2 = nn.Linear(E, 4 * E), nn.Linear(4 * E, E)
        self.out = nn.Linear(E, task.num_classes)

    def tokens(self, batch: RecallBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """The query ``(B, 1, E)`` and every token it attends to ``(B, S, E)``."""
        pairs = self.key_emb(batch.keys) + self.value_emb(batch.values)  # (B, N, E)
        first, second = batch.asked.unbind(1)  # (B,), (B,)
        query = (self.first_emb(first) + self.second_emb(second))[:, None]  # (B, 1, E)
        return query, torch.cat([pairs, query], 1)  # (B, 1, E), (B, S, E)

    def forward(self, batch: RecallBatch) -> torch.Tensor:
        """Logits of the V² answers.

        Shape:
            - batch: keys and values ``(B, N)``, asked ``(B, 2)``
            - output: ``(B, V²)``
        """
        query, seq = self.tokens(batch)  # (B, 1, E), (B, S, E)
        if isinstance(self.attn, LatentAttention):
            read = self._latent_read(query, seq[:, :-1])  # (B, 1, E)
        else:
            read, _ = self.attn(query, seq, seq, need_weights=False)  # (B, 1, E)
        h = query + read  # (B, 1, E)
        h = h + self.linear2(torch.relu(self.linear1(self.norm1(h))))  # (B, 1, E)
        return self.out(self.norm2(h))[:, 0]  # (B, V²)

    def _latent_read(self, query: torch.Tensor, pairs: torch.Tensor) -> torch.Tensor:
        """MLA's read for the query, as MLA decodes a token: the pairs' latents
        and rotated keys are cached at positions 0 to N - 1, then the query
        alone attends at position N to them and to itself. The same as the
        last row of the causal ``self.attn([pairs; query])``, without the N
        rows that nothing reads.

        Shape:
            - query: ``(B, 1, E)``; pairs: ``(B, N, E)``
            - output: ``(B, 1, E)``
        """
        attn = self.attn
        assert isinstance(attn, LatentAttention)
        positions = torch.arange(pairs.shape[1], device=pairs.device)  # (N,)
        cache = LatentCache()
        rotated = apply_rotary(attn.k_rope(pairs), positions)  # (B, N, R)
        cache.update(attn.kv_down(pairs), rotated)  # (B, N, C), (B, N, R)
        return attn(query, cache)  # (B, 1, E)

    @torch.no_grad()
    def attention_maps(self, batch: RecallBatch) -> torch.Tensor:
        """Each head's weights from the query over the N pairs and itself.

        Shape:
            - output: ``(B, H, S)``; column N is the query itself

        Raises:
            TypeError: For MLA, whose module returns no weights.
        """
        if not isinstance(self.attn, MultiHeadAttention):
            raise TypeError("attention_maps: expected an MHA/GQA/MQA model, got MLA")
        query, seq = self.tokens(batch)  # (B, 1, E), (B, S, E)
        _, weights = self.attn(query, seq, seq, need_weights=True)  # (B, H, 1, S)
        assert weights is not None  # need_weights=True: the module forms them
        return weights[:, :, 0]  # (B, H, S)

    @torch.no_grad()
    def score_matrix(self, head: int, slot: int = 0) -> torch.Tensor:
        """One head's scores from every query key to every pair key: entry
        ``[a, k]`` is ``q_h · k_h / sqrt(D)`` for a query naming key ``a``
        (in ``slot`` 0, first, or 1, second) and a pair holding key ``k``
        (its value's part averaged over the V values). MHA/GQA/MQA only.

        A product of ``(K, D)`` queries and ``(D, K)`` keys: rank at most D.

        Shape:
            - output: ``(K, K)``
        """
        if not isinstance(self.attn, MultiHeadAttention):
            raise TypeError("score_matrix: expected an MHA/GQA/MQA model, got MLA")
        H, D = self.config.num_heads, self.config.head_dim
        head = check_positive_int(head, "head", allow_zero=True)
        if head >= H or slot not in (0, 1):
            raise ValueError(
                f"head must be in [0, {H}) and slot 0 or 1, got head={head}, slot={slot}"
            )
        query_emb = (self.first_emb, self.second_emb)[slot].weight  # (K, E)
        pair_emb = self.key_emb.weight + self.value_emb.weight.mean(0)  # (K, E)
        q = self.attn.q_proj(query_emb)[:, head * D : (head + 1) * D]  # (K, D)
        kv_head = head // (H // self.attn.num_kv_heads)  # the key head it reads
        k = self.attn.k_proj(pair_emb)[:, kv_head * D : (kv_head + 1) * D]  # (K, D)
        return q @ k.T / D**0.5  # (K, K)
