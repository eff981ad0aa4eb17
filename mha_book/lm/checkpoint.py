"""Checkpoints of the character-level language model that round-trip exactly.

Taught in chapter 10-decoder-char-lm. One file holds the model's
constructor arguments, its weights and the tokenizer's characters, with a
SHA-256 digest of all three; it is written atomically (a temporary file
renamed into place) and read with ``torch.load(..., weights_only=True)``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict
from pathlib import Path

import torch

from mha_book.lm.charlm import CharTokenizer
from mha_book.models.decoder import CausalDecoder, DecoderConfig

__all__ = [
    "CHECKPOINT_FORMAT",
    "checkpoint_digest",
    "save_checkpoint",
    "load_checkpoint",
]

CHECKPOINT_FORMAT = "mha_book.lm.charlm/2"  # /2: with a digest of the contents


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

    Example:
        >>> import tempfile
        >>> from mha_book.lm.charlm import CharTokenizer
        >>> from mha_book.models.decoder import CausalDecoder, DecoderConfig
        >>> tok = CharTokenizer.from_text("to be or not")
        >>> model = CausalDecoder(DecoderConfig(
        ...     vocab_size=tok.vocab_size, embed_dim=16, num_heads=2, num_layers=1,
        ...     max_len=8))
        >>> path = save_checkpoint(Path(tempfile.mkdtemp()) / "m.pt", model, tok)
        >>> again, tok2 = load_checkpoint(path)
        >>> idx = tok.encode("to be")[None]  # (1, 5)
        >>> torch.equal(model.eval()(idx)[0], again(idx)[0]), tok2.chars == tok.chars
        (True, True)
    """
    path = Path(path)
    config, state, chars = asdict(model.config), model.state_dict(), tokenizer.chars
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
    digest, a configuration the model rejects, a vocabulary whose size is
    not the model's, or characters repeated or out of their sorted order
    (which would change the ids).
    """
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"checkpoint {path} is a folder, not a checkpoint file")
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
    if chars != "".join(sorted(set(chars))):  # as CharTokenizer keeps them
        # A duplicate would shrink the vocabulary, another order change the ids.
        raise ValueError(
            f"{path}: the tokenizer's characters must be distinct and in sorted "
            f"order, as CharTokenizer saves them; got {chars[:40]!r}"
        )
    vocab = config.get("vocab_size")
    if vocab != len(chars):
        raise ValueError(
            f"{path}: the tokenizer has {len(chars)} characters but the model's "
            f"vocab_size is {vocab}"
        )
    try:
        model = CausalDecoder(DecoderConfig(**config))
        model.load_state_dict(state)
    except (TypeError, ValueError, RuntimeError) as err:
        raise ValueError(f"{path}: the model cannot be rebuilt ({err})") from err
    return model.eval(), CharTokenizer(chars)
