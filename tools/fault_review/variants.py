"""The bad and edge values that replace one argument of a valid call."""

from __future__ import annotations

from collections.abc import Iterator
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
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        # poems, sentences: one of them alone is a str, read character by character
        return iter(
            [
                ("one str", value[0]),
                ("None", None),
                ("empty", []),
                ("an int inside", [*value[:-1], 1]),
            ]
        )
    # a config (an instance, not its class): its fields as a dict are not one
    if is_dataclass(value) and not isinstance(value, type):
        return iter([("dict of its fields", asdict(value)), ("None", None)])
    return iter(())
