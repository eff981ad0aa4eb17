"""Training the attention-only models on repeated segments, with snapshots.

Every run is AdamW with chapter 10's warm-up and cosine decay, on fresh
batches of :func:`~mha_book.lm.induction.task.induction_batch` from a
generator seeded with the run's seed (which also seeds the initial weights).
Every ``every`` steps, and after the last, the run measures the model on one
fixed probe batch (:func:`~mha_book.lm.induction.measures.measure`): the loss
on the first copy and on the repeat, and each head's previous-token and
prefix-matching scores. These snapshots are how the chapter watches the phase
change; they are stored with the run.

A run goes through the artifact cache (:mod:`mha_book.lm.artifacts`), keyed
by its configuration, task and budget, so the book's two editions train it
once; :func:`train_induction_runs` shares runs out between them.

Legend: S snapshots, N layers, H heads per layer.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from mha_book._checks import check_positive_int
from mha_book.lm.artifacts import cached, shared_out
from mha_book.lm.induction.measures import measure
from mha_book.lm.induction.model import AttentionOnlyConfig, AttentionOnlyDecoder
from mha_book.lm.induction.task import InductionBatch, InductionTask, induction_batch
from mha_book.lm.training import _learning_rate  # chapter 10's schedule

__all__ = [
    "PROBE_SEED",
    "TrainedInduction",
    "probe_batch",
    "train_induction",
    "train_induction_runs",
]

PROBE_SEED = 10_000  # the probe sequences: never a training seed


@dataclass
class TrainedInduction:
    """One trained run: the model, its training loss at every step, its
    snapshots, the seed and the seconds it took.

    ``snapshots`` holds ``"step"`` ``(S,)``, ``"first"`` and ``"repeat"``
    ``(S,)`` (mean losses on the probe batch) and ``"previous"`` and
    ``"prefix"`` ``(S, N, H)`` (each head's scores).

    Example:
        >>> from dataclasses import fields
        >>> [f.name for f in fields(TrainedInduction)]
        ['model', 'task', 'losses', 'snapshots', 'seed', 'seconds']
    """

    model: AttentionOnlyDecoder
    task: InductionTask
    losses: list[float]
    snapshots: dict[str, torch.Tensor]
    seed: int
    seconds: float


def probe_batch(task: InductionTask, size: int = 64) -> InductionBatch:
    """The fixed sequences every snapshot and measure of the chapter reads.

    Example:
        >>> a, b = (probe_batch(InductionTask(16, 12, 4), 3) for _ in range(2))
        >>> bool((a.tokens == b.tokens).all())
        True
    """
    generator = torch.Generator().manual_seed(PROBE_SEED)
    return induction_batch(task, size, generator)


def _snapshot(model, probe: InductionBatch, step: int, into: dict) -> None:
    for name, value in {"step": torch.tensor(step), **measure(model, probe)}.items():
        into.setdefault(name, []).append(value)


def _train(config, task, steps, batch_size, lr, seed, every) -> TrainedInduction:
    torch.manual_seed(seed)
    model = AttentionOnlyDecoder(config)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)
    probe, taken = probe_batch(task), {}
    losses, seconds, warmup = [], 0.0, max(1, steps // 10)
    for step in range(steps):
        if step % every == 0:
            _snapshot(model, probe, step, taken)
        start = time.perf_counter()
        for group in optimizer.param_groups:
            group["lr"] = _learning_rate(step, steps, lr, warmup)
        tokens = induction_batch(task, batch_size, generator).tokens  # (B, T)
        logits, _ = model(tokens[:, :-1])  # (B, T - 1, V)
        loss = nn.functional.cross_entropy(
            logits.flatten(0, 1), tokens[:, 1:].flatten()
        )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        seconds += time.perf_counter() - start
    _snapshot(model, probe, steps, taken)
    snapshots = {name: torch.stack(values) for name, values in taken.items()}
    return TrainedInduction(model.eval(), task, losses, snapshots, seed, seconds)


def train_induction(
    config: AttentionOnlyConfig,
    task: InductionTask,
    *,
    steps: int = 400,
    batch_size: int = 32,
    lr: float = 3e-3,
    seed: int = 0,
    every: int = 10,
    wait: bool = True,
) -> tuple[TrainedInduction, bool]:
    """Train an :class:`~mha_book.lm.induction.model.AttentionOnlyDecoder` on
    ``task``, or load the stored result of an identical run. Returns
    ``(trained, loaded)``; ``seconds`` counts the training steps, not the
    snapshots.

    Example:
        >>> task = InductionTask(16, 12, 4)
        >>> config = AttentionOnlyConfig(16, 16, 2, 2, max_len=12)
        >>> run, _ = train_induction(config, task, steps=4, batch_size=8, every=2)
        >>> run.snapshots["step"].tolist(), run.snapshots["prefix"].shape
        ([0, 2, 4], torch.Size([3, 2, 2]))
    """
    if not isinstance(config, AttentionOnlyConfig):
        raise TypeError(
            f"config must be an AttentionOnlyConfig, got {type(config).__name__}"
        )
    if not isinstance(task, InductionTask):
        raise TypeError(f"task must be an InductionTask, got {type(task).__name__}")
    if config.max_len < task.seq_len:
        raise ValueError(
            f"config.max_len must be at least task.seq_len = {task.seq_len}, "
            f"got {config.max_len}"
        )
    for value, name in ((steps, "steps"), (batch_size, "batch_size"), (every, "every")):
        check_positive_int(value, name)
    check_positive_int(seed, "seed", allow_zero=True)
    key = (asdict(config), asdict(task), steps, batch_size, lr, seed, every)

    def compute() -> TrainedInduction:
        with torch.random.fork_rng(devices=[]):  # the caller's state stays
            return _train(config, task, steps, batch_size, lr, seed, every)

    def save(run: TrainedInduction, path: Path) -> None:
        state = {k: v for k, v in run.__dict__.items() if k not in ("model", "task")}
        torch.save({**state, "weights": run.model.state_dict()}, path)

    def load(path: Path) -> TrainedInduction:
        state = torch.load(path, map_location="cpu", weights_only=True)
        model = AttentionOnlyDecoder(config)
        model.load_state_dict(state.pop("weights"))
        return TrainedInduction(model.eval(), task, **state)

    return cached(
        "induction",
        key,
        compute,
        save=save,
        load=load,
        wait=wait,
        code=[__name__],
        kind=TrainedInduction,
    )


def train_induction_runs(
    configs: dict[str, AttentionOnlyConfig],
    task: InductionTask,
    seeds: Iterable[int] = (0, 1, 2),
    **options,
) -> dict[str, list[TrainedInduction]]:
    """:func:`train_induction` for every config and seed, shared out between
    processes that need the same runs (the book's two editions), deepest
    models first. ``options`` go to :func:`train_induction`.

    Returns, for each name of ``configs``, its runs in the order of ``seeds``.

    Example:
        >>> task = InductionTask(16, 12, 4)
        >>> configs = {"one": AttentionOnlyConfig(16, 16, 2, 1, 12)}
        >>> runs = train_induction_runs(configs, task, [0, 1], steps=2, batch_size=4)
        >>> [run.seed for run in runs["one"]]
        [0, 1]
    """
    if not isinstance(configs, dict) or not configs:
        raise TypeError(
            "configs must be a non-empty dict of name -> AttentionOnlyConfig, "
            f"got {configs!r:.80}"
        )
    seed_list = [check_positive_int(s, "seeds", allow_zero=True) for s in seeds]
    if not seed_list:
        raise ValueError("seeds: expected at least one seed, got none")
    order = sorted(configs, key=lambda n: -configs[n].num_layers)  # slowest first
    names = [f"{name}/{seed}" for name in order for seed in seed_list]

    def fetch(run: str, wait: bool) -> TrainedInduction:
        name, seed = run.rsplit("/", 1)
        return train_induction(
            configs[name], task, seed=int(seed), wait=wait, **options
        )[0]

    runs = shared_out(names, fetch)
    return {name: [runs[f"{name}/{s}"] for s in seed_list] for name in configs}
