"""A paged KV cache: fixed-size blocks in one shared pool, a block table per sequence.

Taught in chapter 17-inference, after vLLM's PagedAttention (Kwon et al. 2023).

Legend: N blocks in the pool, P tokens per block (``block_size``), Hkv
key/value heads, D head dim, H query heads, S a sequence's cached tokens.

A contiguous cache reserves room for a sequence's longest possible length up
front. A paged one hands out blocks of P token slots as the sequence grows,
from a pool that every sequence shares; a sequence's *block table* lists its
blocks in order, so logical token ``t`` lives in block ``table[t // P]`` at
slot ``t % P``, wherever that block sits in the pool. Only a sequence's last
block can have empty slots.

Serving systems gather from the pool inside the attention kernel. Here
:meth:`PagedKVCache.gather` copies a sequence's keys and values out with one
index, which keeps the bookkeeping visible; attention over them equals
attention over a contiguous cache exactly.
"""

from __future__ import annotations

import torch

from mha_book._checks import (
    check_fits_memory,
    check_positive_int,
    check_rank,
    check_tensor,
    fmt_shape,
)

__all__ = ["BlockPool", "PagedKVCache"]


class BlockPool:
    """Key and value storage for ``capacity`` tokens, in blocks of ``block_size``.

    Args:
        capacity: Token slots in the pool; a multiple of ``block_size``.
        block_size: Token slots per block, P.
        num_kv_heads: Key/value heads Hkv.
        head_dim: Head dim D.
        dtype: The dtype of the storage.
        device: The device of the storage.

    Shape:
        - keys, values: ``(N, Hkv, P, D)`` with ``N = capacity / P``

    Example:
        >>> pool = BlockPool(capacity=64, block_size=16, num_kv_heads=2, head_dim=8)
        >>> pool.num_blocks, pool.keys.shape
        (4, torch.Size([4, 2, 16, 8]))
        >>> pool.allocate(), pool.allocate(), pool.num_free
        (0, 1, 2)
    """

    def __init__(
        self,
        capacity: int,
        block_size: int,
        num_kv_heads: int,
        head_dim: int,
        *,
        dtype: torch.dtype = torch.float32,
        device=None,
    ) -> None:
        capacity = check_positive_int(capacity, "capacity")
        P = check_positive_int(block_size, "block_size")
        if capacity % P:
            raise ValueError(
                f"block_size must divide capacity = {capacity} (whole blocks), "
                f"got block_size = {P}"
            )
        Hkv = check_positive_int(num_kv_heads, "num_kv_heads")
        D = check_positive_int(head_dim, "head_dim")
        self.block_size, self.num_blocks = P, capacity // P
        shape = (self.num_blocks, Hkv, P, D)
        nbytes = 2 * capacity * Hkv * D * torch.empty((), dtype=dtype).element_size()
        check_fits_memory(nbytes, "capacity", device)  # keys and values
        self.keys = torch.zeros(shape, dtype=dtype, device=device)  # (N, Hkv, P, D)
        self.values = torch.zeros(shape, dtype=dtype, device=device)  # (N, Hkv, P, D)
        self._free = list(range(self.num_blocks))[::-1]  # pop() gives 0, 1, ...
        # Who holds each block in use (a PagedKVCache, or None for a block
        # taken by hand), as vLLM's block manager knows each block's users.
        self._holders: dict[int, object] = {}

    @property
    def num_free(self) -> int:
        """Blocks not held by any sequence."""
        return len(self._free)

    def allocate(self, holder: object = None) -> int:
        """Take a free block for ``holder`` (a cache; None: the caller); return
        its index in the pool.

        Raises:
            RuntimeError: If every block is in use (the pool is full).
        """
        if not self._free:
            raise RuntimeError(
                f"the pool is full: all {self.num_blocks} blocks of "
                f"{self.block_size} tokens are in use; free a sequence first"
            )
        block = self._free.pop()
        self._holders[block] = holder
        return block

    def free(self, blocks: list[int], holder: object = None) -> None:
        """Give blocks back to the pool. A block a cache holds is given back by
        that cache (:meth:`PagedKVCache.release`), never from under it.

        Raises:
            TypeError: If ``blocks`` is not a list of ints.
            ValueError: If a block repeats, is not in use, or is held by
                another holder than ``holder``.
        """
        if isinstance(blocks, (str, bytes)) or not isinstance(blocks, (list, tuple)):
            raise TypeError(
                f"blocks must be a list of block indices, got {type(blocks).__name__}"
            )
        for b in blocks:
            if isinstance(b, bool) or not isinstance(b, int):
                raise TypeError(f"blocks must hold ints, got {type(b).__name__}")
            if b not in self._holders:
                raise ValueError(
                    f"blocks must be blocks in use, in [0, {self.num_blocks}), got {b}"
                )
            if self._holders[b] is not holder:
                raise ValueError(
                    f"block {b} is held by {self._holders[b]!r}: release that "
                    "cache instead of freeing its blocks from under it"
                )
        if len(set(blocks)) != len(blocks):
            raise ValueError(f"blocks must not repeat a block, got {list(blocks)}")
        for b in blocks:
            del self._holders[b]
        self._free.extend(reversed(blocks))

    def __repr__(self) -> str:
        return (
            f"BlockPool(num_blocks={self.num_blocks}, block_size={self.block_size}, "
            f"free={self.num_free}, keys={fmt_shape(self.keys.shape)})"
        )


class PagedKVCache:
    """One sequence's keys and values, in blocks of a shared :class:`BlockPool`.

    Attributes:
        block_table: The sequence's blocks in logical order.
        length: Tokens stored, S.

    Example:
        >>> pool = BlockPool(capacity=8, block_size=2, num_kv_heads=1, head_dim=4)
        >>> a, b = PagedKVCache(pool), PagedKVCache(pool)
        >>> _ = a.append(torch.randn(1, 3, 4), torch.randn(1, 3, 4))  # 3 tokens: 2 blocks
        >>> _ = b.append(torch.randn(1, 1, 4), torch.randn(1, 1, 4))
        >>> k, v = a.append(torch.randn(1, 1, 4), torch.randn(1, 1, 4))
        >>> a.block_table, b.block_table, k.shape
        ([0, 1], [2], torch.Size([1, 4, 4]))
    """

    def __init__(self, pool: BlockPool) -> None:
        if not isinstance(pool, BlockPool):
            raise TypeError(f"pool must be a BlockPool, got {type(pool).__name__}")
        self.pool = pool
        self.block_table: list[int] = []
        self.length = 0

    def append(
        self, k: torch.Tensor, v: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Store new keys and values, taking blocks as needed; return all of them.

        Shape:
            - k, v: ``(Hkv, T, D)``, the sequence's new tokens
            - output: :meth:`gather` after the write, ``(Hkv, S + T, D)`` each

        Raises:
            RuntimeError: If the pool runs out of blocks (nothing is written).
        """
        pool = self.pool
        for name, x in (("k", k), ("v", v)):
            check_tensor(x, name)
            check_rank(x, name, 3, "(Hkv, T, D)")
            want = (pool.keys.shape[1], x.shape[1], pool.keys.shape[3])
            if x.shape != want or x.dtype != pool.keys.dtype:
                raise ValueError(
                    f"{name} must be (Hkv, T, D) = {fmt_shape(want)} of "
                    f"{pool.keys.dtype} (the pool's), got {fmt_shape(x.shape)} of {x.dtype}"
                )
        if v.shape != k.shape:
            raise ValueError(
                f"v must have the shape of k = {fmt_shape(k.shape)}, "
                f"got {fmt_shape(v.shape)}"
            )
        T, P = k.shape[1], pool.block_size
        if T == 0:
            raise ValueError("k must hold at least one new token, got T = 0")
        needed = -(-(self.length + T) // P) - len(self.block_table)  # new blocks
        if needed > pool.num_free:
            raise RuntimeError(
                f"the pool is full: {needed} more blocks needed, {pool.num_free} free"
            )
        self.block_table += [pool.allocate(self) for _ in range(needed)]
        t = torch.arange(self.length, self.length + T)  # (T,) logical positions
        table = torch.tensor(self.block_table, dtype=torch.long)  # (n,)
        blocks = table[t // P]  # (T,) physical blocks
        pool.keys[blocks, :, t % P] = k.transpose(0, 1)  # (T, Hkv, D) into the slots
        pool.values[blocks, :, t % P] = v.transpose(0, 1)
        self.length += T
        return self.gather()

    def gather(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The sequence's keys and values in logical order: ``(Hkv, S, D)`` each."""
        table = torch.tensor(self.block_table, dtype=torch.long)  # (n,)
        out = []
        for store in (self.pool.keys, self.pool.values):
            blocks = store[table]  # (n, Hkv, P, D): this sequence's blocks
            flat = blocks.transpose(0, 1).flatten(1, 2)  # (Hkv, n·P, D)
            out.append(flat[:, : self.length])  # (Hkv, S, D): drop the empty slots
        return out[0], out[1]

    def release(self) -> None:
        """Give the blocks back to the pool (the sequence finished)."""
        self.pool.free(self.block_table, holder=self)
        self.block_table, self.length = [], 0

    def __repr__(self) -> str:
        return f"PagedKVCache(length={self.length}, block_table={self.block_table})"
