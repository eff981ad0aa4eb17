"""The bad and edge values that replace one argument of a valid call."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import asdict, is_dataclass

import numpy
import torch

from tools.fault_review.outcomes import Api


def _float_variants(x: torch.Tensor) -> Iterator[tuple[str, object]]:
    yield "None", None
    yield "str", "x"
    yield "nested list", x.tolist()
    yield "one dim fewer", x[0]
    yield "one dim more", x[None]
    yield "last dim + 1", torch.cat([x, x[..., :1]], dim=-1)
    yield "first dim + 1", torch.cat([x, x[:1]], dim=0)
    yield "float64", x.double()
    yield "int64", x.long()
    yield "bool", x > 0
    yield "empty first dim", x[:0]
    nan = x.clone()
    nan.view(-1)[0] = float("nan")
    yield "contains NaN", nan
    inf = x.clone()
    inf.view(-1)[0] = float("inf")
    yield "contains inf", inf


def _mask_variants(m: torch.Tensor) -> Iterator[tuple[str, object]]:
    yield "str", "mask"
    yield "float", m.float()
    yield "int64", m.long()
    yield "last dim + 1", torch.cat([m, m[..., :1]], dim=-1)
    yield "rank 3 (B, T, S)", m.reshape(-1, *m.shape[-2:])[:2]
    yield "(B, S) with B != T", m.reshape(-1, m.shape[-1])[:1].expand(7, -1)
    yield "all False", torch.zeros_like(m)


def _id_variants(ids: torch.Tensor, vocab: int) -> Iterator[tuple[str, object]]:
    yield "None", None
    yield "float", ids.float()
    yield "id = vocab size", torch.full_like(ids, vocab)
    yield "id = -1", torch.full_like(ids, -1)
    yield "one dim fewer", ids[0]
    yield "one dim more", ids[None]
    yield "empty", ids[..., :0]


def _int_variants(n: int) -> Iterator[tuple[str, object]]:
    yield "0", 0
    yield "-1", -1
    yield "float", float(n) + 0.5
    yield "bool True", True
    yield "str", str(n)
    yield "None", None
    yield "numpy.int64 (valid)", numpy.int64(n)


def _float_arg_variants(p: float) -> Iterator[tuple[str, object]]:
    yield "nan", float("nan")
    yield "inf", float("inf")
    yield "-1.0", -1.0
    yield "str", "0.5"
    yield "bool True", True
    yield "numpy.float64 (valid)", numpy.float64(p)


def _number_list_variants(values: list) -> Iterator[tuple[str, object]]:
    yield "None", None
    yield "empty", []
    yield "one number alone", values[0]
    yield "a zero inside", [*values[:-1], 0]
    yield "a str inside", [*values[:-1], "1"]
    yield "one shorter", values[:-1]


def _row_list_variants(rows: list) -> Iterator[tuple[str, object]]:
    """Lists of result dicts (the benchmark's tables) or of size tuples."""
    yield "None", None
    yield "one row alone", rows[0]
    first = rows[0]
    short = dict(list(first.items())[1:]) if isinstance(first, dict) else first[1:]
    yield "a row missing an entry", [short, *rows[1:]]
    yield "a str inside", [*rows[:-1], "row"]


def _callable_variants(fn: Callable[..., object]) -> Iterator[tuple[str, object]]:
    yield "None", None
    yield "str", "fn"
    yield "functools.partial of it", functools.partial(fn)


def _list_variants(value: list) -> Iterator[tuple[str, object]]:
    """A non-empty list: of str, of numbers, or of rows (dicts or tuples)."""
    if all(isinstance(v, str) for v in value):
        # poems, sentences: one of them alone is a str, read character by character
        yield "one str", value[0]
        yield "None", None
        yield "empty", []
        yield "an int inside", [*value[:-1], 1]
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        yield from _number_list_variants(value)
    elif all(isinstance(v, (dict, tuple)) for v in value):
        yield from _row_list_variants(value)
    else:  # tensors, caches, other objects
        yield "None", None
        yield "empty", []
        yield "one item alone", value[0]
        yield "a str inside", [*value[:-1], "x"]


def _object_variants(value: object) -> Iterator[tuple[str, object]]:
    """A layer, a function, a dict or a config."""
    if isinstance(value, torch.nn.Module):
        yield "None", None
        yield "str", "layer"
        yield "a Linear layer", torch.nn.Linear(2, 2)
    elif callable(value) and not isinstance(value, type):
        yield from _callable_variants(value)
    elif isinstance(value, dict) and value:
        yield "None", None
        yield "empty", {}
        yield "a list of its values", list(value.values())
    # a config (an instance, not its class): its fields as a dict are not one
    elif is_dataclass(value) and not isinstance(value, type):
        yield "dict of its fields", asdict(value)
        yield "None", None


def variants(value: object, api: Api, arg: str) -> Iterator[tuple[str, object]]:
    if isinstance(value, torch.Tensor) and value.dtype == torch.bool:
        return _mask_variants(value)
    if isinstance(value, torch.Tensor) and not value.is_floating_point():
        return _id_variants(value, 11)
    if isinstance(value, torch.Tensor):
        return _float_variants(value)
    if isinstance(value, bool):
        return iter([("int 1", 1), ("None", None), ("str", "yes")])
    if isinstance(value, int):
        return _int_variants(value)
    if isinstance(value, float):
        return _float_arg_variants(value)
    if isinstance(value, str):
        return iter([("int", 1), ("unknown name", "no-such-choice")])
    if isinstance(value, list) and value:
        return _list_variants(value)
    return _object_variants(value)
