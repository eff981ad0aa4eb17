"""Train short, test long: how far each position scheme reads past its training length.

Taught in chapter 14-positions, after Press, Smith and Lewis (2022), who
trained language models on sequences of length L and measured the
validation loss on longer ones. :func:`train_short_test_long` does the same
at book scale: one :class:`~mha_book.models.decoder.CausalDecoder` per position
scheme, identical except for ``positions``, trained with the same seed and
budget on windows of ``train_len`` characters and evaluated at
``factor * train_len`` for each factor.

Learned positions have a table of exactly ``train_len`` rows (the rows a
training run can reach), so they have no loss beyond 1x: their entries are
``None``. Every other scheme is built with ``max_len`` equal to the longest
evaluation length; its weights do not depend on ``max_len``.

Each scheme's run (training and evaluations) goes through the artifact cache
(:mod:`mha_book.lm.artifacts`). Two processes that need the same runs, such as
the book's two editions, share them out: a run another process is working on
is skipped and taken up again at the end, when its result is ready or the
other process has given up on it.
"""

from __future__ import annotations

import math
import operator
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypedDict

import torch

from mha_book._checks import check_positive_int, check_token_ids
from mha_book.lm.artifacts import cached, shared_out
from mha_book.lm.charlm import evaluate
from mha_book.lm.training import train
from mha_book.models.decoder import POSITIONS, CausalDecoder, DecoderConfig

__all__ = ["ExtrapolationRun", "train_short_test_long"]


class _Settings(TypedDict):
    """What every scheme's decoder shares (``**`` into its config; in the cache key)."""

    vocab_size: int
    embed_dim: int
    num_heads: int
    num_layers: int


class _Budget(TypedDict):
    """Every scheme's training budget (``**`` into :func:`train`; in the cache key)."""

    steps: int
    batch_size: int
    lr: float
    seed: int


@dataclass(frozen=True)
class ExtrapolationRun:
    """One position scheme trained at ``lengths[0]`` and evaluated at every length.

    Attributes:
        scheme: The decoder's ``positions``.
        lengths: Evaluation lengths, the training length first.
        val_loss: Validation loss (nats per token) at each length; None where
            the scheme cannot read that many tokens (learned positions past
            their table).
        train_loss: Mean training loss of the last tenth of the steps.
        seconds: Wall time of the training run.
    """

    scheme: str
    lengths: tuple[int, ...]
    val_loss: tuple[float | None, ...]
    train_loss: float
    seconds: float


def train_short_test_long(
    train_ids: torch.Tensor,
    val_ids: torch.Tensor,
    *,
    vocab_size: int,
    schemes: tuple[str, ...] = ("none", "sinusoidal", "learned", "rope", "alibi"),
    train_len: int = 64,
    factors: tuple[int, ...] = (1, 2, 4, 8),
    embed_dim: int = 32,
    num_heads: int = 4,
    num_layers: int = 2,
    steps: int = 400,
    batch_size: int = 24,
    lr: float = 1e-2,
    seed: int = 0,
    progress: bool | None = None,
) -> dict[str, ExtrapolationRun]:
    """Train one decoder per scheme on short windows; evaluate on longer ones.

    Args:
        train_ids: Training corpus ``(N,)``.
        val_ids: Validation corpus ``(M,)``, evaluated in consecutive
            non-overlapping windows (all of them) at every length.
        vocab_size: Vocabulary size V.
        schemes: Values of ``DecoderConfig(positions=...)`` to compare.
        train_len: Training window length L.
        factors: Evaluation lengths as multiples of L; must start with 1.
        embed_dim: Model dimension E of every decoder.
        num_heads: Heads H.
        num_layers: Blocks.
        steps: Training steps per scheme.
        batch_size: Windows per step.
        lr: Peak learning rate.
        seed: Seeds both the initial weights and the batches of every scheme.
        progress: A progress bar per scheme trained
            (``mha_book.lm.training.progress_bar``; None: except in the
            book's build).

    Returns:
        ``{scheme: ExtrapolationRun}`` in the order of ``schemes``.

    Example:
        >>> from mha_book.lm.charlm import CharTokenizer
        >>> tok = CharTokenizer.from_text("abcd")
        >>> ids = tok.encode("abcdabdc" * 40)  # (320,)
        >>> runs = train_short_test_long(
        ...     ids, ids, vocab_size=4, schemes=("learned", "alibi"),
        ...     train_len=8, factors=(1, 2), embed_dim=8, num_heads=2,
        ...     num_layers=1, steps=2, batch_size=2, progress=False)
        >>> runs["learned"].lengths, runs["learned"].val_loss[1]
        ((8, 16), None)
        >>> all(loss > 0 for loss in runs["alibi"].val_loss)
        True
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    for name, ids in (("train_ids", train_ids), ("val_ids", val_ids)):
        check_token_ids(ids, name, 1, "(N,)", vocab_size=vocab_size)
    if (
        isinstance(lr, bool)
        or not isinstance(lr, (int, float))
        or not 0 < lr < math.inf
    ):
        raise ValueError(f"lr must be a positive, finite number, got {lr!r}")
    if isinstance(seed, bool) or not hasattr(seed, "__index__"):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    seed = operator.index(seed)  # numpy's integers too
    for scheme in schemes:
        if scheme not in POSITIONS:
            raise ValueError(f"schemes must be among {POSITIONS}, got {scheme!r}")
    train_len = check_positive_int(train_len, "train_len")
    if not factors or factors[0] != 1:
        raise ValueError(
            f"factors must start with 1 (the training length), got {factors}"
        )
    for factor in factors:
        check_positive_int(factor, "factors[i]")
    lengths = tuple(train_len * f for f in factors)
    for name, ids, need in (
        ("train_ids", train_ids, train_len + 1),
        ("val_ids", val_ids, lengths[-1] + 1),
    ):
        if len(ids) < need:
            raise ValueError(
                f"{name} must hold at least {need} tokens (the longest window it "
                f"is cut into, plus one), got {len(ids)}"
            )
    settings = _Settings(
        vocab_size=vocab_size,
        embed_dim=embed_dim,
        num_heads=num_heads,
        num_layers=num_layers,
    )
    budget = _Budget(steps=steps, batch_size=batch_size, lr=lr, seed=seed)

    def run(scheme: str) -> ExtrapolationRun:
        # The caller's random state is left as it was, so the cells after a
        # page's runs print the same whether each run was stored or made.
        with torch.random.fork_rng(devices=[]):
            return seeded_run(scheme)

    def seeded_run(scheme: str) -> ExtrapolationRun:
        max_len = train_len if scheme == "learned" else max(lengths)
        config = DecoderConfig(**settings, max_len=max_len, positions=scheme)
        torch.manual_seed(seed)
        model = CausalDecoder(config)
        start = time.perf_counter()
        history = train(
            model, train_ids, block_size=train_len, progress=progress, **budget
        )
        seconds = time.perf_counter() - start
        losses = tuple(
            evaluate(model, val_ids, length) if length <= max_len else None
            for length in lengths
        )
        tail = history.train_loss[-max(1, steps // 10) :]
        return ExtrapolationRun(scheme, lengths, losses, sum(tail) / len(tail), seconds)

    def save(result: ExtrapolationRun, path: Path) -> None:
        torch.save(asdict(result), path)

    def load(path: Path) -> ExtrapolationRun:
        record = torch.load(path, weights_only=True)
        return ExtrapolationRun(
            **{
                **record,
                "lengths": tuple(record["lengths"]),
                "val_loss": tuple(record["val_loss"]),
            }
        )

    def fetch(scheme: str, wait: bool) -> ExtrapolationRun:
        key = (scheme, settings, lengths, budget, train_ids, val_ids)
        result, _ = cached(
            "extrapolation",
            key,
            lambda: run(scheme),
            save=save,
            load=load,
            wait=wait,
            kind=ExtrapolationRun,
        )
        return result

    return shared_out(schemes, fetch)
