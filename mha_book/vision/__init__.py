"""Vision: a Vision Transformer trained on real handwritten digits, and where
its heads look.

Above :mod:`mha_book.lm` (whose artifact cache stores its training runs and
whose head gates silence its heads) and :mod:`mha_book.models` (whose encoder
layers it stacks); never imported by them (the import contract in
``pyproject.toml``).

- :mod:`~mha_book.vision.data`: the UCI optical digits, 8×8, shipped with a
  fixed split, and images cut into patches;
- :mod:`~mha_book.vision.vit`: the model, and a pixel MLP of the same size;
- :mod:`~mha_book.vision.train`: their training, stored once per build;
- :mod:`~mha_book.vision.measures`: attention distances, offsets, position
  similarity, rollout and silenced heads.
"""

from mha_book._lazy import lazy_exports

# its modules load on first use: mha_book.vision.<module> after import mha_book
__getattr__, __dir__ = lazy_exports(__name__, {})
