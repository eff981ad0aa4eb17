"""Models built from :mod:`mha_book.attention`: layers, a decoder, BERT.

The middle layer: it imports :mod:`mha_book.attention`, never :mod:`mha_book.lm`
or :mod:`mha_book.viz` (the import contract in ``pyproject.toml``).

- :mod:`~mha_book.models.blocks`: the residual and feed-forward pieces every
  layer repeats; :mod:`~mha_book.models.layers`: encoder and decoder layers
  (chapter 06).
- :mod:`~mha_book.models.decoder`: a small causal decoder (chapters 10, 14, 15,
  17 and 18).
- :mod:`~mha_book.models.pretrained`, :mod:`~mha_book.models.bert`: the
  pretrained MiniLM checkpoint in a BERT encoder of the book's own modules
  (chapters 11 and 17).
"""

from mha_book._lazy import lazy_exports

# its modules load on first use: mha_book.models.<module> after import mha_book
__getattr__, __dir__ = lazy_exports(__name__, {})
