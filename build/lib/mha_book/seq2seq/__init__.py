"""Sequence to sequence: an encoder-decoder that learns to translate dates,
and the measures of its cross-attention (chapter 16-cross-attention).

Above :mod:`mha_book.lm` (whose artifact cache stores its training runs) and
:mod:`mha_book.models` (whose layers it stacks); never imported by them (the
import contract in ``pyproject.toml``).

- :mod:`~mha_book.seq2seq.dates`: dates in six formats and their ground-truth
  alignment;
- :mod:`~mha_book.seq2seq.translator`: the model, with full and cached greedy
  decoding;
- :mod:`~mha_book.seq2seq.training`: its training, stored once per build;
- :mod:`~mha_book.seq2seq.measures`: exact matches, alignment shares, silenced heads.
"""

from mha_book._lazy import lazy_exports

# its modules load on first use: mha_book.seq2seq.<module> after import mha_book
__getattr__, __dir__ = lazy_exports(__name__, {})
