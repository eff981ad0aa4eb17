"""Training the digit classifiers, each run stored once per build.

Three kinds of model, trained alike: ``"vit"`` (the
:class:`~mha_book.vision.vit.VisionTransformer`), ``"vit-nopos"`` (the same
without positions) and ``"mlp"`` (a :class:`~mha_book.vision.vit.PixelMLP`
with about as many parameters as the ViT). Every run is AdamW with chapter
10's warm-up and cosine decay, on batches of training images drawn by a
generator seeded with the run's seed (which also seeds the initial weights).
A run goes through the artifact cache (:mod:`mha_book.lm.artifacts`), keyed
by its kind, configuration and budget, so the book's two editions train it
once; :func:`train_runs` shares the runs out between them.

Legend: B batch, N training images.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
from torch import nn

from mha_book._checks import check_positive_int
from mha_book.lm.artifacts import cached, shared_out
from mha_book.lm.training import _learning_rate  # chapter 10's schedule
from mha_book.seeds import Spread
from mha_book.vision.data import Digits, load_digits
from mha_book.vision.vit import PixelMLP, VisionTransformer, ViTConfig

__all__ = [
    "KINDS",
    "Trained",
    "make_model",
    "accuracy",
    "train_digits",
    "train_runs",
    "accuracy_spreads",
]

KINDS = ("vit", "vit-nopos", "mlp")


def make_model(kind: str, config: ViTConfig) -> nn.Module:
    """An untrained model of ``kind``, sized by ``config``.

    Example:
        >>> type(make_model("mlp", ViTConfig())).__name__
        'PixelMLP'
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if not isinstance(config, ViTConfig):
        raise TypeError(f"config must be a ViTConfig, got {type(config).__name__}")
    if kind == "mlp":
        return PixelMLP.sized_like(VisionTransformer(config))
    return VisionTransformer(replace(config, positions=kind == "vit"))


@dataclass
class Trained:
    """One trained run: its kind, the model, the loss at every step, the test
    accuracy, the seed and the seconds the training took.

    Example:
        >>> from dataclasses import fields
        >>> [f.name for f in fields(Trained)]
        ['kind', 'model', 'losses', 'accuracy', 'seed', 'seconds']
    """

    kind: str
    model: nn.Module
    losses: list[float]
    accuracy: float
    seed: int
    seconds: float


@torch.no_grad()
def accuracy(model: nn.Module, digits: Digits | None = None) -> float:
    """The share of ``digits`` (default: the test images) classified right.

    Example:
        >>> 0.0 <= accuracy(make_model("vit", ViTConfig())) <= 1.0
        True
    """
    digits = load_digits("test") if digits is None else digits
    was_training = model.training
    model.eval()
    right = (model(digits.images).argmax(-1) == digits.labels).float().mean().item()
    model.train(was_training)
    return right


def _train(kind, config, steps, batch_size, lr, seed) -> Trained:
    torch.manual_seed(seed)
    model = make_model(kind, config)
    data = load_digits("train")
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=lr, weight_decay=0.01, fused=True
    )
    warmup = max(1, steps // 10)
    losses, start = [], time.perf_counter()
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = _learning_rate(step, steps, lr, warmup)
        pick = torch.randint(len(data), (batch_size,), generator=generator)  # (B,)
        loss = nn.functional.cross_entropy(model(data.images[pick]), data.labels[pick])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    seconds = time.perf_counter() - start
    model.eval()
    return Trained(kind, model, losses, accuracy(model), seed, seconds)


def train_digits(
    kind: str,
    config: ViTConfig | None = None,
    *,
    steps: int = 200,
    batch_size: int = 64,
    lr: float = 5e-3,
    seed: int = 0,
    wait: bool = True,
) -> tuple[Trained, bool]:
    """Train a model of ``kind`` on the training digits, or load the stored
    result of an identical run. Returns ``(trained, loaded)``.

    With ``wait=False``, a run another process is making raises
    :class:`~mha_book.lm.artifacts.ArtifactBusy` at once.

    Example:
        >>> run, _ = train_digits("vit", steps=3, batch_size=8)
        >>> len(run.losses), 0.0 <= run.accuracy <= 1.0
        (3, True)
    """
    config = ViTConfig() if config is None else config
    make_model(kind, config)  # checks both
    check_positive_int(steps, "steps")
    check_positive_int(batch_size, "batch_size")
    check_positive_int(seed, "seed", allow_zero=True)
    key = (kind, asdict(config), steps, batch_size, lr, seed)

    def save(run: Trained, path: Path) -> None:
        state = {k: v for k, v in run.__dict__.items() if k != "model"}
        torch.save({**state, "weights": run.model.state_dict()}, path)

    def load(path: Path) -> Trained:
        state = torch.load(path, map_location="cpu", weights_only=True)
        model = make_model(kind, config)
        model.load_state_dict(state.pop("weights"))
        return Trained(model=model.eval(), **state)

    def compute() -> Trained:
        with torch.random.fork_rng(devices=[]):  # the caller's draws stay as they were
            return _train(kind, config, steps, batch_size, lr, seed)

    return cached(
        "vision-digits",
        key,
        compute,
        save=save,
        load=load,
        wait=wait,
        code=[__name__],
        kind=Trained,
    )


def train_runs(
    config: ViTConfig | None = None,
    seeds: Iterable[int] = (0, 1, 2),
    kinds: Iterable[str] = KINDS,
    **options,
) -> dict[str, list[Trained]]:
    """:func:`train_digits` for every kind and seed, shared out between
    processes that need the same runs (the book's two editions).

    ``options`` go to :func:`train_digits` (steps, batch size, learning rate).
    Returns, for each kind, its runs in the order of ``seeds``.

    Example:
        >>> runs = train_runs(seeds=[0, 1], kinds=["mlp"], steps=2, batch_size=8)
        >>> [run.seed for run in runs["mlp"]]
        [0, 1]
    """
    seed_list = [check_positive_int(s, "seeds", allow_zero=True) for s in seeds]
    kind_list = list(kinds)
    if not seed_list or not kind_list:
        raise ValueError(
            f"seeds and kinds: expected at least one of each, got {seed_list}, {kind_list}"
        )
    names = [f"{kind}/{seed}" for kind in kind_list for seed in seed_list]

    def fetch(run: str, wait: bool) -> Trained:
        kind, seed = run.rsplit("/", 1)
        return train_digits(kind, config, seed=int(seed), wait=wait, **options)[0]

    runs = shared_out(names, fetch)
    return {kind: [runs[f"{kind}/{s}"] for s in seed_list] for kind in kind_list}


def accuracy_spreads(runs: dict[str, list[Trained]]) -> dict[str, Spread]:
    """The test accuracy of each kind's runs, as a :class:`~mha_book.seeds.Spread`.

    Example:
        >>> runs = train_runs(seeds=[0, 1], kinds=["mlp"], steps=2, batch_size=8)
        >>> accuracy_spreads(runs)["mlp"].seeds
        (0, 1)
    """
    return {
        kind: Spread(tuple(r.seed for r in rs), tuple(r.accuracy for r in rs))
        for kind, rs in runs.items()
    }
