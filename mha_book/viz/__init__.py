"""What the book draws: figures, heatmaps, the attention explorer, diagrams.

The top layer beside :mod:`mha_book.bench`: it may import any other part of
the package, and nothing in :mod:`mha_book.attention`, :mod:`mha_book.models`
or :mod:`mha_book.lm` imports it (the import contract in ``pyproject.toml``).
matplotlib is imported only when a figure is drawn.

- :mod:`~mha_book.viz.plot`: fonts, sizes and legibility of every figure;
  :mod:`~mha_book.viz.layout`: its rows and columns of panels, which its alt
  text must match.
- :mod:`~mha_book.viz.heatmap`: attention weights as heatmaps (chapters 02, 03,
  05, 07, 10 and 11).
- :mod:`~mha_book.viz.explorer`: the interactive attention explorer and its
  script and style in ``static/`` (chapters 11, 15 and 16).
- :mod:`~mha_book.viz.diagrams`: explanatory diagrams drawn from the objects
  they show.
"""

from mha_book._lazy import lazy_exports

# its modules load on first use: mha_book.viz.<module> after import mha_book
__getattr__, __dir__ = lazy_exports(__name__, {})
