"""Training the date translator (chapter 16-cross-attention): random dates in
random formats, teacher forcing, AdamW with warm-up and cosine decay, stored
in the artifact cache (:mod:`mha_book.lm.artifacts`) under everything that
can change the run, so an identical run is made once.

Legend: B batch, S source length, T = 10 target characters, V vocabulary size.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from mha_book._checks import check_positive_int
from mha_book.lm.artifacts import cached, shared_out
from mha_book.lm.training import (  # chapter 10's schedule and progress bar
    _learning_rate,
    advance,
    progress_bar,
)
from mha_book.seq2seq.dates import FORMATS, render_date
from mha_book.seq2seq.translator import (
    START,
    Translator,
    TranslatorConfig,
    encode_texts,
)

__all__ = ["TrainedTranslator", "date_batch", "train_translator", "train_translators"]


@dataclass
class TrainedTranslator:
    """A trained model, its loss at every step, and the seconds it took."""

    model: Translator
    losses: list[float]
    seconds: float


def date_batch(
    dates: Sequence, rng: random.Random, batch_size: int, vocab: list[str]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``batch_size`` random dates of ``dates`` in random formats.

    Returns ``(src, tgt_in, tgt_out)``: ``(B, S)`` source ids, and the target
    ``(B, T)`` twice, shifted: ``<s>`` + its first T - 1 characters as the
    decoder's input, all T characters as what it must predict.

    Example:
        >>> from mha_book.seq2seq.dates import date_split, date_vocabulary
        >>> src, tgt_in, tgt_out = date_batch(
        ...     date_split()[0], random.Random(0), 4, date_vocabulary())
        >>> src.shape[0], tgt_in.shape, tgt_out.shape
        (4, torch.Size([4, 10]), torch.Size([4, 10]))
    """
    check_positive_int(batch_size, "batch_size")
    _check_dates(dates)
    examples = [
        render_date(rng.choice(dates), rng.choice(FORMATS)) for _ in range(batch_size)
    ]
    src = encode_texts([ex.source for ex in examples], vocab)  # (B, S)
    tgt_out = encode_texts([ex.target for ex in examples], vocab)  # (B, T)
    start = torch.full((batch_size, 1), START)
    return src, torch.cat([start, tgt_out[:, :-1]], 1), tgt_out


def _check_dates(dates: object) -> None:
    if isinstance(dates, (str, bytes)) or not isinstance(dates, Sequence) or not dates:
        raise ValueError(
            f"dates must be a non-empty list of datetime.date, got {dates!r:.60}"
        )


def _forked(fn, *args):
    """``fn(*args)`` with torch's global random state restored afterwards: a
    page's later cells print the same whether the run was stored or made."""
    with torch.random.fork_rng(devices=[]):
        return fn(*args)


def _train(
    config, dates, vocab, steps, batch_size, lr, seed, progress
) -> TrainedTranslator:
    torch.manual_seed(seed)
    rng = random.Random(seed)
    model = Translator(config)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    warmup = min(30, max(1, steps // 10))  # a short run still reaches lr
    losses, start = [], time.perf_counter()
    with progress_bar(steps, progress) as bar:  # closed on an error too
        for step in range(steps):
            for group in optimizer.param_groups:
                group["lr"] = _learning_rate(step, steps, lr, warmup)
            src, tgt_in, tgt_out = date_batch(dates, rng, batch_size, vocab)
            logits, _ = model(src, tgt_in)  # (B, T, V)
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), tgt_out.flatten())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
            advance(bar, losses[-1])
    seconds = time.perf_counter() - start
    return TrainedTranslator(model.eval(), losses, seconds)


def train_translator(
    config: TranslatorConfig,
    dates: Sequence,
    vocab: list[str],
    *,
    steps: int = 300,
    batch_size: int = 64,
    lr: float = 3e-3,
    seed: int = 0,
    wait: bool = True,
    progress: bool | None = None,
) -> tuple[TrainedTranslator, bool]:
    """Train a :class:`~mha_book.seq2seq.translator.Translator` on ``dates``,
    or load the stored result of an identical run.

    Returns ``(trained, loaded)``. With ``wait=False``, a run another process
    is making raises :class:`~mha_book.lm.artifacts.ArtifactBusy` at once (the
    book's two editions share their runs out that way). ``progress``: a
    progress bar while it trains (``mha_book.lm.training.progress_bar``;
    None: except in the book's build).
    """
    check_positive_int(steps, "steps")
    _check_dates(dates)
    key = (
        asdict(config),
        [d.isoformat() for d in dates],
        vocab,
        steps,
        batch_size,
        lr,
        seed,
    )

    def save(trained: TrainedTranslator, path: Path) -> None:
        state = {
            "config": asdict(trained.model.config),
            "weights": trained.model.state_dict(),
            "losses": trained.losses,
            "seconds": trained.seconds,
        }
        torch.save(state, path)

    def load(path: Path) -> TrainedTranslator:
        state = torch.load(path, map_location="cpu", weights_only=True)
        model = Translator(TranslatorConfig(**state["config"]))
        model.load_state_dict(state["weights"])
        return TrainedTranslator(model.eval(), state["losses"], state["seconds"])

    return cached(
        "translator",
        key,
        lambda: _forked(
            _train, config, dates, vocab, steps, batch_size, lr, seed, progress
        ),
        save=save,
        load=load,
        wait=wait,
        code=["mha_book.seq2seq.training"],
        kind=TrainedTranslator,
    )


def train_translators(
    configs: dict[str, TranslatorConfig], dates: Sequence, vocab: list[str], **options
) -> dict[str, TrainedTranslator]:
    """:func:`train_translator` for each of ``configs``, shared out between
    processes that need the same runs (the book's two editions): each takes
    the runs no other process is busy with, then waits for the rest.

    ``options`` go to :func:`train_translator` (steps, batch size, ...).
    """
    if not isinstance(configs, dict) or not configs:
        raise TypeError(
            f"configs must be a non-empty dict of name -> TranslatorConfig, got {configs!r:.80}"
        )

    def fetch(name: str, wait: bool) -> TrainedTranslator:
        return train_translator(configs[name], dates, vocab, wait=wait, **options)[0]

    return shared_out(list(configs), fetch)
