"""Lint the code cells of every page with ruff, as one program per page.

Usage: python -m tools.lint_cells [DOCS_DIR | PAGE.md ...]

A page's cells run in one kernel, top to bottom, so they are checked as one
script (a name defined in cell 1 is known in cell 5) with the rules of
``pyproject.toml``, except those that do not fit a notebook: imports in a
later cell (E402), a bare expression as a cell's value (B018) and the semicolon
that keeps a cell's last value from being shown (E703). Each
problem is reported at its line in the page. Exit 1 if any is found.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from .format_cells import (
    CODE_CELL,
    add_pages_argument,
    pages_of,
    split_options,
)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_IGNORES = ["E402", "B018", "E703"]


def page_script(text: str) -> tuple[str, list[int]]:
    """The page's cells joined into one script, and each script line's page line."""
    lines, where = [], []
    for m in CODE_CELL.finditer(text):
        options, code = split_options(m.group("body"))
        first = text[: m.start("body")].count("\n") + 1 + options.count("\n")
        for i, line in enumerate(code.rstrip("\n").split("\n")):
            lines.append(line)
            where.append(first + i)
        lines.append("")  # cells end a statement
        where.append(where[-1] if where else 1)
    return "\n".join(lines) + "\n", where


def lint_page(path: Path) -> list[str]:
    """``page:line: CODE message`` for every ruff problem in the page's cells."""
    script, where = page_script(path.read_text(encoding="utf-8"))
    if not script.strip():
        return []
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--output-format",
            "json",
            "--extend-ignore",
            ",".join(NOTEBOOK_IGNORES),
            "--stdin-filename",  # per-file-ignores match docs/<lang>/<page>.py
            f"docs/{path.parent.name}/{path.stem}.py",
            "-",
        ],
        input=script,
        capture_output=True,
        text=True,
        cwd=ROOT,  # pyproject.toml's rules
        check=False,
    )
    if result.returncode not in (0, 1):
        raise RuntimeError(result.stderr.strip())
    shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return [
        f"{shown}:{where[d['location']['row'] - 1]}: {d['code']} {d['message']}"
        for d in json.loads(result.stdout or "[]")
    ]


def main(argv=None) -> int:
    assert __doc__ is not None  # the module's docstring (absent only under -OO)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_pages_argument(parser)
    args = parser.parse_args(argv)
    pages = [page.resolve() for page in pages_of(args.paths)]
    problems = [problem for page in pages for problem in lint_page(page)]
    for problem in problems:
        print(problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
