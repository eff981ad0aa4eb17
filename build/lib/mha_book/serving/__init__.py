"""Attention at inference scale: streaming, sinks and serving (chapter 17-inference).

Above :mod:`mha_book.lm`, whose trained decoders it streams; never imported by
it (the import contract in ``pyproject.toml``). The caches and kernels
themselves live in :mod:`mha_book.attention` (``window_caches``, ``paged``,
``latent``, ``flex``).

- :mod:`~mha_book.serving.streaming`: a decoder reads far past its training
  length under a window, sinks plus a window, or recomputation;
- :mod:`~mha_book.serving.sinks`: how much attention trained heads give to the
  first positions;
- :mod:`~mha_book.serving.simulation`: serving requests with contiguous or
  paged KV memory.
"""

from mha_book._lazy import lazy_exports

# its modules load on first use: mha_book.serving.<module> after import mha_book
__getattr__, __dir__ = lazy_exports(__name__, {})
