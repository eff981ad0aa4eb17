"""Attention itself: kernels, heads, masks, the module, its cache and positions.

The lowest layer of mha_book: it imports only PyTorch and the shared checks
(``mha_book._checks``, :mod:`mha_book.book`), never :mod:`mha_book.models`,
:mod:`mha_book.lm` or :mod:`mha_book.viz` (the import contract in
``pyproject.toml``, checked by ``make lint``).

- :mod:`~mha_book.attention.scaled_dot_product`: the explicit kernel, step by
  step, and PyTorch's fused one (taught in chapter 02);
  :mod:`~mha_book.attention.flash`: the tiled kernel (chapter 12);
  :mod:`~mha_book.attention.kernels`: the kernels by name.
- :mod:`~mha_book.attention.heads`: ``split_heads``, ``merge_heads``,
  ``repeat_kv`` (taught in chapters 03 and 13).
- :mod:`~mha_book.attention.masks`: bool masks, True = may attend (taught in
  chapter 05), their checks in ``_mask_checks``;
  :mod:`~mha_book.attention.mask_helpers`: sliding windows and padded batches
  (chapters 14 and 17).
- :mod:`~mha_book.attention.mha`: :class:`MultiHeadAttention` (taught in chapter 04),
  its input checks in ``_mha_checks``; :mod:`~mha_book.attention.minimal`, the
  module on one screen; :mod:`~mha_book.attention.convert`, to and from
  ``torch.nn.MultiheadAttention``; :mod:`~mha_book.attention.trace`, the shape
  of every stage.
- :mod:`~mha_book.attention.kv_cache` (chapters 13, 14 and 17);
  :mod:`~mha_book.attention.positions`, :mod:`~mha_book.attention.rope`,
  :mod:`~mha_book.attention.alibi` (taught in chapter 14).
"""

from mha_book._lazy import lazy_exports

# its modules load on first use: mha_book.attention.<module> after import mha_book
__getattr__, __dir__ = lazy_exports(__name__, {})
