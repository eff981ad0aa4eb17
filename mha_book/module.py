"""Multi-head attention as an ``nn.Module``: the weights around the kernel.

Taught in chapter 04-implementation; chapter 05-verification checks it
against :class:`torch.nn.MultiheadAttention` with :meth:`from_torch` /
:meth:`to_torch`.

Legend: B batch, H heads, T query length, S key length, D head dim, E = H·D
(``embed_dim``); keys and values enter with ``kdim`` and ``vdim`` features.

Masks are bool, True = may attend, broadcastable to ``(B, H, T, S)``.
"""

from __future__ import annotations

import torch
from torch import nn

from mha_book._checks import (
    check_mask,
    check_positive_int,
    check_probability,
    check_rank,
    check_same_dtype_device,
    check_tensor,
    fmt_shape,
)
from mha_book.attention import fused_attention, scaled_dot_product_attention
from mha_book.heads import merge_heads, split_heads

__all__ = ["MultiHeadAttention"]


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

    Args:
        embed_dim: Model dimension E.
        num_heads: Number of heads H; must divide E.
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
    """

    def __init__(self, embed_dim: int, num_heads: int, *, dropout: float = 0.0, bias: bool = True,
                 kdim: int | None = None, vdim: int | None = None, batch_first: bool = True,
                 device=None, dtype=None) -> None:
        super().__init__()
        self.embed_dim = check_positive_int(embed_dim, "embed_dim")
        self.num_heads = check_positive_int(num_heads, "num_heads")
        if embed_dim % num_heads != 0:
            raise ValueError(
                f"embed_dim must be divisible by num_heads, got embed_dim = {embed_dim} "
                f"and num_heads = {num_heads}"
            )
        self.head_dim = embed_dim // num_heads
        self.kdim = embed_dim if kdim is None else check_positive_int(kdim, "kdim")
        self.vdim = embed_dim if vdim is None else check_positive_int(vdim, "vdim")
        self.dropout = check_probability(dropout, "dropout")
        self.batch_first = bool(batch_first)
        factory = {"device": device, "dtype": dtype}
        self.q_proj = nn.Linear(embed_dim, embed_dim, bias=bias, **factory)
        self.k_proj = nn.Linear(self.kdim, embed_dim, bias=bias, **factory)
        self.v_proj = nn.Linear(self.vdim, embed_dim, bias=bias, **factory)
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=bias, **factory)
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        for proj in (self.q_proj, self.k_proj, self.v_proj):
            nn.init.xavier_uniform_(proj.weight)
        for proj in (self.q_proj, self.k_proj, self.v_proj, self.out_proj):
            if proj.bias is not None:
                nn.init.zeros_(proj.bias)

    def forward(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                mask: torch.Tensor | None = None, need_weights: bool = True,
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query`` to ``key``/``value``.

        Args:
            query: Queries.
            key: Keys.
            value: Values.
            mask: Optional bool mask, True = may attend, broadcastable to
                ``(B, H, T, S)`` (also when ``batch_first=False``).
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
        self._check_inputs(query, key, value, mask, need_weights)
        if not self.batch_first:
            query = query.transpose(0, 1)  # (B, T, E)
            key = key.transpose(0, 1)  # (B, S, kdim)
            value = value.transpose(0, 1)  # (B, S, vdim)
        dropout_p = self.dropout if self.training else 0.0

        # --- 1. project: one linear map each for queries, keys and values ---
        q = self.q_proj(query)  # (B, T, E)
        k = self.k_proj(key)  # (B, S, E)
        v = self.v_proj(value)  # (B, S, E)

        # --- 2. split: cut E into H heads of D features ---
        q = split_heads(q, self.num_heads)  # (B, H, T, D)
        k = split_heads(k, self.num_heads)  # (B, H, S, D)
        v = split_heads(v, self.num_heads)  # (B, H, S, D)

        # --- 3. attend: every head at once, explicit or fused ---
        if need_weights:
            context, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p=dropout_p)
            # context (B, H, T, D), weights (B, H, T, S)
        else:
            context = fused_attention(q, k, v, mask, dropout_p=dropout_p)  # (B, H, T, D)
            weights = None

        # --- 4. merge: concatenate the heads back to E features ---
        context = merge_heads(context)  # (B, T, E)

        # --- 5. output projection: mix the heads ---
        output = self.out_proj(context)  # (B, T, E)
        if not self.batch_first:
            output = output.transpose(0, 1)  # (T, B, E)
        return output, weights

    def _check_inputs(self, query, key, value, mask, need_weights) -> tuple[int, int, int]:
        """Validate the inputs in either layout; return ``(B, T, S)``."""
        b, t = (0, 1) if self.batch_first else (1, 0)  # positions of B and of T / S
        for name, x, dim in (("query", query, self.embed_dim), ("key", key, self.kdim),
                             ("value", value, self.vdim)):
            check_tensor(x, name)
            length = "T" if name == "query" else "S"
            symbols = f"(B, {length}, {dim})" if self.batch_first else f"({length}, B, {dim})"
            check_rank(x, name, 3, symbols)
            if x.shape[-1] != dim:
                raise ValueError(f"{name} must have shape {symbols}, got {fmt_shape(x.shape)}")
        check_same_dtype_device("the module's parameters", self.q_proj.weight, "query", query)
        check_same_dtype_device("query", query, "key", key)
        check_same_dtype_device("query", query, "value", value)
        B, T, S = query.shape[b], query.shape[t], key.shape[t]
        for name, x in (("key", key), ("value", value)):
            if (x.shape[b], x.shape[t]) != (B, S):
                expected = [0, 0, x.shape[-1]]
                expected[b], expected[t] = B, S
                symbols = "(B, S, F)" if self.batch_first else "(S, B, F)"
                raise ValueError(f"{name} must have shape {symbols} = {fmt_shape(expected)} "
                                 f"(B from query, S from key), got {fmt_shape(x.shape)}")
        if mask is not None:
            check_mask(mask, (B, self.num_heads, T, S), device=query.device)
        if not isinstance(need_weights, bool):
            raise TypeError(f"need_weights must be a bool, got {type(need_weights).__name__}")
        return B, T, S

    # --- conversion to and from torch.nn.MultiheadAttention ---

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> "MultiHeadAttention":
        """Copy an ``nn.MultiheadAttention``'s weights exactly (same dtype, device, mode).

        Handles the packed ``in_proj_weight`` and the separate
        ``q/k/v_proj_weight`` (when ``kdim`` or ``vdim`` differ from E), with
        or without bias, either ``batch_first``.

        Raises:
            TypeError: If ``module`` is not an ``nn.MultiheadAttention``.
            ValueError: If it uses ``add_bias_kv`` or ``add_zero_attn``, which
                this class does not implement.

        Example:
            >>> theirs = nn.MultiheadAttention(64, 4, kdim=32, vdim=16, batch_first=True)
            >>> ours = MultiHeadAttention.from_torch(theirs)
            >>> ours.k_proj.weight.shape, ours.v_proj.weight.shape
            (torch.Size([64, 32]), torch.Size([64, 16]))
        """
        if not isinstance(module, nn.MultiheadAttention):
            raise TypeError(f"module must be a torch.nn.MultiheadAttention, got {type(module).__name__}")
        if module.bias_k is not None or module.bias_v is not None:
            raise ValueError("module must have add_bias_kv=False: MultiHeadAttention has no bias_k/bias_v")
        if module.add_zero_attn:
            raise ValueError("module must have add_zero_attn=False: "
                             "MultiHeadAttention does not add a zero key")
        bias = module.in_proj_bias is not None
        if bias != (module.out_proj.bias is not None):
            raise ValueError("module must have biases on both in_proj and out_proj, or on neither")
        ref = module.out_proj.weight
        ours = cls(module.embed_dim, module.num_heads, dropout=module.dropout, bias=bias,
                   kdim=module.kdim, vdim=module.vdim, batch_first=module.batch_first,
                   device=ref.device, dtype=ref.dtype)
        if module._qkv_same_embed_dim:
            weights = module.in_proj_weight.chunk(3)  # 3 x (E, E)
        else:
            weights = (module.q_proj_weight, module.k_proj_weight, module.v_proj_weight)
        biases = module.in_proj_bias.chunk(3) if bias else (None, None, None)  # 3 x (E,)
        with torch.no_grad():
            for proj, w, b in zip((ours.q_proj, ours.k_proj, ours.v_proj), weights, biases):
                proj.weight.copy_(w)
                if b is not None:
                    proj.bias.copy_(b)
            ours.out_proj.weight.copy_(module.out_proj.weight)
            if bias:
                ours.out_proj.bias.copy_(module.out_proj.bias)
        return ours.train(module.training)

    def to_torch(self) -> nn.MultiheadAttention:
        """An ``nn.MultiheadAttention`` with exactly these weights (same dtype, device, mode).

        Example:
            >>> theirs = MultiHeadAttention(64, 4).to_torch()
            >>> theirs.in_proj_weight.shape
            torch.Size([192, 64])
        """
        ref = self.out_proj.weight
        bias = self.out_proj.bias is not None
        theirs = nn.MultiheadAttention(self.embed_dim, self.num_heads, dropout=self.dropout, bias=bias,
                                       kdim=self.kdim, vdim=self.vdim, batch_first=self.batch_first,
                                       device=ref.device, dtype=ref.dtype)
        projs = (self.q_proj, self.k_proj, self.v_proj)
        with torch.no_grad():
            if theirs._qkv_same_embed_dim:
                theirs.in_proj_weight.copy_(torch.cat([p.weight for p in projs]))  # (3E, E)
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
        return (f"embed_dim={self.embed_dim}, num_heads={self.num_heads}, kdim={self.kdim}, "
                f"vdim={self.vdim}, dropout={self.dropout}, batch_first={self.batch_first}")

