"""The runs of the two-key recall task that the chapter on what heads buy
measures, with their budget, and the tables made from them.

Every run has the same task, model dim, data, steps, batch and learning
rate; only the attention changes:

- :func:`head_configs`: MHA with H = 1, 2, 4, 8, 16 heads at E = 32
  (D = 32 down to 2);
- :func:`sharing_configs`: at H = 8, MHA, GQA with 4 and 2 key/value
  heads, MQA, and MLA with a cache as small as GQA-2's.

:func:`chapter_runs` trains (or loads) all of them over three seeds in one
call, shared out between the book's two editions.

Legend: E model dim, H heads, D = E / H, Hkv key/value heads, C latent dim.
"""

from __future__ import annotations

from collections.abc import Iterable

from mha_book.lm.heads.recall import RecallConfig, cache_numbers_per_token
from mha_book.lm.heads.task import RecallTask
from mha_book.lm.heads.train import (
    TrainedRecall,
    accuracy_spreads,
    train_recall_runs,
)

__all__ = [
    "TASK",
    "EMBED_DIM",
    "HEAD_COUNTS",
    "SEEDS",
    "BUDGET",
    "head_configs",
    "sharing_configs",
    "chapter_runs",
    "sharing_table",
]

TASK = RecallTask(num_pairs=8, num_keys=16, num_values=4)
EMBED_DIM = 32
HEAD_COUNTS = (1, 2, 4, 8, 16)
SEEDS = (0, 1, 2)
#: The steps, batch and peak learning rate of every run, the smallest budget
#: at which the head counts' ranges over the seeds separated.
BUDGET = {"steps": 120, "batch_size": 128, "lr": 1e-2}
SHARED_HEADS = 8  # the query heads of the key/value-sharing runs (D = 4)


def head_configs() -> dict[str, RecallConfig]:
    """``"H=1"`` ... ``"H=16"``: MHA at E = 32 with each head count.

    Example:
        >>> [(name, c.head_dim) for name, c in head_configs().items()]
        [('H=1', 32), ('H=2', 16), ('H=4', 8), ('H=8', 4), ('H=16', 2)]
    """
    return {f"H={h}": RecallConfig(TASK, EMBED_DIM, h) for h in HEAD_COUNTS}


def sharing_configs() -> dict[str, RecallConfig]:
    """MHA, GQA-4, GQA-2, MQA and MLA, all with 8 query heads at E = 32.

    ``"MHA"`` is the configuration of ``"H=8"`` (the same runs). MLA's
    latent holds C = 14 numbers and its shared rotated key R = 2: 16 numbers
    per token, GQA-2's cache.

    Example:
        >>> {name: cache_numbers_per_token(c) for name, c in sharing_configs().items()}
        {'MHA': 64, 'GQA-4': 32, 'GQA-2': 16, 'MQA': 8, 'MLA': 16}
    """
    E, H = EMBED_DIM, SHARED_HEADS
    return {
        "MHA": RecallConfig(TASK, E, H),
        "GQA-4": RecallConfig(TASK, E, H, num_kv_heads=4),
        "GQA-2": RecallConfig(TASK, E, H, num_kv_heads=2),
        "MQA": RecallConfig(TASK, E, H, num_kv_heads=1),
        "MLA": RecallConfig(TASK, E, H, latent_dim=14, rope_dim=2),
    }


def chapter_runs(
    seeds: Iterable[int] = SEEDS, **budget
) -> dict[str, list[TrainedRecall]]:
    """Every run of :func:`head_configs` and :func:`sharing_configs` over
    ``seeds``, trained or loaded (:func:`~mha_book.lm.heads.train.train_recall_runs`),
    with :data:`BUDGET` unless ``budget`` overrides it.

    Example:
        >>> runs = chapter_runs([0], steps=1, batch_size=4)
        >>> list(runs)[:2], len(runs)
        (['H=1', 'H=2'], 10)
    """
    configs = {**head_configs(), **sharing_configs()}
    return train_recall_runs(configs, seeds, **{**BUDGET, **budget})


def sharing_table(
    runs: dict[str, list[TrainedRecall]], bytes_per_number: int = 2
) -> list[tuple[str, int, int, str]]:
    """One row per attention of :func:`sharing_configs`: its name, the
    numbers and the bytes (``bytes_per_number``: 2 in float16) it caches per
    token and layer, and its accuracy over the seeds (``lo–hi``).

    Example:
        >>> from mha_book.lm.heads.train import TrainedRecall
        >>> runs = {name: [TrainedRecall(None, [], 0.9, seed=0, seconds=0.0)]
        ...         for name in sharing_configs()}  # accuracies, no models
        >>> rows = sharing_table(runs)
        >>> rows[0][3]
        '0.900'
        >>> [row[:3] for row in rows]  # doctest: +NORMALIZE_WHITESPACE
        [('MHA', 64, 128), ('GQA-4', 32, 64), ('GQA-2', 16, 32),
         ('MQA', 8, 16), ('MLA', 16, 32)]
    """
    spreads = accuracy_spreads(runs)
    rows = []
    for name, config in sharing_configs().items():
        numbers = cache_numbers_per_token(config)
        spread = spreads[name].range_text("{:.3f}")
        rows.append((name, numbers, numbers * bytes_per_number, spread))
    return rows
