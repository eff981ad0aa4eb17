"""Multi-head attention as an ``nn.Module``: the weights around the kernel.

Taught in chapter 04, checked against :class:`torch.nn.MultiheadAttention` in
chapter 05 (:mod:`mha_book.attention.convert`); chapter 13 adds ``num_kv_heads``
(GQA, MQA) and :meth:`~MultiHeadAttention.forward_step` (a KV cache), 14 ``rope``.

Legend: B batch, H heads, Hkv key/value heads (``num_kv_heads``, H by default),
T query length, S key length, D head dim, E = H·D (``embed_dim``); keys and
values enter with ``kdim`` and ``vdim`` features. Masks are bool, True = may
attend, ``(T, S)`` or 4-D, broadcastable to ``(B, H, T, S)`` (3-D is refused:
``(B, T, S)`` and ``(H, T, S)`` look alike); ``key_mask`` is ``(B, S)``. An
additive float ``bias`` (ALiBi) follows the mask's shape rule.
"""

from __future__ import annotations

import torch
from torch import nn

from mha_book._checks import check_positive_int, check_probability
from mha_book.attention._mha_checks import (
    check_forward_inputs,
    check_head_counts,
    check_rope,
    check_step_inputs,
)
from mha_book.attention.heads import merge_heads, repeat_kv, split_heads
from mha_book.attention.kernels import get_kernel
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.mask_helpers import with_key_mask
from mha_book.attention.rope import RotaryEmbedding

__all__ = ["MultiHeadAttention"]


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate query, key, value and output projections.

    Same parameters and results as :class:`torch.nn.MultiheadAttention`
    (without ``add_bias_kv`` / ``add_zero_attn``), but one mask convention
    (True = may attend) and per-head weights. Initialised like it too, except
    that each input matrix has its own Xavier bound (torch's packed
    ``(3E, E)`` matrix shares one).

    With ``num_kv_heads`` < ``num_heads``, ``k_proj`` and ``v_proj`` make Hkv
    heads, each shared by H / Hkv query heads (:func:`~mha_book.attention.heads.repeat_kv`):
    grouped-query attention, or multi-query with ``num_kv_heads=1``.

    Args:
        embed_dim: Model dimension E.
        num_heads: Number of (query) heads H; must divide E.
        num_kv_heads: Key/value heads Hkv; must divide H. None or H: standard MHA.
        dropout: Dropout probability on the attention weights, in training mode only.
        bias: Whether the four projections have a bias.
        kdim: Features of the keys; default E.
        vdim: Features of the values; default E.
        batch_first: If True inputs are ``(B, T, E)``, else ``(T, B, E)``.
        kernel: A name from :data:`~mha_book.attention.kernels.ATTENTION_KERNELS`;
            None runs ``"explicit"`` if the weights are asked for, else ``"fused"``.
        rope: A :class:`~mha_book.attention.rope.RotaryEmbedding` with
            ``head_dim = E / H`` to rotate queries and keys at their positions,
            or None. Self-attention only (S = T): RoPE models' cross-attention
            layers rotate nothing.
        device: The device of the parameters.
        dtype: The dtype of the parameters.

    Example:
        >>> mha = MultiHeadAttention(512, 8)
        >>> x = torch.randn(2, 10, 512)
        >>> out, w = mha(x, x, x)
        >>> out.shape, w.shape
        (torch.Size([2, 10, 512]), torch.Size([2, 8, 10, 10]))
        >>> gqa = MultiHeadAttention(512, 8, num_kv_heads=2)  # 2 key/value heads, D=64
        >>> gqa.k_proj.weight.shape, gqa(x, x, x)[1].shape
        (torch.Size([128, 512]), torch.Size([2, 8, 10, 10]))
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        *,
        num_kv_heads: int | None = None,
        dropout: float = 0.0,
        bias: bool = True,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = True,
        kernel: str | None = None,
        rope: RotaryEmbedding | None = None,
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.head_dim, self.num_kv_heads = check_head_counts(
            embed_dim, num_heads, num_kv_heads
        )  # D = E / H, and Hkv = H unless given: each must divide the one before
        kv_dim = self.num_kv_heads * self.head_dim  # Hkv·D, = E unless Hkv < H
        self.kdim = embed_dim if kdim is None else check_positive_int(kdim, "kdim")
        self.vdim = embed_dim if vdim is None else check_positive_int(vdim, "vdim")
        self.dropout = check_probability(dropout, "dropout")
        self.batch_first = bool(batch_first)
        if kernel is not None:
            get_kernel(kernel)  # ValueError now, not at the first call
        self.kernel = kernel
        self.rope = check_rope(rope, self.head_dim)
        factory = {"device": device, "dtype": dtype}
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias, **factory)
        self.k_proj = nn.Linear(self.kdim, kv_dim, bias=bias, **factory)
        self.v_proj = nn.Linear(self.vdim, kv_dim, bias=bias, **factory)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias, **factory)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.xavier_uniform_(proj.weight)
        for proj in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
            if proj.bias is not None:
                nn.init.zeros_(proj.bias)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = True,
        *,
        key_mask: torch.Tensor | None = None,
        bias: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query`` to ``key``/``value``.

        Args:
            query: The queries (Shape below).
            key: The keys.
            value: The values.
            mask: Optional bool mask, True = may attend: ``(T, S)``, shared by
                every sequence and head, or 4-D, broadcastable to ``(B, H, T, S)``
                (also when ``batch_first=False``). 3-D masks are refused.
            need_weights: If True, return the per-head weights (the module's
                kernel must form them); if False, return ``None`` for them.
            key_mask: Optional bool ``(B, S)``, True at the keys each sequence
                may attend (its real tokens); combined with ``mask``. Note that
                ``nn.MultiheadAttention``'s ``key_padding_mask`` is the opposite,
                True = blocked.
            bias: Optional finite float bias added to every head's scaled
                scores before the masks, ``(T, S)`` or 4-D, broadcastable to
                ``(B, H, T, S)`` like ``mask``; e.g. ``alibi_bias(H, T, S)[None]``.

        Shape:
            - query: ``(B, T, E)``, or ``(T, B, E)`` if ``batch_first=False``
            - key: ``(B, S, kdim)``, or ``(S, B, kdim)``
            - value: ``(B, S, vdim)``, or ``(S, B, vdim)``
            - output: ``(B, T, E)``, or ``(T, B, E)``
            - weights: ``(B, H, T, S)``, never averaged over heads

        Returns:
            ``(output, weights)``; fully masked query rows give zeros.
        """
        check_forward_inputs(
            self, query, key, value, mask, key_mask, need_weights, bias
        )
        mask = with_key_mask(mask, key_mask)  # None, (T, S) or 4-D
        if not self.batch_first:
            query = query.transpose(0, 1)  # (B, T, E)
            key = key.transpose(0, 1)  # (B, S, kdim)
            value = value.transpose(0, 1)  # (B, S, vdim)
        output, weights = self._attend(query, key, value, mask, need_weights, bias)
        if not self.batch_first:
            output = output.transpose(0, 1)  # (T, B, E)
        return output, weights

    def _attend(self, query, key, value, mask, need_weights, bias, kv_cache=None):
        """The five steps of ``forward`` and ``forward_step`` on ``(B, T, E)``
        inputs (with ``kv_cache``, after the cached keys and values)."""
        # --- 1. project: one linear map each for queries, keys and values ---
        q = self.q_proj(query)  # (B, T, E)
        # Hkv·D = E unless num_kv_heads < num_heads
        k = self.k_proj(key)  # (B, S, Hkv·D)
        v = self.v_proj(value)  # (B, S, Hkv·D)

        # --- 2. split: cut E into H heads of D features ---
        q = split_heads(q, self.num_heads)  # (B, H, T, D)
        k = split_heads(k, self.num_kv_heads)  # (B, Hkv, S, D)
        v = split_heads(v, self.num_kv_heads)  # (B, Hkv, S, D)
        past = 0 if kv_cache is None else kv_cache.seq_len  # cached tokens
        if self.rope is not None:  # rotate to positions past, past + 1, ...
            q, k = self.rope(q, k, offset=past)  # (B, H, T, D), (B, Hkv, S, D)
        if kv_cache is not None:  # cached keys and values first: S = past + T
            k, v = kv_cache.update(k, v)  # (B, Hkv, S, D)
        n_rep = self.num_heads // self.num_kv_heads  # query heads per kv head
        k = repeat_kv(k, n_rep)  # (B, H, S, D)
        v = repeat_kv(v, n_rep)  # (B, H, S, D)

        # --- 3. attend: every head at once, by the module's kernel ---
        name = self.kernel or ("explicit" if need_weights else "fused")
        dropout_p = self.dropout if self.training else 0.0
        # (validate=False: the inputs and the mask were checked on entry)
        context, weights = get_kernel(name)(
            q, k, v, mask, bias=bias, dropout_p=dropout_p, validate=False
        )  # (B, H, T, D), (B, H, T, S) or None
        if need_weights and weights is None:
            raise ValueError(
                f"need_weights=True, but kernel {name!r} forms no weights; "
                "pass need_weights=False or use kernel='explicit'"
            )

        # --- 4. merge: concatenate the heads back to E features ---
        context = merge_heads(context)  # (B, T, E)

        # --- 5. output projection: mix the heads ---
        output = self.out_proj(context)  # (B, T, E)
        return output, (weights if need_weights else None)

    def forward_step(
        self,
        x: torch.Tensor,
        kv_cache: KVCache,
        mask: torch.Tensor | None = None,
        need_weights: bool = True,
        *,
        key_mask: torch.Tensor | None = None,
        bias: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Causal self-attention for new tokens, reusing earlier calls' keys and values.

        The T tokens of ``x`` are positions ``past, ..., past + T - 1`` after
        the ``past = kv_cache.seq_len`` cached ones. Their keys and values are
        appended to ``kv_cache`` (rotated first, with ``rope``), and query ``i``
        attends every key ``j <= past + i`` (:func:`~mha_book.attention.masks.causal_mask`
        aligned at the end): whole or token by token, the outputs equal
        ``forward(x, x, x, causal_mask(T))``.

        Args:
            x: The new tokens (self-attention: queries, keys and values).
            kv_cache: The layer's cache; updated in place.
            mask: As in :meth:`forward` (``(T, past + T)`` or 4-D), and causal.
            need_weights: As in :meth:`forward`.
            key_mask: As in :meth:`forward`, ``(B, past + T)``.
            bias: As in :meth:`forward`, ``(T, past + T)`` or 4-D.

        Shape:
            - x: ``(B, T, E)``, or ``(T, B, E)`` if ``batch_first=False``
            - kv_cache: keys ``(B, Hkv, past, D)`` before, ``(B, Hkv, past + T, D)``
              after
            - output: like ``x``
            - weights: ``(B, H, T, past + T)``

        Raises:
            TypeError: If ``kv_cache`` is not a :class:`~mha_book.attention.kv_cache.KVCache`,
                or on the input errors of :meth:`forward`.
            ValueError: If ``kdim`` or ``vdim`` differ from E (not self-attention),
                or the batch size differs from the cache's.

        Example:
            >>> mha, cache = MultiHeadAttention(64, 8, num_kv_heads=2).eval(), KVCache()
            >>> x = torch.randn(2, 5, 64)
            >>> for t in range(5):  # one token at a time
            ...     out, w = mha.forward_step(x[:, t:t + 1], cache)
            >>> out.shape, w.shape, cache.keys.shape
            (torch.Size([2, 1, 64]), torch.Size([2, 8, 1, 5]), torch.Size([2, 2, 5, 8]))
        """
        check_step_inputs(self, x, kv_cache, mask, key_mask, need_weights, bias)
        mask = with_key_mask(mask, key_mask)  # None, (T, S) or 4-D
        if not self.batch_first:
            x = x.transpose(0, 1)  # (B, T, E)
        # causal for several new tokens (a single newest one may attend every
        # key), or the window of a RollingKVCache
        mask = kv_cache.step_mask(x.shape[1], mask, x.device)  # None, (T, S) or 4-D
        output, weights = self._attend(x, x, x, mask, need_weights, bias, kv_cache)
        if not self.batch_first:
            output = output.transpose(0, 1)  # (T, B, E)
        return output, weights

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy an ``nn.MultiheadAttention``: :func:`~mha_book.attention.convert.from_torch`."""
        from mha_book.attention.convert import from_torch  # convert imports this module

        return from_torch(module)

    def to_torch(self) -> nn.MultiheadAttention:
        """As ``nn.MultiheadAttention``: :func:`~mha_book.attention.convert.to_torch`."""
        from mha_book.attention.convert import to_torch

        return to_torch(self)

    def extra_repr(self) -> str:
        kv = f", num_kv_heads={self.num_kv_heads}" * (
            self.num_kv_heads != self.num_heads
        )
        kernel = f", kernel={self.kernel!r}" * (self.kernel is not None)
        rope = f", rope={self.rope}" * (self.rope is not None)
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}{kv}, "
            f"kdim={self.kdim}, vdim={self.vdim}, dropout={self.dropout}, "
            f"batch_first={self.batch_first}{kernel}{rope}"
        )
