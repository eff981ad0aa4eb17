"""Cases of three further kinds, each a whole call rather than one argument bent.

- ``pair``: two arguments that must agree (batch sizes, lengths, heads,
  dtypes, devices, a cache and its module) varied together so they disagree.
  The goal is a named error that names one of them; a result is ``silently
  wrong`` (the mismatch was accepted).
- ``shared``: one object shared or reused (a cache given to two modules, a
  block freed while held, a model's train/eval mode, aliased inputs, a call
  repeated). The goal is a named error, or the result of the unshared call.
- ``oracle``: a result against an independent computation (brute force, a
  definition, PyTorch's own module). A difference beyond tolerance is
  ``silently wrong``.

A :class:`Check`'s ``run`` returns None when the outcome is right and a short
description of the wrong otherwise; :func:`run_check` sorts it like
:func:`~tools.fault_review.outcomes.run_case` sorts a bent argument.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import matplotlib.pyplot as plt
import torch

from tools.fault_review.outcomes import Outcome, names_argument

KINDS = {
    "pair": "pairs that must agree",
    "shared": "objects shared or reused",
    "oracle": "results against an independent computation",
}


@dataclass
class Check:
    """One case: the entry point, the kind, what is done, and how it is run.

    ``names``: the arguments an error may name (any one of them); ``wrong``:
    the outcome when ``run`` returns a description.
    """

    api: str
    kind: str
    name: str
    run: Callable[[], str | None]
    names: tuple[str, ...] = ()
    wrong: str = "silently wrong"


def run_check(check: Check) -> Outcome:
    """Run one case and sort its outcome."""
    assert check.kind in KINDS, check.kind
    where = (check.api, check.kind, check.name)
    try:
        wrong = check.run()
    except (ValueError, TypeError) as err:
        named = bool(check.names) and names_argument(str(err), check.names)
        kind = "named error" if named else "unnamed error"
        return Outcome(*where, kind, f"{type(err).__name__}: {err}", case=check.kind)
    except Exception as err:  # noqa: BLE001  (sorting every outcome is the point)
        return Outcome(*where, "other exception", repr(err)[:200], case=check.kind)
    finally:
        plt.close("all")
    if wrong is None:
        return Outcome(*where, "agrees", case=check.kind)
    return Outcome(*where, check.wrong, wrong, case=check.kind)


def refused(call: Callable[[], object]) -> Callable[[], str | None]:
    """A ``run`` for a pair: the call must raise; a result is the wrong."""

    def run() -> str | None:
        call()
        return "accepted the disagreeing arguments"

    return run


def differs(got: object, want: object, atol: float = 1e-5) -> str | None:
    """None if ``got`` equals ``want`` (tensors within ``atol``), else how."""
    if isinstance(want, (tuple, list)):
        if not isinstance(got, (tuple, list)) or len(got) != len(want):
            return f"expected {len(want)} items, got {got!r}"[:200]
        for g, w in zip(got, want):
            if (wrong := differs(g, w, atol)) is not None:
                return wrong
        return None
    if isinstance(want, torch.Tensor):
        if not isinstance(got, torch.Tensor) or got.shape != want.shape:
            shape = getattr(got, "shape", type(got).__name__)
            return f"expected shape {tuple(want.shape)}, got {shape}"
        if got.dtype == torch.bool or want.dtype == torch.bool:
            diff = (got != want).sum().item()
            return None if diff == 0 else f"{diff} entries differ"
        gap = (got.double() - want.double()).abs().nan_to_num(float("inf"))
        worst = gap.max().item() if gap.numel() else 0.0
        same_nan = torch.equal(got.isnan(), want.isnan())
        return None if worst <= atol and same_nan else f"max |diff| = {worst:.2e}"
    if isinstance(want, float) and isinstance(got, (int, float)):
        return None if abs(got - want) <= atol else f"expected {want}, got {got}"
    return None if got == want else f"expected {want!r}, got {got!r}"[:200]
