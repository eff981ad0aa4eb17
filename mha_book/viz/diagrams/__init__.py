"""Explanatory diagrams drawn from the objects they depict.

Each function computes what it shows with the code the book teaches (or with
PyTorch itself), draws it with :func:`mha_book.viz.plot.new_figure`, and returns
``(figure, facts)``: the numbers it drew, so that a page can assert them,
and ``facts["layout"]``, its rows and columns of panels and its direction of
flow (:func:`mha_book.viz.layout.figure_layout`), which the alt text must match.
Labels follow the book's language (:func:`mha_book.book.pick`). One module
per idea; the chapter that teaches the idea draws it:

- :mod:`~mha_book.viz.diagrams.decoding` (chapter 13): :func:`causal_alignment`,
  top-left against bottom-right causal masks when T != S (PyTorch's
  ``is_causal=True`` against :func:`~mha_book.attention.masks.causal_mask`);
  :func:`kv_head_sharing`, which key/value head each query head reads in MHA,
  GQA and MQA; :func:`kv_cache_growth`, a real module's cache filling up.
- :mod:`~mha_book.viz.diagrams.shapes` (chapters 03 and 04): :func:`mha_data_flow`,
  the five steps of multi-head attention with the shapes
  :func:`~mha_book.attention.trace.trace_shapes` records; :func:`head_split_layout`,
  the storage offsets and strides of a tiny tensor through ``split_heads`` and
  ``merge_heads``.
- :mod:`~mha_book.viz.diagrams.parallel` (chapter 03): :func:`parallel_heads`,
  the heads side by side, each attending on its own columns of the
  projections, then concatenated and projected by ``out_proj`` (Vaswani et
  al.'s Figure 2), from a real module's forward pass.
- :mod:`~mha_book.viz.diagrams.masks` (chapter 05): :func:`mask_broadcast`, a
  padding mask and a causal mask broadcast to the scores and combined with ``&``.
- :mod:`~mha_book.viz.diagrams.scores` (chapter 02): :func:`attention_matrices`,
  every matrix of scaled dot-product attention with its numbers.
- :mod:`~mha_book.viz.diagrams.patterns` (chapter 06): :func:`attention_patterns`,
  which positions each query reads in an encoder-decoder's three attention
  blocks, from the weights of real layers.
- :mod:`~mha_book.viz.diagrams.tiling` (chapter 12): :func:`online_softmax_tiles`,
  the order of FlashAttention's tiles and the running max and sum after each.
- :mod:`~mha_book.viz.diagrams.positions` (chapter 14): :func:`rotary_rotation`,
  one vector rotated by RoPE at successive positions, pair by pair;
  :func:`alibi_heads`, ALiBi's bias of every head as a heatmap.
- :mod:`~mha_book.viz.diagrams.inference` (chapter 17): :func:`ring_buffer`,
  a rolling cache's slots; :func:`sink_window`, what a sink cache keeps;
  :func:`block_table`, sequences' blocks in a shared pool.
- :mod:`~mha_book.viz.diagrams.latent` (chapter 17): :func:`latent_data_flow`,
  multi-head latent attention's data flow and what its absorbed form skips.
- :mod:`~mha_book.viz.diagrams.reading` (the index): :func:`reading_path`,
  which chapter needs which, from the book's map (:mod:`mha_book.book_map`).
- :mod:`~mha_book.viz.diagrams.registry` (chapter 09): :func:`kernel_choice`,
  which registered kernel a module runs for each ``kernel=`` and
  ``need_weights``, recorded by calling real modules.
"""

from typing import TYPE_CHECKING

from mha_book._lazy import lazy_exports

# name -> the submodule that defines it, imported on first use (mha_book._lazy)
_EXPORTS = {
    "causal_alignment": "decoding",
    "kv_cache_growth": "decoding",
    "kv_head_sharing": "decoding",
    "torch_is_causal_mask": "decoding",
    "block_table": "inference",
    "latent_data_flow": "latent",
    "ring_buffer": "inference",
    "sink_window": "inference",
    "mask_broadcast": "masks",
    "head_columns": "parallel",
    "parallel_heads": "parallel",
    "attention_patterns": "patterns",
    "alibi_heads": "positions",
    "rotary_rotation": "positions",
    "reading_path": "reading",
    "kernel_choice": "registry",
    "attention_matrices": "scores",
    "head_split_layout": "shapes",
    "mha_data_flow": "shapes",
    "online_softmax_tiles": "tiling",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from mha_book.viz.diagrams.decoding import (
        causal_alignment,
        kv_cache_growth,
        kv_head_sharing,
        torch_is_causal_mask,
    )
    from mha_book.viz.diagrams.inference import block_table, ring_buffer, sink_window
    from mha_book.viz.diagrams.latent import latent_data_flow
    from mha_book.viz.diagrams.masks import mask_broadcast
    from mha_book.viz.diagrams.parallel import head_columns, parallel_heads
    from mha_book.viz.diagrams.patterns import attention_patterns
    from mha_book.viz.diagrams.positions import alibi_heads, rotary_rotation
    from mha_book.viz.diagrams.reading import reading_path
    from mha_book.viz.diagrams.registry import kernel_choice
    from mha_book.viz.diagrams.scores import attention_matrices
    from mha_book.viz.diagrams.shapes import head_split_layout, mha_data_flow
    from mha_book.viz.diagrams.tiling import online_softmax_tiles

__all__ = [
    "ring_buffer",
    "sink_window",
    "block_table",
    "latent_data_flow",
    "torch_is_causal_mask",
    "causal_alignment",
    "kv_head_sharing",
    "kv_cache_growth",
    "mha_data_flow",
    "head_split_layout",
    "head_columns",
    "parallel_heads",
    "mask_broadcast",
    "attention_matrices",
    "attention_patterns",
    "online_softmax_tiles",
    "kernel_choice",
    "reading_path",
    "rotary_rotation",
    "alibi_heads",
]
