"""What one bad input to one entry point led to, and how it is classified."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import matplotlib.pyplot as plt
import torch

DEFECTS = (
    "unnamed error",
    "other exception",
    "NaN from finite input",
    "silently changed weights",
    "silently wrong",
    "silently changed mode",
)


@dataclass
class Outcome:
    api: str
    arg: str
    variant: str
    kind: str
    detail: str = ""
    case: str = "one argument"  # or a kind of tools.fault_review.checks


@dataclass
class Api:
    """A public callable, the arguments of a valid call, and what to bend."""

    name: str
    call: Callable[..., object]
    baseline: Callable[[], dict[str, object]]  # fresh valid arguments per call
    names: dict[str, tuple[str, ...]] | None = None  # argument -> names it may use


def _nan_in(result: object) -> bool:
    tensors = result if isinstance(result, (tuple, list)) else (result,)
    return any(
        isinstance(t, torch.Tensor) and t.is_floating_point() and t.isnan().any()
        for t in tensors
    )


def _finite(value: object) -> bool:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return bool(value.isfinite().all())
    if isinstance(value, float):
        return value == value and abs(value) != float("inf")
    return True


def names_argument(message: str, names: tuple[str, ...]) -> bool:
    return any(re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", message) for n in names)


def run_case(api: Api, arg: str, variant: str, value: object) -> Outcome:
    kwargs = api.baseline()
    kwargs[arg] = value
    names = (api.names or {}).get(arg, (arg,))
    try:
        result = api.call(**kwargs)
    # FileNotFoundError is Python's own error for a missing file: named if it
    # names the file
    except (ValueError, TypeError, FileNotFoundError) as err:
        message = str(err)
        kind = "named error" if names_argument(message, names) else "unnamed error"
        return Outcome(api.name, arg, variant, kind, f"{type(err).__name__}: {message}")
    except Exception as err:  # noqa: BLE001  (sorting every outcome is the point)
        return Outcome(api.name, arg, variant, "other exception", repr(err)[:200])
    finally:
        plt.close("all")  # plot_attention's figures
    if _nan_in(result):
        finite = all(_finite(v) for v in kwargs.values())
        kind = "NaN from finite input" if finite else "NaN from non-finite input"
        return Outcome(api.name, arg, variant, kind)
    return Outcome(api.name, arg, variant, "result")
