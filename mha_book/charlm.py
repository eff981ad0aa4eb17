"""A character-level language model around :class:`mha_book.decoder.CausalDecoder`.

Taught in chapter 10-decoder-char-lm: a tokenizer over characters, random
training windows, a training loop (with an optional progress bar and a
compact loss table afterwards), a unigram baseline, sampling with a
temperature, and a checkpoint that round-trips exactly.

Legend: B batch, T block (context) length, V vocabulary size, N corpus length.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

from mha_book._checks import (
    check_positive_int,
    check_rank,
    check_tensor,
    check_token_ids,
    fmt_shape,
)
from mha_book.artifacts import cached
from mha_book.decoder import CausalDecoder

__all__ = [
    "CharTokenizer",
    "split_ids",
    "get_batch",
    "lm_loss",
    "unigram_loss",
    "evaluate",
    "TrainHistory",
    "train",
    "sample",
    "save_checkpoint",
    "load_checkpoint",
]

CHECKPOINT_FORMAT = "mha_book.charlm/2"  # /2: with a digest of the contents


class CharTokenizer:
    """Maps each distinct character to an id (sorted order) and back.

    Args:
        chars: The vocabulary; duplicates are dropped and the rest sorted.

    Example:
        >>> tok = CharTokenizer.from_text("to be or not")
        >>> tok.vocab_size, tok.encode("to be").shape
        (7, torch.Size([5]))
        >>> tok.decode(tok.encode("not"))
        'not'
    """

    def __init__(self, chars: str | Sequence[str]) -> None:
        chars = sorted(set(chars))
        if not chars or any(not isinstance(c, str) or len(c) != 1 for c in chars):
            raise ValueError(
                "chars must be a non-empty collection of single characters"
            )
        self.chars = "".join(chars)
        self._id = {c: i for i, c in enumerate(self.chars)}

    @classmethod
    def from_text(cls, text: str) -> "CharTokenizer":
        """The tokenizer whose vocabulary is every character of ``text``."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return cls(text)

    @property
    def vocab_size(self) -> int:
        """Number of distinct characters V."""
        return len(self.chars)

    def encode(self, text: str, *, name: str = "text") -> torch.Tensor:
        """Ids of the characters of ``text``, shape ``(N,)``, dtype long.

        ``name`` is the argument named in errors (a caller's own name for it).
        """
        if not isinstance(text, str):
            raise TypeError(f"{name} must be a str, got {type(text).__name__}")
        unknown = sorted(set(text) - self._id.keys())
        if unknown:
            raise ValueError(
                f"{name} has characters outside the vocabulary: {unknown[:10]!r}"
            )
        return torch.tensor([self._id[c] for c in text], dtype=torch.long)

    def decode(self, ids: torch.Tensor | Sequence[int]) -> str:
        """The text of a sequence of ids: a 1-D integer tensor or a sequence of ints."""
        if isinstance(ids, torch.Tensor):
            ids = check_token_ids(ids, "ids", 1, "(N,)").tolist()
        elif isinstance(ids, (str, bytes)) or not isinstance(ids, Sequence):
            raise TypeError(
                "ids must be a 1-D tensor or a sequence of ints, "
                f"got {type(ids).__name__}"
            )
        if any(isinstance(i, bool) or not isinstance(i, numbers.Integral) for i in ids):
            raise TypeError(f"ids must be ints, got {ids[:5]!r}")
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:  # chars[-1] would silently give the last character
            raise ValueError(
                f"ids must lie in [0, vocab_size) = [0, {self.vocab_size}), "
                f"got {bad[:5]}"
            )
        return "".join(self.chars[i] for i in ids)

    def __repr__(self) -> str:
        return f"CharTokenizer(vocab_size={self.vocab_size})"


def split_ids(
    ids: torch.Tensor, val_fraction: float = 0.1
) -> tuple[torch.Tensor, torch.Tensor]:
    """Split a corpus into a training head and a validation tail (no shuffling).

    Example:
        >>> train, val = split_ids(torch.arange(100))
        >>> train.shape, val.shape
        (torch.Size([90]), torch.Size([10]))
    """
    check_token_ids(ids, "ids", 1, "(N,)")
    if isinstance(val_fraction, bool) or not isinstance(val_fraction, numbers.Real):
        raise TypeError(
            f"val_fraction must be a float in (0, 1), got {type(val_fraction).__name__}"
        )
    if not 0.0 < val_fraction < 1.0:
        raise ValueError(f"val_fraction must be in (0, 1), got {val_fraction}")
    n_train = int(round(len(ids) * (1.0 - val_fraction)))
    if not 0 < n_train < len(ids):
        raise ValueError(
            f"val_fraction = {val_fraction} of ids with {len(ids)} tokens leaves "
            "the training or the validation part empty"
        )
    return ids[:n_train], ids[n_train:]


def get_batch(
    ids: torch.Tensor,
    batch_size: int,
    block_size: int,
    *,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Random windows of the corpus and the same windows shifted by one.

    Shape:
        - ids: ``(N,)``
        - x, y: ``(B, T)`` with ``y[:, t] == ids[start + t + 1]``, the target
          of ``x[:, t]``

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x, y = get_batch(torch.arange(100), 4, 8, generator=g)
        >>> x.shape, bool((y == x + 1).all())
        (torch.Size([4, 8]), True)
    """
    check_token_ids(ids, "ids", 1, "(N,)")
    batch_size = check_positive_int(batch_size, "batch_size")
    block_size = check_positive_int(block_size, "block_size")
    if len(ids) < block_size + 1:
        raise ValueError(
            f"ids must hold at least block_size + 1 = {block_size + 1} tokens, "
            f"got {len(ids)}"
        )
    starts = torch.randint(
        len(ids) - block_size, (batch_size,), generator=generator
    )  # (B,)
    offsets = torch.arange(block_size + 1)  # (T + 1,)
    windows = ids[starts[:, None] + offsets]  # (B, T + 1)
    return windows[:, :-1], windows[:, 1:]  # (B, T), (B, T)


def lm_loss(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy (nats per token) of next-token logits against targets.

    Shape:
        - logits: ``(B, T, V)``
        - targets: ``(B, T)``, each in ``[0, V)``
    """
    check_tensor(logits, "logits")
    check_rank(logits, "logits", 3, "(B, T, V)")
    if not logits.is_floating_point():
        raise TypeError(f"logits must be a float tensor, got dtype {logits.dtype}")
    check_token_ids(targets, "targets", 2, "(B, T)")
    V = logits.shape[-1]
    if targets.numel() and (int(targets.min()) < 0 or int(targets.max()) >= V):
        raise ValueError(
            f"targets must hold token ids in [0, V) = [0, {V}), "
            f"got ids from {int(targets.min())} to {int(targets.max())}"
        )
    if logits.shape[:2] != targets.shape:
        raise ValueError(
            f"targets must have shape (B, T) = {fmt_shape(logits.shape[:2])}, "
            f"got {fmt_shape(targets.shape)}"
        )
    return F.cross_entropy(
        logits.flatten(0, 1), targets.flatten()
    )  # (B·T, V) vs (B·T,)


def unigram_loss(
    train_ids: torch.Tensor, eval_ids: torch.Tensor, vocab_size: int
) -> float:
    """Cross-entropy (nats per character) of a model that ignores all context.

    It predicts every character with its frequency in ``train_ids`` (add-one
    smoothed): the loss a language model must beat to have learnt anything
    beyond "e is common".

    Example:
        >>> ids = torch.tensor([0, 1])
        >>> round(unigram_loss(ids, ids, 2), 4)  # log 2
        0.6931
    """
    counts = torch.bincount(train_ids, minlength=vocab_size).double() + 1.0  # (V,)
    log_p = counts.log() - counts.sum().log()  # (V,)
    return float(-log_p[eval_ids].mean())


@torch.no_grad()
def evaluate(
    model: CausalDecoder,
    ids: torch.Tensor,
    block_size: int,
    *,
    batch_size: int = 64,
    max_windows: int | None = None,
) -> float:
    """Mean loss over consecutive non-overlapping windows of ``ids`` (deterministic).

    Args:
        model: The language model; evaluated in eval mode, its mode is restored.
        ids: Token ids ``(N,)``.
        block_size: Window length T.
        batch_size: Windows per forward pass.
        max_windows: Use only the first windows (None: all of them).

    Returns:
        The loss in nats per token, averaged over every predicted token.
    """
    check_token_ids(ids, "ids", 1, "(N,)")
    block_size = check_positive_int(block_size, "block_size")
    batch_size = check_positive_int(batch_size, "batch_size")
    n = (len(ids) - 1) // block_size
    if max_windows is not None:
        n = min(n, max_windows)
    if n < 1:
        raise ValueError(
            f"ids must hold at least block_size + 1 = {block_size + 1} tokens, "
            f"got {len(ids)}"
        )
    starts = torch.arange(n) * block_size  # (n,)
    offsets = torch.arange(block_size + 1)  # (T + 1,)
    was_training = model.training
    model.eval()
    total = 0.0
    try:
        for chunk in starts.split(batch_size):
            windows = ids[chunk[:, None] + offsets]  # (B, T + 1)
            logits, _ = model(windows[:, :-1])  # (B, T, V)
            total += float(lm_loss(logits, windows[:, 1:])) * len(chunk)
    finally:
        model.train(was_training)
    return total / n


@dataclass
class TrainHistory:
    """What :func:`train` measured: the loss of every step and the validation losses.

    ``seconds`` is the wall-clock time of the whole loop, validation included.
    ``from_cache`` is True when :func:`train` loaded the run instead of doing
    it; ``seconds`` is then the time of the run that was stored.
    """

    train_loss: list[float] = field(default_factory=list)
    val_steps: list[int] = field(default_factory=list)
    val_loss: list[float] = field(default_factory=list)
    seconds: float = 0.0
    from_cache: bool = False

    def summary(self, every: int | None = None) -> str:
        """A compact loss table, for printing once after training instead of a live log.

        One row per ``every`` steps (default: one row per validation step, or a
        single row for the last step when there was no validation). A row gives
        the step, the mean training loss over the steps since the previous row,
        and the validation loss measured at that step (blank if none was).

        Args:
            every: Steps between rows (None: the validation steps).

        Returns:
            The table as text, one line per row after a header.

        Example:
            >>> h = TrainHistory(
            ...     [4.0, 3.0, 2.0, 1.0], val_steps=[2, 4], val_loss=[3.25, 1.5]
            ... )
            >>> print(h.summary())
             step  train_loss  val_loss
                2       3.500     3.250
                4       1.500     1.500
            >>> print(h.summary(every=3))
             step  train_loss  val_loss
                3       3.000
                4       1.000     1.500
        """
        n = len(self.train_loss)
        if n == 0:
            raise ValueError("the history is empty: nothing was trained")
        if every is not None:
            check_positive_int(every, "every")
            rows = [*range(every, n, every), n]
        else:
            rows = [step for step in self.val_steps if step <= n] or [n]
        val = dict(zip(self.val_steps, self.val_loss))
        lines = [f"{'step':>5}  {'train_loss':>10}  {'val_loss':>8}"]
        previous = 0
        for step in rows:
            window = self.train_loss[previous:step]
            line = f"{step:>5}  {sum(window) / len(window):>10.3f}"
            if step in val:
                line += f"  {val[step]:>8.3f}"
            lines.append(line)
            previous = step
        return "\n".join(lines)


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
    progress: bool = True,
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
    returned (:mod:`mha_book.artifacts`).

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
        progress: Show a live progress bar while training (tqdm, written to
            stdout, never stderr), meant for an interactive session or a
            terminal. Code whose output is kept (the book's pages, tests,
            logs) passes ``progress=False`` and prints
            :meth:`TrainHistory.summary` once training is over.
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

    key = (model.config, model.state_dict(), train_ids, val_ids, args)
    history, _ = cached("train", key, run, save=save, load=load)
    return history


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
    bar = None
    if progress:
        try:
            from tqdm import (
                tqdm,
            )  # plain text bar, on stdout: a book build fails on stderr
        except ImportError:
            raise ImportError(
                "progress=True needs tqdm (pip install tqdm); or pass progress=False"
            ) from None

        bar = tqdm(
            total=steps,
            file=sys.stdout,
            ascii=True,
            mininterval=10.0,
            ncols=80,
            desc="train",
        )
    model.train()
    start = time.perf_counter()
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
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{history.train_loss[-1]:.3f}", refresh=False)
    if bar is not None:
        bar.close()
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
        >>> model = CausalDecoder(tok.vocab_size, 8, 2, 1, max_len=4)
        >>> len(sample(model, tok, "ab", 5))
        7
    """
    idx = tokenizer.encode(prompt, name="prompt")[None]  # (1, T)
    num_chars = check_positive_int(num_chars, "num_chars")
    generator = torch.Generator().manual_seed(seed)
    out = model.generate(idx, num_chars, temperature=temperature, generator=generator)
    return tokenizer.decode(out[0])


def checkpoint_digest(config: dict, state_dict: dict, chars: str) -> str:
    """SHA-256 of a checkpoint's configuration, weights and vocabulary.

    Example:
        >>> w = {"w": torch.zeros(2)}
        >>> checkpoint_digest({"a": 1}, w, "ab") == checkpoint_digest({"a": 1}, w, "ab")
        True
        >>> checkpoint_digest({"a": 1}, w, "ab") == checkpoint_digest({"a": 2}, w, "ab")
        False
    """
    h = hashlib.sha256()
    h.update(json.dumps(config, sort_keys=True, default=str).encode())
    h.update(chars.encode())
    for name in sorted(state_dict):
        tensor = state_dict[name].detach().cpu().contiguous()
        h.update(f"{name}|{tensor.dtype}|{tuple(tensor.shape)}".encode())
        h.update(tensor.view(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def save_checkpoint(
    path: str | Path, model: CausalDecoder, tokenizer: CharTokenizer
) -> Path:
    """Write the model's configuration, weights and the tokenizer to one file.

    The file is written under a temporary name in the same folder and then
    renamed into place, so a crash while saving never destroys the previous
    checkpoint. A digest of the contents is stored with them.
    """
    path = Path(path)
    config, state, chars = dict(model.config), model.state_dict(), tokenizer.chars
    payload = {
        "format": CHECKPOINT_FORMAT,
        "config": config,
        "state_dict": state,
        "chars": chars,
        "digest": checkpoint_digest(config, state, chars),
    }
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # atomic on POSIX and Windows
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_checkpoint(path: str | Path) -> tuple[CausalDecoder, CharTokenizer]:
    """Rebuild the model and tokenizer saved by :func:`save_checkpoint`.

    The model is in eval mode, on the CPU. Only tensors and plain values are
    unpickled (``weights_only=True``). Every error names the file: missing,
    empty, truncated or another format, contents that do not match their
    digest, a configuration the model rejects, or a vocabulary whose size is
    not the model's.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint {path} does not exist")
    if path.stat().st_size == 0:
        raise ValueError(f"checkpoint {path} is empty (0 bytes)")
    try:
        data = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # truncated zip, a pickle of another kind, ...
        raise ValueError(
            f"{path} is not a readable {CHECKPOINT_FORMAT} checkpoint "
            f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''})"
        ) from err
    if not isinstance(data, dict) or data.get("format") != CHECKPOINT_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ValueError(
            f"{path} is not a {CHECKPOINT_FORMAT} checkpoint (found {found!r})"
        )
    missing = [key for key in ("config", "state_dict", "chars") if key not in data]
    if missing:  # e.g. a flipped byte in a key's name
        raise ValueError(f"{path} is damaged: it has no {', '.join(missing)}")
    config, state, chars = data["config"], data["state_dict"], data["chars"]
    try:
        intact = checkpoint_digest(config, state, chars) == data.get("digest")
    except (AttributeError, TypeError, ValueError, RuntimeError):  # a value of
        intact = False  # the wrong kind cannot be hashed: damaged as well
    if not intact:
        raise ValueError(f"{path} is damaged: its contents do not match their digest")
    vocab = config.get("vocab_size")
    if vocab != len(chars):
        raise ValueError(
            f"{path}: the tokenizer has {len(chars)} characters but the model's "
            f"vocab_size is {vocab}"
        )
    try:
        model = CausalDecoder(**config)
        model.load_state_dict(state)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"{path}: the model cannot be rebuilt ({err})") from err
    return model.eval(), CharTokenizer(chars)
