"""KV caches of bounded size: a rolling window, and attention sinks plus a window.

Taught in chapter 17-inference.

Legend: B batch, Hkv key/value heads, T new tokens in one call, W window
(keys each query sees, itself included), D head dim, n sink tokens.

Both are :class:`~mha_book.attention.kv_cache.KVCache` subclasses, so
:meth:`MultiHeadAttention.forward_step
<mha_book.attention.mha.MultiHeadAttention.forward_step>` takes them as it
takes the growing cache; its memory no longer grows with the text.

- :class:`RollingKVCache` (Mistral's rolling buffer, Jiang et al. 2023): the
  last W keys and values in a ring of W slots; token ``p`` lives in slot
  ``p % W``. Keys are rotated (RoPE) at their absolute positions before they
  are stored, and attention does not care in which order keys come, so a
  single new token attends the ring as it lies. Decoding with it equals the
  full pass with :func:`~mha_book.attention.mask_helpers.sliding_window_mask`.
- :class:`SinkKVCache` (StreamingLLM, Xiao et al. 2024): the first n tokens
  are kept for ever, then a window of the most recent ones; positions are
  those *in the cache*, so a model never sees a position past ``n + W - 1``.
"""

from __future__ import annotations

import torch

from mha_book._checks import check_fits_memory, check_positive_int, fmt_shape
from mha_book.attention.kv_cache import KVCache
from mha_book.attention.mask_helpers import sliding_window_mask
from mha_book.attention.rope import RotaryEmbedding, apply_rotary

__all__ = ["RollingKVCache", "SinkKVCache"]


def _check_new(cache: KVCache, k: object, v: object) -> None:
    """Check new keys and values as :meth:`KVCache.update` does, changing nothing."""
    probe = KVCache()
    if cache.keys is not None and cache.values is not None:
        probe.keys, probe.values = cache.keys[:, :, :0], cache.values[:, :, :0]
    probe.update(k, v)  # type: ignore[arg-type]  # raises on bad shapes or dtypes


class RollingKVCache(KVCache):
    """The last ``window`` keys and values of a layer, in a ring buffer.

    ``seq_len`` counts every token seen (the next token's absolute position,
    where RoPE rotates it); ``cached_len`` is what the ring holds, at most W.
    A single new token is written into slot ``position % W`` and attends the
    ring in slot order (weights' columns follow the slots). Several new tokens
    at once (a prompt) attend the cached window oldest first, then
    themselves, under :meth:`step_mask`. It makes its own mask, so
    ``forward_step`` refuses ``mask``, ``key_mask`` and ``bias`` with it.

    Args:
        window: Keys each query sees, itself included; at least 1.

    Shape:
        - keys, values: ``(B, Hkv, W, D)`` rings once the first token arrives

    Example:
        >>> cache = RollingKVCache(window=3)
        >>> for t in range(5):  # tokens 0..4; slots hold 3, 4, 2
        ...     key, value = torch.full((1, 1, 1, 2), float(t)), torch.zeros(1, 1, 1, 2)
        ...     k, v = cache.update(key, value)
        >>> cache.seq_len, cache.cached_len, k[0, 0, :, 0].tolist()
        (5, 3, [3.0, 4.0, 2.0])
    """

    accepts_masks = False

    def __init__(self, window: int) -> None:
        super().__init__()
        self.window = check_positive_int(window, "window")
        self.seen = 0

    @property
    def seq_len(self) -> int:
        """Tokens seen so far, so the absolute position of the next one."""
        return self.seen

    @property
    def cached_len(self) -> int:
        """Tokens held in the ring, ``min(seq_len, window)``."""
        return min(self.seen, self.window)

    def _ordered(self, keep: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The last ``keep`` cached keys and values, oldest first."""
        assert self.keys is not None and self.values is not None
        n, W = self.cached_len, self.window
        order = [(self.seen - n + i) % W for i in range(n)][n - min(keep, n) :]
        index = torch.tensor(order, dtype=torch.long, device=self.keys.device)
        return self.keys[:, :, index], self.values[:, :, index]  # (B, Hkv, keep, D)

    def step_mask(self, T: int, mask, device) -> torch.Tensor | None:
        """The window mask of ``T`` new queries; None for one token (the ring)."""
        if T == 1:
            return None
        old = min(self.cached_len, self.window - 1)  # cached keys the chunk sees
        return sliding_window_mask(T, self.window, S=old + T, device=device)

    def update(
        self, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Write new keys and values; return the keys and values to attend.

        Shape:
            - k, v: ``(B, Hkv, T, D)``, ``(B, Hkv, T, Dv)``
            - output: one token: the ring, ``(B, Hkv, min(seq_len, W), D)``
              after the write; T > 1: ``(B, Hkv, old + T, D)``, the last
              ``old = min(cached, W - 1)`` keys oldest first, then the new ones
        """
        _check_new(self, k, v)
        T, W = k.shape[-2], self.window
        if self.keys is None:  # (B, Hkv, W, D) rings, filled as tokens arrive
            B, Hkv = k.shape[:2]
            slots = B * Hkv * W * (k.shape[-1] + v.shape[-1])
            check_fits_memory(slots * k.element_size(), "window", k.device)
            self.keys = k.new_zeros(*k.shape[:2], W, k.shape[-1])
            self.values = v.new_zeros(*v.shape[:2], W, v.shape[-1])
        assert self.values is not None
        if T == 1:  # overwrite the token W positions back, attend the ring
            slot = self.seen % W
            self.keys[:, :, slot] = k[:, :, 0]  # (B, Hkv, D) into slot
            self.values[:, :, slot] = v[:, :, 0]
            self.seen += 1
            n = self.cached_len
            return self.keys[:, :, :n], self.values[:, :, :n]  # (B, Hkv, n, D)
        old_k, old_v = self._ordered(W - 1)  # (B, Hkv, old, D)
        keys = torch.cat([old_k, k], dim=-2)  # (B, Hkv, old + T, D)
        values = torch.cat([old_v, v], dim=-2)  # (B, Hkv, old + T, Dv)
        for i in range(max(0, T - W), T):  # the chunk's last W tokens stay
            slot = (self.seen + i) % W
            self.keys[:, :, slot] = k[:, :, i]
            self.values[:, :, slot] = v[:, :, i]
        self.seen += T
        return keys, values

    def reset(self) -> None:
        """Empty the cache (start a new sequence)."""
        super().reset()
        self.seen = 0

    def __repr__(self) -> str:
        shape = (
            "empty" if self.keys is None else f"keys.shape={fmt_shape(self.keys.shape)}"
        )
        return (
            f"RollingKVCache(window={self.window}, seq_len={self.seen}, "
            f"cached_len={self.cached_len}, {shape})"
        )


class SinkKVCache(KVCache):
    """The first ``sinks`` tokens and the most recent ones: ``sinks + window`` in all.

    Positions count inside the cache, as in StreamingLLM: the sinks sit at
    0 .. n - 1, the window right after them, and a new token at the end. When
    a token is evicted, the window's keys move down one position; with RoPE
    they are rotated back by one step (``rope``), so every key stays rotated
    at its position in the cache. Without ``rope`` (ALiBi, or no positions)
    nothing moves. ``seq_len`` is the next token's position in the cache,
    at most ``sinks + window - 1``. Once full, it takes one token per call.

    Args:
        sinks: Tokens kept from the start, 0 or more.
        window: Most recent tokens kept, the new one included; at least 1.
        rope: The layer's :class:`~mha_book.attention.rope.RotaryEmbedding`,
            or None if its keys carry no rotation.

    Example:
        >>> cache = SinkKVCache(sinks=1, window=2)
        >>> for t in range(5):  # tokens 0..4: keeps 0, then 3 and 4
        ...     key, value = torch.full((1, 1, 1, 2), float(t)), torch.zeros(1, 1, 1, 2)
        ...     k, v = cache.update(key, value)
        >>> k[0, 0, :, 0].tolist(), cache.seq_len, cache.evicted
        ([0.0, 3.0, 4.0], 2, 2)
    """

    def __init__(
        self, sinks: int, window: int, rope: RotaryEmbedding | None = None
    ) -> None:
        super().__init__()
        self.sinks = check_positive_int(sinks, "sinks", allow_zero=True)
        self.window = check_positive_int(window, "window")
        if rope is not None and not isinstance(rope, RotaryEmbedding):
            raise TypeError(
                f"rope must be a RotaryEmbedding or None, got {type(rope).__name__}"
            )
        self.rope = rope
        self.evicted = 0  # tokens dropped so far

    @property
    def capacity(self) -> int:
        """Keys a query sees once the cache is full, ``sinks + window``."""
        return self.sinks + self.window

    @property
    def seq_len(self) -> int:
        """The next token's position in the cache."""
        return min(super().seq_len, self.capacity - 1)

    def update(
        self, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Evict the oldest window token if full, append, return all kept.

        Shape:
            - k, v: ``(B, Hkv, T, D)``, ``(B, Hkv, T, Dv)``; T = 1 once full
            - output: ``(B, Hkv, min(seen, sinks + window), D)`` and ``Dv``
        """
        _check_new(self, k, v)  # before anything is evicted
        T, cached = k.shape[-2], super().seq_len
        if cached + T > self.capacity and T != 1:
            raise ValueError(
                f"k must hold one token once the cache is full (sinks + window = "
                f"{self.capacity}, {cached} cached), got T = {T}"
            )
        if cached == self.capacity:  # drop the oldest window token
            assert self.keys is not None and self.values is not None
            n = self.sinks
            window_k = self.keys[:, :, n + 1 :]  # (B, Hkv, window - 1, D)
            if self.rope is not None:  # one position down: rotate back one step
                back = torch.full((window_k.shape[-2],), -1, device=k.device)
                window_k = apply_rotary(
                    window_k, back, base=self.rope.base, rotary_dim=self.rope.rotary_dim
                )
            self.keys = torch.cat([self.keys[:, :, :n], window_k], dim=-2)
            self.values = torch.cat(
                [self.values[:, :, :n], self.values[:, :, n + 1 :]], dim=-2
            )
            self.evicted += 1
        return super().update(k, v)  # checks k and v, appends: (B, Hkv, <= C, D)

    def check_layer(self, rope) -> None:
        """Refuse a layer whose rotation is not the cache's: a key moved down
        one position must be rotated back by the layer's own RoPE, and by none
        when the layer has none."""
        mine = None if self.rope is None else (self.rope.base, self.rope.rotary_dim)
        theirs = None if rope is None else (rope.base, rope.rotary_dim)
        if mine != theirs:
            raise ValueError(
                "kv_cache must rotate keys as the layer does: build it with "
                f"SinkKVCache(..., rope=layer.rope); the layer's rope is {rope}, "
                f"the cache's {self.rope}"
            )

    def reset(self) -> None:
        """Empty the cache (start a new sequence)."""
        super().reset()
        self.evicted = 0

    def __repr__(self) -> str:
        return (
            f"SinkKVCache(sinks={self.sinks}, window={self.window}, "
            f"cached={super().seq_len}, evicted={self.evicted})"
        )
