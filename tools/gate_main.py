"""The command line every pre-build gate shares: ``python -m tools.check_X [DOCS]``.

Prints each problem and their count, and exits 1 when there is any.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def gate_main(problems_of: Callable[[Path], list[str]], argv: list[str]) -> int:
    """Run a gate on ``argv[1]`` (default: the book's docs/) and report.

    >>> gate_main(lambda docs: [f"{docs.name}: bad"], ["check", "/tmp/docs"])
    docs: bad
    1 problem(s)
    1
    """
    docs = Path(argv[1]) if len(argv) > 1 else DOCS
    problems = problems_of(docs)
    for problem in problems:
        print(problem)
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0
