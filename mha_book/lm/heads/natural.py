"""The head sweep on natural text: chapter 10's plays, character by character.

A small :class:`~mha_book.models.decoder.CausalDecoder` at a fixed model dim
E is trained with H = 1, 2, 4, ... heads and nothing else changed (the
attention's four projections are ``(E, E)`` whatever H is), over several
seeds, with chapter 10's loop (:func:`mha_book.lm.training.train`). Each run
is stored in the artifact cache (:mod:`mha_book.lm.artifacts`) and the runs
of a sweep are shared out between the book's two editions.

Legend: V vocabulary size, E model dim, H heads, T block length.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import torch

from mha_book._checks import check_positive_int
from mha_book.lm.artifacts import cached, shared_out
from mha_book.lm.charlm import CharTokenizer, evaluate, split_ids
from mha_book.lm.corpus import load_shakespeare
from mha_book.lm.training import train
from mha_book.models.decoder import CausalDecoder, DecoderConfig
from mha_book.seeds import Spread

__all__ = [
    "CHAR_HEAD_COUNTS",
    "CharRun",
    "char_data",
    "char_config",
    "train_char",
    "char_head_runs",
]

#: The head counts of the sweep, at E = 32 (D = 32 down to 8).
CHAR_HEAD_COUNTS = (1, 2, 4)


@dataclass
class CharRun:
    """One trained run: model, validation loss (nats per character), seed,
    training losses and seconds.

    Example:
        >>> from dataclasses import fields
        >>> [f.name for f in fields(CharRun)]
        ['model', 'val_loss', 'seed', 'losses', 'seconds']
    """

    model: CausalDecoder
    val_loss: float
    seed: int
    losses: list[float]
    seconds: float


@lru_cache(maxsize=1)
def char_data() -> tuple[CharTokenizer, torch.Tensor, torch.Tensor]:
    """Chapter 10's plays as ``(tokenizer, train_ids, val_ids)``, the last
    tenth held out (:func:`~mha_book.lm.charlm.split_ids`); read once per
    process.

    Shape:
        - train_ids: ``(N,)``; val_ids: ``(M,)``

    Example:
        >>> tok, train_ids, val_ids = char_data()
        >>> tok.vocab_size > 26, len(train_ids) > 8 * len(val_ids)
        (True, True)
    """
    text = load_shakespeare()
    tok = CharTokenizer.from_text(text)
    train_ids, val_ids = split_ids(tok.encode(text), val_fraction=0.1)
    return tok, train_ids, val_ids


def char_config(
    vocab_size: int,
    num_heads: int,
    *,
    embed_dim: int = 32,
    num_layers: int = 1,
    block_size: int = 32,
) -> DecoderConfig:
    """The sweep's decoder: learned positions, the given heads, all else fixed.

    Example:
        >>> char_config(65, 4).embed_dim, char_config(65, 4).num_heads
        (32, 4)
    """
    return DecoderConfig(
        vocab_size=vocab_size,
        embed_dim=embed_dim,
        num_heads=num_heads,
        num_layers=num_layers,
        max_len=block_size,
    )


def train_char(
    config: DecoderConfig,
    *,
    steps: int = 100,
    batch_size: int = 16,
    lr: float = 1e-2,
    seed: int = 0,
    wait: bool = True,
) -> tuple[CharRun, bool]:
    """Train one decoder of the sweep on :func:`char_data`, or load the stored
    run; its validation loss is over the first 64 windows of the held-out
    text. Returns ``(run, loaded)``.

    Example:
        >>> vocab_size = char_data()[0].vocab_size
        >>> run, _ = train_char(char_config(vocab_size, 2, block_size=8), steps=2,
        ...                     batch_size=4)
        >>> len(run.losses), run.val_loss > 0
        (2, True)
    """
    if not isinstance(config, DecoderConfig):
        raise TypeError(f"config must be a DecoderConfig, got {type(config).__name__}")
    check_positive_int(seed, "seed", allow_zero=True)
    check_positive_int(steps, "steps")
    check_positive_int(batch_size, "batch_size")
    _, train_ids, val_ids = char_data()

    def compute() -> CharRun:
        with torch.random.fork_rng(devices=[]):  # the caller's state stays
            return seeded()

    def seeded() -> CharRun:
        torch.manual_seed(seed)
        model = CausalDecoder(config)
        history = train(
            model,
            train_ids,
            steps=steps,
            batch_size=batch_size,
            block_size=config.max_len,
            lr=lr,
            seed=seed,
            progress=False,
        )
        model.eval()
        loss = evaluate(model, val_ids, config.max_len, max_windows=64)
        return CharRun(model, loss, seed, history.train_loss, history.seconds)

    def save(run: CharRun, path: Path) -> None:
        state = {k: v for k, v in run.__dict__.items() if k != "model"}
        torch.save({**state, "weights": run.model.state_dict()}, path)

    def load(path: Path) -> CharRun:
        state = torch.load(path, map_location="cpu", weights_only=True)
        model = CausalDecoder(config)
        model.load_state_dict(state.pop("weights"))
        return CharRun(model.eval(), **state)

    key = (asdict(config), train_ids, val_ids, steps, batch_size, lr, seed)
    return cached(
        "heads-char",
        key,
        compute,
        save=save,
        load=load,
        wait=wait,
        code=[__name__],
        kind=CharRun,
    )


def char_head_runs(
    head_counts: Iterable[int] = CHAR_HEAD_COUNTS,
    seeds: Iterable[int] = (0, 1, 2),
    **options,
) -> tuple[dict[int, list[CharRun]], dict[int, Spread]]:
    """:func:`train_char` for every head count and seed, shared out between
    the book's two editions. ``options`` go to :func:`char_config`
    (``embed_dim``, ``num_layers``, ``block_size``) and :func:`train_char`
    (``steps``, ``batch_size``, ``lr``).

    Returns ``(runs, spreads)``: for each head count its runs in the order of
    ``seeds``, and their validation losses as a :class:`~mha_book.seeds.Spread`.

    Example:
        >>> runs, spreads = char_head_runs([1, 2], [0], steps=2, batch_size=4,
        ...                                block_size=8)
        >>> list(runs), spreads[2].seeds
        ([1, 2], (0,))
    """
    counts = [check_positive_int(h, "head_counts") for h in head_counts]
    seed_list = [check_positive_int(s, "seeds", allow_zero=True) for s in seeds]
    if not counts or not seed_list:
        raise ValueError(
            f"head_counts and seeds: expected at least one each, got {counts} and {seed_list}"
        )
    sizes = ("embed_dim", "num_layers", "block_size")
    shape = {k: options.pop(k) for k in sizes if k in options}
    vocab_size = char_data()[0].vocab_size

    def fetch(name: str, wait: bool) -> CharRun:
        h, seed = (int(part) for part in name.split("/"))
        config = char_config(vocab_size, h, **shape)
        return train_char(config, seed=seed, wait=wait, **options)[0]

    # more heads first: the slower runs, so the sharing processes end together
    names = [f"{h}/{s}" for h in sorted(counts, reverse=True) for s in seed_list]
    got = shared_out(names, fetch)
    runs = {h: [got[f"{h}/{s}"] for s in seed_list] for h in counts}
    spreads = {
        h: Spread(tuple(seed_list), tuple(r.val_loss for r in rs))
        for h, rs in runs.items()
    }
    return runs, spreads
