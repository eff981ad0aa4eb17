"""The language models the book trains: texts, training, measurements, storage.

Above :mod:`mha_book.models` (which it imports), never imported by it or by
:mod:`mha_book.attention` (the import contract in ``pyproject.toml``).

- :mod:`~mha_book.lm.corpus`: the shipped plays and Tang poems;
  :mod:`~mha_book.lm.charlm`: characters, windows, losses (chapters 10, 14,
  15 and 18); :mod:`~mha_book.lm.ngram`: the interpolated bigram baseline
  (chapters 10 and 15).
- :mod:`~mha_book.lm.training`: training and sampling, measured in a
  :mod:`~mha_book.lm.history`;
  :mod:`~mha_book.lm.artifacts`: trained results stored once per build;
  :mod:`~mha_book.lm.checkpoint`: checkpoints that round-trip exactly.
- :mod:`~mha_book.lm.extrapolation`: train short, test long (chapter 14);
  :mod:`~mha_book.lm.poetry`: the form of Tang verse and its measures
  (chapter 15).
- :mod:`~mha_book.lm.heads`: what several heads buy (chapter 18);
  :mod:`~mha_book.lm.induction`: heads that work together, induction heads
  (chapter 19).
"""

from mha_book._lazy import lazy_exports

# its modules load on first use: mha_book.lm.<module> after import mha_book
__getattr__, __dir__ = lazy_exports(__name__, {})
