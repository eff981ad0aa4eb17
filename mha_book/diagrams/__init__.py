"""Explanatory diagrams drawn from the objects they depict.

Each function computes what it shows with the code the book teaches (or with
PyTorch itself), draws it with :func:`mha_book.plot.new_figure`, and returns
``(figure, facts)``: the numbers it drew, so that a page can assert them.
Labels follow the book's language (:func:`mha_book.book.pick`). One module
per idea; the chapter that teaches the idea draws it:

- :mod:`~mha_book.diagrams.decoding` (chapter 13): :func:`causal_alignment`,
  top-left against bottom-right causal masks when T != S (PyTorch's
  ``is_causal=True`` against :func:`~mha_book.masks.causal_mask`);
  :func:`kv_head_sharing`, which key/value head each query head reads in MHA,
  GQA and MQA; :func:`kv_cache_growth`, a real module's cache filling up.
- :mod:`~mha_book.diagrams.shapes` (chapters 03 and 04): :func:`mha_data_flow`,
  the five steps of multi-head attention with the shapes
  :func:`~mha_book.trace.trace_shapes` records; :func:`head_split_layout`,
  the storage offsets and strides of a tiny tensor through ``split_heads`` and
  ``merge_heads``.
- :mod:`~mha_book.diagrams.masks` (chapter 05): :func:`mask_broadcast`, a
  padding mask and a causal mask broadcast to the scores and combined with ``&``.
"""

from mha_book.diagrams.decoding import (
    causal_alignment,
    kv_cache_growth,
    kv_head_sharing,
    torch_is_causal_mask,
)
from mha_book.diagrams.masks import mask_broadcast
from mha_book.diagrams.shapes import head_split_layout, mha_data_flow

__all__ = [
    "torch_is_causal_mask",
    "causal_alignment",
    "kv_head_sharing",
    "kv_cache_growth",
    "mha_data_flow",
    "head_split_layout",
    "mask_broadcast",
]
