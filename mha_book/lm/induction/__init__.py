"""Heads that work together: induction heads, trained and found.

- :mod:`~mha_book.lm.induction.task`: random tokens with a repeated
  segment, which only the context can predict;
  :mod:`~mha_book.lm.induction.model`: attention-only decoders of one or
  more layers;
  :mod:`~mha_book.lm.induction.train`: their runs, with snapshots taken
  during training, stored once per build.
- :mod:`~mha_book.lm.induction.measures`: the loss on each copy, and each
  head's previous-token and prefix-matching scores;
  :mod:`~mha_book.lm.induction.runs`: the chapter's runs and budget, the
  phase change, ablations, and the probes of chapters 10 and 15's decoders.
"""

from mha_book._lazy import lazy_exports

# its modules load on first use: mha_book.lm.induction.<module>
__getattr__, __dir__ = lazy_exports(__name__, {})
