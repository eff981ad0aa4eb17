"""The checks that run before Sphinx starts: each lists problems or none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..check_api import api_problems
from ..check_frame import book_frame_problems
from ..check_pages import page_problems
from ..check_parity import parity_problems
from ..check_pointers import book_pointer_problems
from ..check_prose import prose_problems
from .common import BuildFailed

# (prefix of each problem line, the check, the rule it enforces)
GATES: list[tuple[str, Callable[[Path], list[str]], str]] = [
    (
        "parity",
        parity_problems,
        "the zh and en books must have the same pages, code cells and structure",
    ),
    (
        "prose",
        prose_problems,
        "measured numbers must be glued from the execution and zh terms must be "
        "the glossary's (tools/check_prose.py)",
    ),
    (
        "pages",
        page_problems,
        "glue calls belong in removed cells and every list of chapters must link "
        "the chapters it names (tools/check_pages.py)",
    ),
    (
        "frame",
        book_frame_problems,
        "every chapter from 10 on has an introduction, a Summary and Exercises, "
        "in both editions (tools/check_frame.py)",
    ),
    (
        "api",
        api_problems,
        "the API page documents every public module of mha_book (tools/check_api.py)",
    ),
    (
        "pointers",
        book_pointer_problems,
        "the chapters a module's docstring points to must be the chapters whose "
        "code uses it (tools/check_pointers.py)",
    ),
]


def run_gates(docs: Path) -> None:
    """Print every problem of the first gate that finds some, and stop the build."""
    for prefix, problems_of, rule in GATES:
        problems = problems_of(docs)
        for problem in problems:
            print(f"{prefix}: {problem}")
        if problems:
            raise BuildFailed(rule)
