"""Multi-head attention as an ``nn.Module``: the weights around the kernel.

Taught in chapter 04-implementation; chapter 05-verification checks it
against :class:`torch.nn.MultiheadAttention` with :meth:`from_torch` /
:meth:`to_torch`; chapter 13-mqa-gqa-kv-cache adds ``num_kv_heads`` (grouped-
and multi-query attention) and :meth:`forward_step` (decoding with a KV cache).

Legend: B batch, H heads, Hkv key/value heads (``num_kv_heads``, H by default),
T query length, S key length, D head dim, E = H·D (``embed_dim``); keys and
values enter with ``kdim`` and ``vdim`` features.

Masks are bool, True = may attend: ``mask`` is ``(T, S)`` or 4-D, broadcastable
to ``(B, H, T, S)``; ``key_mask`` is ``(B, S)``, one row of allowed keys per
sequence. A 3-D mask is refused: ``(B, T, S)`` and ``(H, T, S)`` look alike.
"""

from __future__ import annotations

import torch
from torch import nn

from mha_book._checks import (
    check_key_mask,
    check_mask,
    check_positive_int,
    check_probability,
    check_rank,
    check_same_dtype_device,
    check_tensor,
    fmt_shape,
)
from mha_book.attention import fused_attention, scaled_dot_product_attention
from mha_book.heads import merge_heads, repeat_kv, split_heads
from mha_book.kv_cache import KVCache
from mha_book.masks import causal_mask

__all__ = ["MultiHeadAttention"]


def _with_key_mask(
    mask: torch.Tensor | None, key_mask: torch.Tensor | None
) -> torch.Tensor | None:
    """Fold a per-sequence key mask ``(B, S)`` into ``mask``; both True = may attend."""
    if key_mask is None:
        return mask
    key_mask = key_mask[:, None, None, :]  # (B, S) -> (B, 1, 1, S): every head, query
    return key_mask if mask is None else mask & key_mask  # (B, H|1, T|1, S)


def _check_need_weights(need_weights: object) -> None:
    """Raise ``TypeError`` unless ``need_weights`` is a bool."""
    if not isinstance(need_weights, bool):
        raise TypeError(
            f"need_weights must be a bool, got {type(need_weights).__name__}"
        )


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate query, key, value and output projections.

    Same parameters and results as :class:`torch.nn.MultiheadAttention`
    (without ``add_bias_kv`` / ``add_zero_attn``), but one mask convention
    (True = may attend) and per-head weights.

    Parameters are initialised like ``nn.MultiheadAttention``: Xavier-uniform
    ``q_proj``, ``k_proj``, ``v_proj`` weights, ``out_proj`` weight with
    ``nn.Linear``'s default, all biases zero. (Torch draws q, k, v from one
    packed ``(3E, E)`` matrix when ``kdim == vdim == E``, so its Xavier bound is
    ``sqrt(6 / 4E)``; here each matrix has its own bound ``sqrt(6 / (E + kdim))``.)

    With ``num_kv_heads`` smaller than ``num_heads``, ``k_proj`` and ``v_proj``
    produce only ``Hkv`` heads of D features, and each is shared by ``H / Hkv``
    query heads (:func:`~mha_book.heads.repeat_kv`): grouped-query attention,
    or multi-query attention when ``num_kv_heads=1``.

    Args:
        embed_dim: Model dimension E.
        num_heads: Number of (query) heads H; must divide E.
        num_kv_heads: Number of key/value heads Hkv; must divide H. None (the
            default) or H gives standard multi-head attention.
        dropout: Dropout probability on the attention weights, in training mode only.
        bias: Whether the four projections have a bias.
        kdim: Features of the keys; default E.
        vdim: Features of the values; default E.
        batch_first: If True inputs are ``(B, T, E)``, else ``(T, B, E)``.
        device: Device of the parameters.
        dtype: Dtype of the parameters.

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
        device=None,
        dtype=None,
    ) -> None:
        super().__init__()
        self.embed_dim = check_positive_int(embed_dim, "embed_dim")
        self.num_heads = check_positive_int(num_heads, "num_heads")
        if embed_dim % num_heads != 0:
            raise ValueError(
                "embed_dim must be divisible by num_heads, "
                f"got embed_dim = {embed_dim} "
                f"and num_heads = {num_heads}"
            )
        self.head_dim = embed_dim // num_heads
        self.num_kv_heads = (
            num_heads
            if num_kv_heads is None
            else check_positive_int(num_kv_heads, "num_kv_heads")
        )
        if num_heads % self.num_kv_heads != 0:
            raise ValueError(
                f"num_kv_heads must divide num_heads, got num_heads = {num_heads} "
                f"and num_kv_heads = {num_kv_heads}"
            )
        kv_dim = self.num_kv_heads * self.head_dim  # Hkv·D, = E unless Hkv < H
        self.kdim = embed_dim if kdim is None else check_positive_int(kdim, "kdim")
        self.vdim = embed_dim if vdim is None else check_positive_int(vdim, "vdim")
        self.dropout = check_probability(dropout, "dropout")
        self.batch_first = bool(batch_first)
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
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query`` to ``key``/``value``.

        Args:
            query: Queries.
            key: Keys.
            value: Values.
            mask: Optional bool mask, True = may attend: ``(T, S)``, shared by
                every sequence and head, or 4-D, broadcastable to ``(B, H, T, S)``
                (also when ``batch_first=False``). 3-D masks are refused.
            key_mask: Optional bool ``(B, S)``, True at the keys each sequence
                may attend (its real tokens); combined with ``mask``. Note that
                ``nn.MultiheadAttention``'s ``key_padding_mask`` is the opposite,
                True = blocked.
            need_weights: If True, run the explicit kernel and return the
                per-head weights; if False, run PyTorch's fused kernel and
                return ``None`` for the weights.

        Shape:
            - query: ``(B, T, E)``, or ``(T, B, E)`` if ``batch_first=False``
            - key: ``(B, S, kdim)``, or ``(S, B, kdim)``
            - value: ``(B, S, vdim)``, or ``(S, B, vdim)``
            - output: ``(B, T, E)``, or ``(T, B, E)``
            - weights: ``(B, H, T, S)``, never averaged over heads

        Returns:
            ``(output, weights)``; fully masked query rows give zeros.
        """
        self._check_inputs(query, key, value, mask, key_mask, need_weights)
        mask = _with_key_mask(mask, key_mask)  # None, (T, S) or 4-D
        if not self.batch_first:
            query = query.transpose(0, 1)  # (B, T, E)
            key = key.transpose(0, 1)  # (B, S, kdim)
            value = value.transpose(0, 1)  # (B, S, vdim)
        dropout_p = self.dropout if self.training else 0.0

        # --- 1. project: one linear map each for queries, keys and values ---
        q = self.q_proj(query)  # (B, T, E)
        # Hkv·D = E unless num_kv_heads < num_heads
        k = self.k_proj(key)  # (B, S, Hkv·D)
        v = self.v_proj(value)  # (B, S, Hkv·D)

        # --- 2. split: cut E into H heads of D features ---
        q = split_heads(q, self.num_heads)  # (B, H, T, D)
        k = split_heads(k, self.num_kv_heads)  # (B, Hkv, S, D)
        v = split_heads(v, self.num_kv_heads)  # (B, Hkv, S, D)
        n_rep = (
            self.num_heads // self.num_kv_heads
        )  # query heads per key/value head (1 for MHA)
        k = repeat_kv(k, n_rep)  # (B, H, S, D)
        v = repeat_kv(v, n_rep)  # (B, H, S, D)

        # --- 3. attend: every head at once, explicit or fused ---
        # (validate=False: _check_inputs has checked the inputs and the mask already)
        if need_weights:
            context, weights = scaled_dot_product_attention(
                q, k, v, mask, dropout_p=dropout_p, validate=False
            )
            # context (B, H, T, D), weights (B, H, T, S)
        else:
            context = fused_attention(
                q, k, v, mask, dropout_p=dropout_p, validate=False
            )  # (B, H, T, D)
            weights = None

        # --- 4. merge: concatenate the heads back to E features ---
        context = merge_heads(context)  # (B, T, E)

        # --- 5. output projection: mix the heads ---
        output = self.out_proj(context)  # (B, T, E)
        if not self.batch_first:
            output = output.transpose(0, 1)  # (T, B, E)
        return output, weights

    def _check_inputs(
        self, query, key, value, mask, key_mask, need_weights
    ) -> tuple[int, int, int]:
        """Validate the inputs in either layout; return ``(B, T, S)``."""
        b, t = (0, 1) if self.batch_first else (1, 0)  # positions of B and of T / S
        for name, x, dim in (
            ("query", query, self.embed_dim),
            ("key", key, self.kdim),
            ("value", value, self.vdim),
        ):
            check_tensor(x, name)
            length = "T" if name == "query" else "S"
            symbols = (
                f"(B, {length}, {dim})" if self.batch_first else f"({length}, B, {dim})"
            )
            check_rank(x, name, 3, symbols)
            if x.shape[-1] != dim:
                raise ValueError(
                    f"{name} must have shape {symbols}, got {fmt_shape(x.shape)}"
                )
        check_same_dtype_device(
            "the module's parameters", self.q_proj.weight, "query", query
        )
        check_same_dtype_device("query", query, "key", key)
        check_same_dtype_device("query", query, "value", value)
        B, T, S = query.shape[b], query.shape[t], key.shape[t]
        for name, x in (("key", key), ("value", value)):
            if (x.shape[b], x.shape[t]) != (B, S):
                expected = [0, 0, x.shape[-1]]
                expected[b], expected[t] = B, S
                symbols = "(B, S, F)" if self.batch_first else "(S, B, F)"
                raise ValueError(
                    f"{name} must have shape {symbols} = {fmt_shape(expected)} "
                    f"(B from query, S from key), got {fmt_shape(x.shape)}"
                )
        if mask is not None:
            check_mask(
                mask,
                (B, self.num_heads, T, S),
                device=query.device,
                key_mask_arg=True,
            )
        if key_mask is not None:
            check_key_mask(
                key_mask, B, S, device=query.device, source="B from query, S from key"
            )
        _check_need_weights(need_weights)
        return B, T, S

    # --- incremental decoding with a KV cache ---

    def forward_step(
        self,
        x: torch.Tensor,
        kv_cache: KVCache,
        mask: torch.Tensor | None = None,
        need_weights: bool = True,
        *,
        key_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Causal self-attention for new tokens, reusing earlier calls' keys and values.

        The T tokens of ``x`` continue the sequence whose ``past = kv_cache.seq_len``
        keys and values are cached: they are positions ``past, ..., past + T - 1``.
        Their keys and values are appended to ``kv_cache``, and query ``i``
        attends every key ``j <= past + i`` (:func:`~mha_book.masks.causal_mask`
        aligned at the end). Calling it on a whole sequence with an empty cache,
        or token by token, gives the same outputs as
        ``forward(x, x, x, causal_mask(T))``.

        Args:
            x: The new tokens (self-attention: queries, keys and values).
            kv_cache: The layer's cache; updated in place.
            mask: Optional extra bool mask, True = may attend, combined with
                the causal mask: ``(T, past + T)`` or 4-D, broadcastable to
                ``(B, H, T, past + T)``.
            need_weights: As in :meth:`forward`.
            key_mask: Optional bool ``(B, past + T)``, True at the keys (cached
                and new) each sequence may attend, as in :meth:`forward`.

        Shape:
            - x: ``(B, T, E)``, or ``(T, B, E)`` if ``batch_first=False``
            - kv_cache: keys ``(B, Hkv, past, D)`` before, ``(B, Hkv, past + T, D)``
              after
            - output: like ``x``
            - weights: ``(B, H, T, past + T)``

        Returns:
            ``(output, weights)``, as :meth:`forward`.

        Raises:
            TypeError: If ``kv_cache`` is not a :class:`~mha_book.kv_cache.KVCache`,
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
        past = self._check_step_inputs(x, kv_cache, mask, key_mask, need_weights)
        mask = _with_key_mask(mask, key_mask)  # None, (T, S) or 4-D
        if not self.batch_first:
            x = x.transpose(0, 1)  # (B, T, E)
        dropout_p = self.dropout if self.training else 0.0
        q = split_heads(self.q_proj(x), self.num_heads)  # (B, H, T, D)
        k = split_heads(
            self.k_proj(x), self.num_kv_heads
        )  # (B, Hkv, T, D): new tokens only
        v = split_heads(self.v_proj(x), self.num_kv_heads)  # (B, Hkv, T, D)
        k, v = kv_cache.update(k, v)  # (B, Hkv, S, D) with S = past + T: cached and new
        n_rep = self.num_heads // self.num_kv_heads
        k, v = repeat_kv(k, n_rep), repeat_kv(v, n_rep)  # (B, H, S, D)
        T = q.shape[-2]
        if T > 1:  # a single newest token may attend every key: no mask needed
            causal = causal_mask(T, past + T, device=x.device)  # (T, S)
            mask = causal if mask is None else causal & mask  # (..., T, S)
        if (
            need_weights
        ):  # inputs and mask checked by _check_step_inputs: no second check
            context, weights = scaled_dot_product_attention(
                q, k, v, mask, dropout_p=dropout_p, validate=False
            )
        else:
            context = fused_attention(
                q, k, v, mask, dropout_p=dropout_p, validate=False
            )
            weights = None
        output = self.out_proj(merge_heads(context))  # (B, T, E)
        if not self.batch_first:
            output = output.transpose(0, 1)  # (T, B, E)
        return output, weights

    def _check_step_inputs(self, x, kv_cache, mask, key_mask, need_weights) -> int:
        """Validate the inputs of :meth:`forward_step`; return the cached length."""
        if not isinstance(kv_cache, KVCache):
            raise TypeError(
                f"kv_cache must be a mha_book.KVCache, got {type(kv_cache).__name__}"
            )
        if (self.kdim, self.vdim) != (self.embed_dim, self.embed_dim):
            raise ValueError(
                f"forward_step is self-attention and needs kdim == vdim == embed_dim, "
                f"got kdim = {self.kdim}, vdim = {self.vdim}, "
                f"embed_dim = {self.embed_dim}"
            )
        check_tensor(x, "x")
        symbols = (
            f"(B, T, {self.embed_dim})"
            if self.batch_first
            else f"(T, B, {self.embed_dim})"
        )
        check_rank(x, "x", 3, symbols)
        if x.shape[-1] != self.embed_dim:
            raise ValueError(f"x must have shape {symbols}, got {fmt_shape(x.shape)}")
        check_same_dtype_device("the module's parameters", self.q_proj.weight, "x", x)
        _check_need_weights(need_weights)
        B, T = (
            (x.shape[0], x.shape[1]) if self.batch_first else (x.shape[1], x.shape[0])
        )
        past = kv_cache.seq_len
        if past and kv_cache.keys.shape[0] != B:
            raise ValueError(
                f"x must have the batch size of kv_cache ({kv_cache.keys.shape[0]}), "
                f"got {B}"
            )
        if mask is not None:
            check_mask(
                mask,
                (B, self.num_heads, T, past + T),
                device=x.device,
                key_mask_arg=True,
            )
        if key_mask is not None:
            check_key_mask(
                key_mask,
                B,
                past + T,
                device=x.device,
                source="B from x, S = cached + new keys",
            )
        return past

    # --- conversion to and from torch.nn.MultiheadAttention ---

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy an ``nn.MultiheadAttention``'s weights exactly.

        The copy has the same dtype, device and mode. Handles the packed
        ``in_proj_weight`` and the separate ``q/k/v_proj_weight`` (when ``kdim``
        or ``vdim`` differ from E), with or without bias, either ``batch_first``.

        Raises:
            TypeError: If ``module`` is not an ``nn.MultiheadAttention``.
            ValueError: If it uses ``add_bias_kv`` or ``add_zero_attn``, which
                this class does not implement.

        Example:
            >>> theirs = nn.MultiheadAttention(
            ...     64, 4, kdim=32, vdim=16, batch_first=True
            ... )
            >>> ours = MultiHeadAttention.from_torch(theirs)
            >>> ours.k_proj.weight.shape, ours.v_proj.weight.shape
            (torch.Size([64, 32]), torch.Size([64, 16]))
        """
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(
                "module must be a torch.nn.MultiheadAttention, "
                f"got {type(module).__name__}"
            )
        if module.bias_k is not None or module.bias_v is not None:
            raise ValueError(
                "module must have add_bias_kv=False: "
                "MultiHeadAttention has no bias_k/bias_v"
            )
        if module.add_zero_attn:
            raise ValueError(
                "module must have add_zero_attn=False: "
                "MultiHeadAttention does not add a zero key"
            )
        bias = module.in_proj_bias is not None
        if bias != (module.out_proj.bias is not None):
            raise ValueError(
                "module must have biases on both in_proj and out_proj, or on neither"
            )
        ref = module.out_proj.weight
        ours = cls(
            module.embed_dim,
            module.num_heads,
            dropout=module.dropout,
            bias=bias,
            kdim=module.kdim,
            vdim=module.vdim,
            batch_first=module.batch_first,
            device=ref.device,
            dtype=ref.dtype,
        )
        if module._qkv_same_embed_dim:
            weights = module.in_proj_weight.chunk(3)  # 3 x (E, E)
        else:
            weights = (module.q_proj_weight, module.k_proj_weight, module.v_proj_weight)
        biases = (
            module.in_proj_bias.chunk(3) if bias else (None, None, None)
        )  # 3 x (E,)
        with torch.no_grad():
            for proj, w, b in zip(
                (ours.q_proj, ours.k_proj, ours.v_proj), weights, biases
            ):
                proj.weight.copy_(w)
                if b is not None:
                    proj.bias.copy_(b)
            ours.out_proj.weight.copy_(module.out_proj.weight)
            if bias:
                ours.out_proj.bias.copy_(module.out_proj.bias)
        return ours.train(module.training)

    def to_torch(self) -> nn.MultiheadAttention:
        """An ``nn.MultiheadAttention`` with exactly these weights.

        The copy has the same dtype, device and mode.

        Raises:
            ValueError: If ``num_kv_heads != num_heads``: ``nn.MultiheadAttention``
                has one key/value head per query head.

        Example:
            >>> theirs = MultiHeadAttention(64, 4).to_torch()
            >>> theirs.in_proj_weight.shape
            torch.Size([192, 64])
        """
        if self.num_kv_heads != self.num_heads:
            raise ValueError(
                "to_torch needs num_kv_heads == num_heads "
                "(nn.MultiheadAttention has no shared "
                f"key/value heads), got num_heads = {self.num_heads} and "
                f"num_kv_heads = {self.num_kv_heads}"
            )
        ref = self.out_proj.weight
        bias = self.out_proj.bias is not None
        theirs = nn.MultiheadAttention(
            self.embed_dim,
            self.num_heads,
            dropout=self.dropout,
            bias=bias,
            kdim=self.kdim,
            vdim=self.vdim,
            batch_first=self.batch_first,
            device=ref.device,
            dtype=ref.dtype,
        )
        projs = (self.q_proj, self.k_proj, self.v_proj)
        with torch.no_grad():
            if theirs._qkv_same_embed_dim:
                theirs.in_proj_weight.copy_(
                    torch.cat([p.weight for p in projs])
                )  # (3E, E)
            else:
                theirs.q_proj_weight.copy_(self.q_proj.weight)
                theirs.k_proj_weight.copy_(self.k_proj.weight)
                theirs.v_proj_weight.copy_(self.v_proj.weight)
            theirs.out_proj.weight.copy_(self.out_proj.weight)
            if bias:
                theirs.in_proj_bias.copy_(torch.cat([p.bias for p in projs]))  # (3E,)
                theirs.out_proj.bias.copy_(self.out_proj.bias)
        return theirs.train(self.training)

    def extra_repr(self) -> str:
        kv = (
            f", num_kv_heads={self.num_kv_heads}"
            if self.num_kv_heads != self.num_heads
            else ""
        )
        return (
            f"embed_dim={self.embed_dim}, num_heads={self.num_heads}{kv}, "
            f"kdim={self.kdim}, "
            f"vdim={self.vdim}, dropout={self.dropout}, batch_first={self.batch_first}"
        )
