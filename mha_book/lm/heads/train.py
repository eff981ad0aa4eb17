"""Training the two-key recall models, many small runs stored once per build.

Every run is AdamW with chapter 10's warm-up and cosine decay, on fresh
random batches from a generator seeded with the run's seed (which also seeds
the initial weights). A run goes through the artifact cache
(:mod:`mha_book.lm.artifacts`), keyed by its configuration and budget, so the
book's two editions train it once; :func:`train_recall_runs` shares a sweep's
runs out between them.

Legend: B batch, V values (V² answers).
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
from mha_book.lm.heads.recall import RecallConfig, RecallModel
from mha_book.lm.heads.task import RecallTask, recall_batch  # noqa: F401 (examples)
from mha_book.lm.training import _learning_rate  # chapter 10's schedule
from mha_book.seeds import Spread

__all__ = [
    "TrainedRecall",
    "recall_accuracy",
    "train_recall",
    "train_recall_runs",
    "accuracy_spreads",
]

TEST_SEED = 10_000  # the test examples: never a training seed


@dataclass
class TrainedRecall:
    """One trained run: the model, its loss at every step, its test
    accuracy, the seed and the seconds it took.

    Example:
        >>> from dataclasses import fields
        >>> [f.name for f in fields(TrainedRecall)]
        ['model', 'losses', 'accuracy', 'seed', 'seconds']
    """

    model: RecallModel
    losses: list[float]
    accuracy: float
    seed: int
    seconds: float


@torch.no_grad()
def recall_accuracy(
    model: RecallModel, num_examples: int = 2000, seed: int = TEST_SEED
) -> float:
    """The share of ``num_examples`` fresh examples answered right.

    Example:
        >>> task = RecallTask(num_pairs=4, num_keys=6, num_values=3)
        >>> model = RecallModel(RecallConfig(task, embed_dim=16, num_heads=2))
        >>> 0.0 <= recall_accuracy(model, 100) <= 1.0
        True
    """
    if not isinstance(model, RecallModel):
        raise TypeError(f"model must be a RecallModel, got {type(model).__name__}")
    n = check_positive_int(num_examples, "num_examples")
    batch = recall_batch(model.config.task, n, torch.Generator().manual_seed(seed))
    was_training = model.training
    model.eval()
    right = (model(batch).argmax(-1) == batch.answer).float().mean().item()
    model.train(was_training)
    return right


def _forked(fn, *args):
    """``fn(*args)`` leaving torch's global random state as it was: a page's
    later cells print the same whether a run was stored or made."""
    with torch.random.fork_rng(devices=[]):
        return fn(*args)


def _train(config: RecallConfig, steps, batch_size, lr, seed) -> TrainedRecall:
    torch.manual_seed(seed)
    model = RecallModel(config)
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)
    warmup = max(1, steps // 10)
    losses, start = [], time.perf_counter()
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = _learning_rate(step, steps, lr, warmup)
        batch = recall_batch(config.task, batch_size, generator)
        loss = nn.functional.cross_entropy(model(batch), batch.answer)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    seconds = time.perf_counter() - start
    model.eval()
    return TrainedRecall(model, losses, recall_accuracy(model), seed, seconds)


def train_recall(
    config: RecallConfig,
    *,
    steps: int = 120,
    batch_size: int = 128,
    lr: float = 1e-2,
    seed: int = 0,
    wait: bool = True,
) -> tuple[TrainedRecall, bool]:
    """Train a :class:`~mha_book.lm.heads.recall.RecallModel`, or load the
    stored result of an identical run. Returns ``(trained, loaded)``.

    With ``wait=False``, a run another process is making raises
    :class:`~mha_book.lm.artifacts.ArtifactBusy` at once.

    Example:
        >>> task = RecallTask(num_pairs=4, num_keys=6, num_values=3)
        >>> run, _ = train_recall(RecallConfig(task, 16, 2), steps=3, batch_size=8)
        >>> len(run.losses), 0.0 <= run.accuracy <= 1.0
        (3, True)
    """
    if not isinstance(config, RecallConfig):
        raise TypeError(f"config must be a RecallConfig, got {type(config).__name__}")
    check_positive_int(steps, "steps")
    check_positive_int(batch_size, "batch_size")
    check_positive_int(seed, "seed", allow_zero=True)
    key = (asdict(config), steps, batch_size, lr, seed)

    def save(run: TrainedRecall, path: Path) -> None:
        state = {k: v for k, v in run.__dict__.items() if k != "model"}
        torch.save({**state, "weights": run.model.state_dict()}, path)

    def load(path: Path) -> TrainedRecall:
        state = torch.load(path, map_location="cpu", weights_only=True)
        model = RecallModel(config)
        model.load_state_dict(state.pop("weights"))
        return TrainedRecall(model.eval(), **state)

    return cached(
        "heads-recall",
        key,
        lambda: _forked(_train, config, steps, batch_size, lr, seed),
        save=save,
        load=load,
        wait=wait,
        code=[__name__],
        kind=TrainedRecall,
    )


def train_recall_runs(
    configs: dict[str, RecallConfig], seeds: Iterable[int] = (0, 1, 2), **options
) -> dict[str, list[TrainedRecall]]:
    """:func:`train_recall` for every config and seed, shared out between
    processes that need the same runs (the book's two editions).

    ``options`` go to :func:`train_recall` (steps, batch size, learning rate).
    Returns, for each name of ``configs``, its runs in the order of ``seeds``.

    Example:
        >>> task = RecallTask(num_pairs=4, num_keys=6, num_values=3)
        >>> runs = train_recall_runs({"h2": RecallConfig(task, 16, 2)}, [0, 1],
        ...                          steps=2, batch_size=8)
        >>> [run.seed for run in runs["h2"]]
        [0, 1]
    """
    if not isinstance(configs, dict) or not configs:
        raise TypeError(
            f"configs must be a non-empty dict of name -> RecallConfig, got {configs!r:.80}"
        )
    seed_list = [check_positive_int(s, "seeds", allow_zero=True) for s in seeds]
    if not seed_list:
        raise ValueError("seeds: expected at least one seed, got none")
    # the slowest runs first (MLA, then more heads), so that the processes
    # sharing them out end with short runs and finish close together
    order = sorted(
        configs, key=lambda n: (configs[n].latent_dim is None, -configs[n].num_heads)
    )
    names = [f"{name}/{seed}" for name in order for seed in seed_list]

    def fetch(run: str, wait: bool) -> TrainedRecall:
        name, seed = run.rsplit("/", 1)
        return train_recall(configs[name], seed=int(seed), wait=wait, **options)[0]

    runs = shared_out(names, fetch)
    return {name: [runs[f"{name}/{s}"] for s in seed_list] for name in configs}


def accuracy_spreads(runs: dict[str, list[TrainedRecall]]) -> dict[str, Spread]:
    """The test accuracy of each name's runs, as a :class:`~mha_book.seeds.Spread`.

    Example:
        >>> task = RecallTask(num_pairs=4, num_keys=6, num_values=3)
        >>> runs = train_recall_runs({"h1": RecallConfig(task, 16, 1)}, [0, 1],
        ...                          steps=2, batch_size=8)
        >>> accuracy_spreads(runs)["h1"].seeds
        (0, 1)
    """
    return {
        name: Spread(tuple(r.seed for r in rs), tuple(r.accuracy for r in rs))
        for name, rs in runs.items()
    }
