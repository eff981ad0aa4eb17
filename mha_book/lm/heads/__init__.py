"""What several heads buy, measured on trained models.

- :mod:`~mha_book.lm.heads.task`: a task that needs two relations at once,
  recalling the values of two keys found by content;
  :mod:`~mha_book.lm.heads.recall`: its one-layer model, with MHA, GQA, MQA
  or MLA at a fixed model dim;
  :mod:`~mha_book.lm.heads.train`: its runs over head counts and seeds,
  stored once per build.
- :mod:`~mha_book.lm.heads.natural`: the same sweep of head counts on the
  characters of the plays.
- :mod:`~mha_book.lm.heads.masking`: heads masked or scaled in any model
  built from the book's attention modules;
  :mod:`~mha_book.lm.heads.pruning`: heads scored and removed after
  training.
- :mod:`~mha_book.lm.heads.measures`: equal parameters, where each recall
  head looks, ablations, score ranks;
  :mod:`~mha_book.lm.heads.sweeps`: the chapter's runs and their budget.
"""

from mha_book._lazy import lazy_exports

# its modules load on first use: mha_book.lm.heads.<module>
__getattr__, __dir__ = lazy_exports(__name__, {})
