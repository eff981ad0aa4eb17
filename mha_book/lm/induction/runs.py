"""The runs of the chapter on induction heads, their budget, and what is read
from them: the step of the phase change, each head's role, and ablations.

Every run has the same task, model dim, heads, data, steps, batch and
learning rate; only the depth changes (:func:`depth_configs`: one and two
attention layers, learned positions). :func:`chapter_runs` trains (or loads)
them over three seeds in one call, shared out between the book's two
editions.

Legend: N layers, H heads per layer, S snapshots.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from mha_book.lm.heads.masking import Head, masked
from mha_book.lm.induction.measures import measure
from mha_book.lm.induction.model import AttentionOnlyConfig
from mha_book.lm.induction.task import InductionBatch, InductionTask
from mha_book.lm.induction.train import TrainedInduction, train_induction_runs

__all__ = [
    "TASK",
    "EMBED_DIM",
    "NUM_HEADS",
    "SEEDS",
    "BUDGET",
    "depth_configs",
    "chapter_runs",
    "phase_change_step",
    "head_roles",
    "ablations",
]

TASK = InductionTask(vocab_size=16, seq_len=24, segment_len=8)
#: The model dim E. At 48 every seed's two-layer model forms its induction
#: heads within BUDGET, in about 80 % of the time E = 64 takes (which does
#: too); at 32 no seed did within 200 steps of 64 sequences.
EMBED_DIM = 48
NUM_HEADS = 2
SEEDS = (0, 1, 2)
#: The steps, batch, peak learning rate and snapshot interval of every run:
#: the smallest budget at which every seed's two-layer model passed the knee
#: (at E = 48: with 300 steps one seed's repeat loss was still 1.9 nats).
BUDGET = {"steps": 400, "batch_size": 32, "lr": 1e-2, "every": 20}


def _config(num_layers: int, positions: str = "learned") -> AttentionOnlyConfig:
    return AttentionOnlyConfig(
        TASK.vocab_size, EMBED_DIM, NUM_HEADS, num_layers, TASK.seq_len, positions
    )


def depth_configs() -> dict[str, AttentionOnlyConfig]:
    """``"1 layer"`` and ``"2 layers"``: learned positions, H heads a layer.

    Example:
        >>> {name: c.num_layers for name, c in depth_configs().items()}
        {'1 layer': 1, '2 layers': 2}
    """
    return {"1 layer": _config(1), "2 layers": _config(2)}


def chapter_runs(
    seeds: Iterable[int] = SEEDS, **budget
) -> dict[str, list[TrainedInduction]]:
    """Every run of :func:`depth_configs` over ``seeds``, trained or loaded,
    with :data:`BUDGET` unless ``budget`` overrides it.

    Example:
        >>> runs = chapter_runs([0], steps=1, batch_size=4)
        >>> list(runs)
        ['1 layer', '2 layers']
    """
    return train_induction_runs(depth_configs(), TASK, seeds, **{**BUDGET, **budget})


def phase_change_step(run: TrainedInduction) -> int | None:
    """The first snapshot's step at which the repeat's loss is below halfway
    between chance (log V, where a model that does not copy sits) and its
    final value; None if the final value is not below chance by a tenth.

    Example:
        >>> from mha_book.lm.induction.train import TrainedInduction
        >>> snaps = {"step": torch.tensor([0, 10, 20, 30]),
        ...          "repeat": torch.tensor([2.8, 2.7, 1.5, 1.0])}
        >>> phase_change_step(TrainedInduction(None, TASK, [], snaps, 0, 0.0))
        20
    """
    repeat, steps = run.snapshots["repeat"], run.snapshots["step"]  # (S,), (S,)
    chance, final = run.task.chance, float(repeat[-1])
    if final > chance - 0.1:
        return None
    below = (repeat < (chance + final) / 2).nonzero()  # (k, 1)
    return int(steps[below[0, 0]])


def head_roles(run: TrainedInduction) -> dict[str, Head]:
    """The heads the chapter silences, chosen by their final scores: the
    previous-token head (the highest previous-token score in layer 0), the
    induction head (the highest prefix-matching score in the last layer), and
    a control (of the other heads, the one whose higher score is lowest).

    Example:
        >>> snaps = {"previous": torch.tensor([[[0.1, 0.9], [0.2, 0.1]]]),
        ...          "prefix": torch.tensor([[[0.0, 0.1], [0.1, 0.8]]])}
        >>> run = TrainedInduction(None, TASK, [], snaps, 0, 0.0)
        >>> head_roles(run)  # doctest: +NORMALIZE_WHITESPACE
        {'previous-token': ('layers.0.attn', 1), 'induction': ('layers.1.attn', 1),
         'control': ('layers.0.attn', 0)}
    """
    previous = run.snapshots["previous"][-1]  # (N, H), after training
    prefix = run.snapshots["prefix"][-1]  # (N, H)
    last = prefix.shape[0] - 1
    roles = {
        "previous-token": ("layers.0.attn", int(previous[0].argmax())),
        "induction": (f"layers.{last}.attn", int(prefix[last].argmax())),
    }
    higher = torch.maximum(previous, prefix)  # (N, H)
    rest = [
        (float(higher[n, h]), (f"layers.{n}.attn", h))
        for n in range(higher.shape[0])
        for h in range(higher.shape[1])
        if (f"layers.{n}.attn", h) not in roles.values()
    ]
    if rest:
        roles["control"] = min(rest)[1]
    return roles


def ablations(
    run: TrainedInduction, batch: InductionBatch
) -> dict[str, dict[str, float]]:
    """The repeat's and the first copy's loss, and the induction head's
    prefix-matching score, with no head silenced (``"none"``), with each
    head of :func:`head_roles` silenced in turn, and with every head of the
    last layer silenced (``"last layer"``).

    Example:
        >>> from mha_book.lm.induction.train import probe_batch
        >>> run = chapter_runs([0], steps=1, batch_size=4)["2 layers"][0]
        >>> rows = ablations(run, probe_batch(TASK, 8))
        >>> list(rows), list(rows["none"])  # doctest: +NORMALIZE_WHITESPACE
        (['none', 'previous-token', 'induction', 'control', 'last layer'],
         ['repeat', 'first', 'prefix'])
    """
    roles = head_roles(run)
    name, head = roles["induction"]
    layer = int(name.split(".")[1])
    last = [(name, h) for h in range(run.model.config.num_heads)]
    silence = {"none": [], **{role: [h] for role, h in roles.items()}}
    rows = {}
    for silenced, heads in {**silence, "last layer": last}.items():
        with masked(run.model, heads):
            m = measure(run.model, batch)
        rows[silenced] = {
            "repeat": float(m["repeat"]),
            "first": float(m["first"]),
            "prefix": float(m["prefix"][layer, head]),
        }
    return rows
