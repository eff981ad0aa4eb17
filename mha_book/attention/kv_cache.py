"""A key/value cache for incremental (token-by-token) decoding.

Taught in chapter 13-mqa-gqa-kv-cache.

Legend: B batch, H query heads, Hkv key/value heads, T new tokens in one
call, S cached tokens (all keys so far), D head dim.

In causal self-attention the keys and values of a token never change once it
has been processed, because later tokens cannot influence earlier ones. A
decoder can therefore keep them and, at every step, project only the new
token instead of the whole prefix. :meth:`MultiHeadAttention.forward_step
<mha_book.attention.mha.MultiHeadAttention.forward_step>` appends to a
:class:`KVCache` and attends over everything cached.

The cache stores the ``Hkv`` key/value heads *before* they are repeated for
the query heads, so grouped-query (``Hkv < H``) and multi-query (``Hkv = 1``)
attention shrink it by ``H / Hkv``; :func:`kv_cache_bytes_per_token` counts it.
"""

from __future__ import annotations

import weakref

import torch

from mha_book._checks import (
    check_positive_int,
    check_rank,
    check_same_dtype_device,
    check_tensor,
    fmt_shape,
)
from mha_book.attention.masks import causal_mask

__all__ = ["KVCache", "kv_cache_bytes_per_token"]


class KVCache:
    """The keys and values of one attention layer, growing along the sequence.

    One cache per attention layer and per batch of sequences. It starts empty;
    :meth:`update` appends the keys and values of new tokens and returns all of
    them. (Serving systems preallocate or page this memory; appending with
    ``torch.cat`` keeps the idea visible.)

    Attributes:
        keys: Cached keys, ``(B, Hkv, S, D)``, or None while empty.
        values: Cached values, ``(B, Hkv, S, Dv)``, or None while empty.

    Example:
        >>> cache = KVCache()
        >>> for _ in range(3):  # three decoding steps, one token each
        ...     k, v = cache.update(torch.randn(2, 4, 1, 16), torch.randn(2, 4, 1, 16))
        >>> k.shape, cache.seq_len
        (torch.Size([2, 4, 3, 16]), 3)
        >>> cache.nbytes  # 2 tensors x 2 x 4 x 3 x 16 float32 numbers
        3072
    """

    accepts_masks = True  # forward_step may add a mask or bias over its keys

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None
        self.values: torch.Tensor | None = None
        self._layer: weakref.ref | None = None  # the layer whose keys it holds

    @property
    def seq_len(self) -> int:
        """Number of cached tokens S (0 while empty)."""
        return 0 if self.keys is None else self.keys.shape[-2]

    @property
    def cached_len(self) -> int:
        """Tokens held, here every one so far (``seq_len``)."""
        return 0 if self.keys is None else self.keys.shape[-2]

    def step_mask(
        self, T: int, mask: torch.Tensor | None, device
    ) -> torch.Tensor | None:
        """The mask of ``T`` new queries against the keys :meth:`update` returns.

        A single new token may attend every key: ``mask`` as given. Several
        (a prompt) also get :func:`~mha_book.attention.masks.causal_mask`
        ``(T, seq_len + T)``, aligned at the end, combined with ``mask``.
        """
        if T == 1:
            return mask
        causal = causal_mask(T, self.seq_len + T, device=device)  # (T, S)
        return causal if mask is None else causal & mask  # (..., T, S)

    @property
    def nbytes(self) -> int:
        """Memory held by the cached keys and values, in bytes."""
        if self.keys is None:
            return 0
        assert self.values is not None  # keys and values are set together
        return sum(t.numel() * t.element_size() for t in (self.keys, self.values))

    def update(
        self, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Append the keys and values of new tokens; return all cached ones.

        Args:
            k: Keys of the new tokens.
            v: Values of the new tokens.

        Shape:
            - k: ``(B, Hkv, T, D)``
            - v: ``(B, Hkv, T, Dv)``
            - output: ``(keys, values)``, ``(B, Hkv, S + T, D)`` and
              ``(B, Hkv, S + T, Dv)``

        Returns:
            ``(keys, values)`` of every token so far, oldest first.

        Raises:
            TypeError: If ``k`` or ``v`` is not a tensor, or the dtypes differ.
            ValueError: If the shapes do not match each other or the cache.
        """
        for name, x in (("k", k), ("v", v)):
            check_tensor(x, name)
            check_rank(x, name, 4, "(B, Hkv, T, D)")
        check_same_dtype_device("k", k, "v", v)
        if v.shape[:3] != k.shape[:3]:
            raise ValueError(
                f"v must have the (B, Hkv, T) of k = {fmt_shape(k.shape[:3])} as its "
                f"first three dims, got v of shape {fmt_shape(v.shape)}"
            )
        if self.keys is None:  # copies: the caller may reuse its buffers
            self.keys, self.values = k.clone(), v.clone()
        else:
            assert self.values is not None  # keys and values are set together
            for name, new, old in (("k", k, self.keys), ("v", v, self.values)):
                if (new.shape[:2], new.shape[3]) != (old.shape[:2], old.shape[3]):
                    expected = (*old.shape[:2], "T", old.shape[3])
                    raise ValueError(
                        f"{name} must have shape (B, Hkv, T, D) = "
                        f"({', '.join(map(str, expected))}) "
                        f"like the cached ones, got {fmt_shape(new.shape)}"
                    )
                check_same_dtype_device("the cached tensors", old, name, new)
            self.keys = torch.cat([self.keys, k], dim=-2)  # (B, Hkv, S + T, D)
            self.values = torch.cat([self.values, v], dim=-2)  # (B, Hkv, S + T, Dv)
        return self.keys, self.values

    def check_layer(self, rope) -> None:
        """Refuse a layer this cache cannot serve (``rope``: the layer's
        :class:`~mha_book.attention.rope.RotaryEmbedding` or None); this one
        serves any layer."""

    def claim(self, layer: object) -> None:
        """Refuse a second layer: the cached keys are those of the layer that
        wrote them, and another layer's would be attended as its own (one
        cache per layer; :meth:`reset` frees it for any layer)."""
        owner = self._layer  # a dead reference (layer freed) is not ``layer``
        if owner is not None and self.keys is not None and owner() is not layer:
            raise ValueError(
                "kv_cache must belong to one layer: it holds the keys of another "
                "layer, got a second one; give each layer its own cache (or "
                "reset() it)"
            )
        self._layer = weakref.ref(layer)

    def reset(self) -> None:
        """Empty the cache (start a new sequence)."""
        self.keys = self.values = None
        self._layer = None

    def __repr__(self) -> str:
        shape = (
            "empty" if self.keys is None else f"keys.shape={fmt_shape(self.keys.shape)}"
        )
        return f"KVCache(seq_len={self.seq_len}, {shape})"


def kv_cache_bytes_per_token(
    num_layers: int, num_kv_heads: int, head_dim: int, bytes_per_element: int = 2
) -> int:
    """Bytes of keys and values a decoder caches for each token of context.

    ``2 · num_layers · num_kv_heads · head_dim · bytes_per_element`` (the 2 for
    keys and values); it does not depend on the number of query heads.

    Args:
        num_layers: Attention layers in the model.
        num_kv_heads: Key/value heads per layer (H for MHA, 1 for MQA).
        head_dim: Head dim D.
        bytes_per_element: 2 for float16/bfloat16, 4 for float32.

    Returns:
        Bytes per token, for one sequence.

    Example:
        >>> kv_cache_bytes_per_token(
        ...     num_layers=2, num_kv_heads=4, head_dim=16, bytes_per_element=4
        ... )
        1024
    """
    sizes = [
        check_positive_int(n, name)
        for n, name in (
            (num_layers, "num_layers"),
            (num_kv_heads, "num_kv_heads"),
            (head_dim, "head_dim"),
            (bytes_per_element, "bytes_per_element"),
        )
    ]
    L, Hkv, D, nbytes = sizes
    return 2 * L * Hkv * D * nbytes
