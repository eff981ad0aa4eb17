"""``python -m tools.fault_review``: the counts per class and every defect."""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from tools.fault_review.checks import KINDS
from tools.fault_review.outcomes import DEFECTS, Outcome
from tools.fault_review.review import run_all


def kind_lines(outcomes: list[Outcome]) -> list[str]:
    """One line per kind of whole-call case: cases, entry points, outcomes."""
    lines = []
    for case, title in KINDS.items():
        of_kind = [o for o in outcomes if o.case == case]
        split = Counter(o.kind for o in of_kind).most_common()
        outcome = ", ".join(f"{n} {kind}" for kind, n in split)
        apis = len({o.api for o in of_kind})
        lines.append(f"{title}: {len(of_kind)} cases, {apis} entry points ({outcome})")
    return lines


def main(argv: list[str] | None = None) -> int:
    assert __package__  # run as part of tools.fault_review
    doc = sys.modules[__package__].__doc__
    assert doc is not None  # the package's docstring (absent only under -OO)
    summary = doc.splitlines()[0]  # the package's
    parser = argparse.ArgumentParser(
        prog="python -m tools.fault_review", description=summary
    )
    parser.add_argument("--all", action="store_true", help="list every outcome")
    parser.add_argument(
        "--flips",
        type=int,
        default=64,
        help="checkpoint bytes to flip, spread evenly (0: every byte, ~20 s)",
    )
    args = parser.parse_args(argv)
    outcomes = run_all(args.flips)
    counts = Counter(o.kind for o in outcomes)
    apis = len({o.api for o in outcomes})
    print(f"{len(outcomes)} inputs to {apis} public entry points")
    for kind, n in counts.most_common():
        print(f"  {n:4d}  {kind}")
    for line in kind_lines(outcomes):
        print(line)
    shown = outcomes if args.all else [o for o in outcomes if o.kind in DEFECTS]
    for o in shown:
        print(f"{o.kind:26s} {o.api}({o.arg}={o.variant}) {o.detail}")
    return 1 if any(o.kind in DEFECTS for o in outcomes) else 0
