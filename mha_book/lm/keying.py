"""What keys a stored result: a digest of every input, or a refusal.

:func:`mha_book.lm.artifacts.cached` stores a result under a digest of its
inputs. A digest must change whenever an input does, so it reads each input
by its content (tensors and arrays by dtype, shape and bytes; containers
item by item, dict keys with their types) and refuses what it cannot read
that way: a module's repr leaves out its weights, so two ``nn.Linear(3, 3)``
would share a key. Pass what defines the object instead (a config and a
``state_dict()``).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from pathlib import PurePath

import numpy
import torch

__all__ = ["digest"]

# Values whose text is the whole value: the type and the text key them.
_BY_TEXT = (torch.dtype, torch.device, PurePath)


def _update(h, value: object) -> None:
    """Feed ``value`` into the hash, or raise TypeError for what has no faithful key."""
    if isinstance(value, torch.Tensor):
        if value.is_meta:
            raise TypeError("digest: a meta tensor has no data to key a result by")
        t = value.detach().cpu().contiguous()
        h.update(f"tensor|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.view(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(value, numpy.ndarray):  # its bytes: str() elides large arrays
        if value.dtype.hasobject:
            raise TypeError(
                "digest: a numpy array of Python objects has no bytes to hash"
            )
        a = numpy.ascontiguousarray(value)
        h.update(f"ndarray|{a.dtype.str}|{a.shape}|".encode() + a.tobytes())
    elif isinstance(value, (set, frozenset)):  # in an order that does not vary
        h.update(f"set{len(value)}|".encode())
        for item in sorted(value, key=_order):
            _update(h, item)
    elif isinstance(value, dict):  # keys with their types: {1: x} is not {"1": x}
        h.update(f"dict{len(value)}|".encode())
        for key in sorted(value, key=_order):
            _update(h, key)
            _update(h, value[key])
    elif isinstance(value, (list, tuple)):
        h.update(f"seq{len(value)}|".encode())
        for item in value:
            _update(h, item)
    else:
        h.update(_scalar_text(value).encode() + b"|")


def _order(value: object) -> tuple[str, str]:
    """A sort key for set items and dict keys that does not vary between runs."""
    return (type(value).__qualname__, repr(value))


def _scalar_text(value: object) -> str:
    """The text that keys a plain value, with its type where the text alone is
    ambiguous; TypeError for a value with no faithful text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return f"{type(value).__name__}:{json.dumps(value)}"
    if isinstance(value, numpy.generic):  # a numpy scalar: its dtype and value
        return f"numpy.{value.dtype}:{json.dumps(value.item())}"
    if isinstance(value, enum.Enum):
        return f"enum:{type(value).__qualname__}.{value.name}"
    if isinstance(value, _BY_TEXT):
        return f"{type(value).__name__}:{value}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        h = hashlib.sha256()
        _update(h, fields)
        return f"dataclass:{type(value).__qualname__}:{h.hexdigest()}"
    what = type(value).__qualname__
    hint = (
        " (pass its config and state_dict())"
        if isinstance(value, torch.nn.Module)
        else ""
    )
    raise TypeError(
        f"digest cannot key a {what} by its content: its text would key different "
        f"values alike{hint}"
    )


def digest(*parts: object) -> str:
    """SHA-256 of nested tensors, dicts, sequences and plain values.

    Raises:
        TypeError: For a value that cannot be read by its content (a module,
            an arbitrary object, a meta tensor).

    Example:
        >>> digest({"a": torch.zeros(2)}) == digest({"a": torch.zeros(2)})
        True
        >>> digest(torch.zeros(2)) == digest(torch.zeros(2, dtype=torch.float64))
        False
        >>> a = numpy.arange(10000); b = a.copy(); b[5000] = -1
        >>> digest(a) == digest(b)  # every element counts, not a summary
        False
        >>> digest({1: "x"}) == digest({"1": "x"}), digest(1) == digest(1.0)
        (False, False)
        >>> digest(torch.nn.Linear(3, 3))
        Traceback (most recent call last):
        ...
        TypeError: digest cannot key a Linear by its content: ...
    """
    h = hashlib.sha256()
    for part in parts:
        _update(h, part)
    return h.hexdigest()
