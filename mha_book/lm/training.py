"""Training and sampling of the character-level language model.

Taught in chapter 10-decoder-char-lm: a training loop (AdamW, warm-up and
cosine decay, gradient clipping; an optional progress bar and a compact loss
table afterwards), an optional cache of identical runs
(:mod:`mha_book.lm.artifacts`), and sampling with a temperature.

Legend: B batch, T block (context) length, V vocabulary size, N corpus length.
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import torch

from mha_book._checks import check_positive_int
from mha_book.book import in_book_build, pick
from mha_book.lm.artifacts import cached
from mha_book.lm.charlm import CharTokenizer, evaluate, get_batch, lm_loss
from mha_book.lm.history import TrainHistory
from mha_book.models.decoder import CausalDecoder

__all__ = ["train", "sample", "torch_threads"]


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Run the block with ``n`` PyTorch threads, then restore the previous count.

    The book's build gives each edition's kernel one thread; a page that
    trains a model while the other edition waits for the result can use both
    cores. Float sums depend on the thread count, so a run is reproducible
    for a fixed ``n``, and the artifact cache keys stored runs by it.

    Example:
        >>> before = torch.get_num_threads()
        >>> with torch_threads(2):
        ...     torch.get_num_threads()
        2
        >>> torch.get_num_threads() == before
        True
    """
    n = check_positive_int(n, "n")
    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _learning_rate(step: int, steps: int, lr: float, warmup: int) -> float:
    """Linear warm-up, then cosine decay to a tenth of ``lr``."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(1, steps - warmup)
    return lr * (0.1 + 0.45 * (1.0 + math.cos(math.pi * progress)))


def train(
    model: CausalDecoder,
    train_ids: torch.Tensor,
    *,
    steps: int,
    batch_size: int,
    block_size: int,
    lr: float = 3e-3,
    weight_decay: float = 0.01,
    seed: int = 0,
    val_ids: torch.Tensor | None = None,
    eval_every: int | None = None,
    eval_windows: int = 32,
    progress: bool | None = None,
    cache: bool = False,
) -> TrainHistory:
    """Train with AdamW on random windows; return the loss history.

    The batches come from a generator seeded with ``seed``, so with the same
    initial weights and the same number of threads two runs give identical
    losses.

    With ``cache=True`` and the environment variable ``MHA_BOOK_ARTIFACTS``
    naming a folder, a run identical to a stored one (same package, torch,
    threads, configuration, initial weights, data and arguments) is not
    repeated: its trained weights are loaded into ``model`` and its history
    returned (:mod:`mha_book.lm.artifacts`).

    Args:
        model: The model to train (in place; it is left in train mode).
        train_ids: Training corpus ``(N,)``.
        steps: Number of optimisation steps.
        batch_size: Windows per step B.
        block_size: Window length T (at most ``model.max_len``).
        lr: Peak learning rate (linear warm-up, cosine decay).
        weight_decay: AdamW weight decay.
        seed: Seed of the batch sampler.
        val_ids: Validation corpus; evaluated every ``eval_every`` steps and at the end.
        eval_every: Steps between validation evaluations (None: only at the end).
        eval_windows: Windows of ``val_ids`` per evaluation.
        progress: Show a live progress bar while training (``progress_bar``).
            None, the default: everywhere but in the book's build, whose
            pages print :meth:`TrainHistory.summary` once training is over.
        cache: Reuse an identical stored run, see above.

    Returns:
        A :class:`TrainHistory`.
    """
    check_positive_int(steps, "steps")
    if block_size > model.max_len:
        raise ValueError(
            f"block_size must be at most the model's max_len = {model.max_len}, "
            f"got {block_size}"
        )
    args = dict(
        steps=steps,
        batch_size=batch_size,
        block_size=block_size,
        lr=lr,
        weight_decay=weight_decay,
        seed=seed,
        eval_every=eval_every,
        eval_windows=eval_windows,
    )

    def run() -> TrainHistory:
        return _train_loop(model, train_ids, val_ids, progress=progress, **args)

    if not cache:
        return run()

    def save(history: TrainHistory, path: Path) -> None:
        record = {"state_dict": model.state_dict(), "history": history.__dict__}
        torch.save(record, path)

    def load(path: Path) -> TrainHistory:
        record = torch.load(path, map_location="cpu", weights_only=True)
        model.load_state_dict(record["state_dict"])
        model.train()
        return TrainHistory(**{**record["history"], "from_cache": True})

    key = (asdict(model.config), model.state_dict(), train_ids, val_ids, args)
    code = [__name__, type(model).__module__]  # the loop and the model's forward
    history, _ = cached(
        "train", key, run, save=save, load=load, code=code, kind=TrainHistory
    )
    return history


def progress_bar(steps: int, progress: bool | None):
    """A plain-text tqdm bar for ``steps`` steps on stdout, to use in ``with``
    (``as bar``: the bar, or None for none).

    ``progress=None``: a bar when tqdm is installed, except in the book's
    build (:func:`mha_book.book.in_book_build`): a built page keeps its output,
    and a bar's redrawn lines do not belong there. ``True``: a bar, and an
    ImportError that says so without tqdm. ``False``: none. On stdout, never
    stderr: a book build fails on stderr output.

    Example:
        >>> with progress_bar(10, False) as bar:
        ...     print(bar)
        None
    """
    if progress is None:
        if in_book_build() or importlib.util.find_spec("tqdm") is None:
            return contextlib.nullcontext(None)
    elif not progress:
        return contextlib.nullcontext(None)
    try:
        from tqdm import tqdm
    except ImportError:
        raise ImportError(
            "progress=True needs tqdm (pip install tqdm); or pass progress=False"
        ) from None
    desc = pick("训练", "train")  # in the notebook's language
    return tqdm(
        total=steps, file=sys.stdout, ascii=True, mininterval=2.0, ncols=80, desc=desc
    )


def advance(bar, loss: float) -> None:
    """One step on ``bar`` (from ``progress_bar``), showing the loss."""
    if bar is not None:
        bar.update(1)
        bar.set_postfix_str(f"{pick('损失', 'loss')} {loss:.3f}", refresh=False)


def _train_loop(
    model,
    train_ids,
    val_ids,
    *,
    steps,
    batch_size,
    block_size,
    lr,
    weight_decay,
    seed,
    eval_every,
    eval_windows,
    progress,
) -> TrainHistory:
    """The optimisation loop of :func:`train`, arguments already checked."""
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=lr, betas=(0.9, 0.99), weight_decay=weight_decay
    )
    warmup = max(1, steps // 20)
    history = TrainHistory()
    model.train()
    start = time.perf_counter()
    with progress_bar(steps, progress) as bar:  # closed on an error too
        for step in range(steps):
            for group in optimizer.param_groups:
                group["lr"] = _learning_rate(step, steps, lr, warmup)
            x, y = get_batch(
                train_ids, batch_size, block_size, generator=generator
            )  # (B, T)
            logits, _ = model(x)  # (B, T, V)
            loss = lm_loss(logits, y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            history.train_loss.append(loss.item())
            last = step + 1 == steps
            if val_ids is not None and (
                last or (eval_every and (step + 1) % eval_every == 0)
            ):
                history.val_steps.append(step + 1)
                history.val_loss.append(
                    evaluate(model, val_ids, block_size, max_windows=eval_windows)
                )
            advance(bar, history.train_loss[-1])
    history.seconds = time.perf_counter() - start
    return history


def sample(
    model: CausalDecoder,
    tokenizer: CharTokenizer,
    prompt: str,
    num_chars: int,
    *,
    temperature: float = 1.0,
    seed: int = 0,
) -> str:
    """Continue ``prompt`` by ``num_chars`` sampled characters.

    Sampling is reproducible: the same ``seed`` gives the same characters.

    Example:
        >>> tok = CharTokenizer("ab")
        >>> from mha_book.models.decoder import DecoderConfig
        >>> model = CausalDecoder(DecoderConfig(tok.vocab_size, 8, 2, 1, max_len=4))
        >>> len(sample(model, tok, "ab", 5))
        7
    """
    idx = tokenizer.encode(prompt, name="prompt")[None]  # (1, T)
    num_chars = check_positive_int(num_chars, "num_chars")
    generator = torch.Generator().manual_seed(seed)
    out = model.generate(idx, num_chars, temperature=temperature, generator=generator)
    return tokenizer.decode(out[0])
