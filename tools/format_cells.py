"""Format the code cells of every page with ruff (line length 88).

Usage: python -m tools.format_cells [--check] [DOCS_DIR | PAGE.md ...]

Both editions hold identical code cells, and ruff is deterministic, so they
stay identical. Cell options (``:tags: [...]`` or a ``---`` YAML block) are
kept as they are. With ``--check`` nothing is written; the exit code is 1
and the cells that would change are listed.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINE_LENGTH = 88
CODE_CELL = re.compile(
    r"^(?P<fence>`{3,}|~{3,})\{code-cell\}(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=fence)[ \t]*$",
    re.M | re.S,
)


def split_options(body: str) -> tuple[str, str]:
    """(options text, code) of a code-cell body."""
    lines = body.split("\n")
    if lines[0].strip() == "---":
        end = lines.index("---", 1) + 1
    else:
        end = 0
        while end < len(lines) and re.match(r"^:[\w-]+:", lines[end]):
            end += 1
    return "\n".join(lines[:end]) + ("\n" if end else ""), "\n".join(lines[end:])


def ruff_format(code: str) -> str:
    """The cell formatted by ruff as a notebook cell.

    Notebook mode keeps a semicolon that ends a cell, Jupyter's way of not
    displaying the last value (``ax.legend();``); as a ``.py`` file ruff
    would drop it.
    """
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "id": "cell",
                "metadata": {},
                "execution_count": None,
                "outputs": [],
                "source": code,
            }
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "format",
            "--line-length",
            str(LINE_LENGTH),
            "--stdin-filename",
            "cell.ipynb",
            "-",
        ],
        input=json.dumps(notebook),
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise ValueError(result.stderr.strip())
    source = json.loads(result.stdout)["cells"][0]["source"]
    return "".join(source).rstrip("\n") + "\n"


def format_page(text: str) -> tuple[str, list[int]]:
    """Return the page with formatted cells and the numbers of the cells that changed."""
    changed, number = [], 0

    def one(m: re.Match) -> str:
        nonlocal number
        number += 1
        options, code = split_options(m.group("body"))
        new = ruff_format(code.strip("\n") + "\n")
        if new != code:
            changed.append(number)
        return f"{m.group('fence')}{{code-cell}}{m.group('info')}\n{options}{new}{m.group('fence')}"

    return CODE_CELL.sub(one, text), changed


def pages_of(paths: list[Path]) -> list[Path]:
    """The pages named: a docs folder stands for every page of both editions."""
    return [
        page
        for path in paths
        for page in (sorted(path.glob("*/*.md")) if path.is_dir() else [path])
    ]


def add_pages_argument(parser: argparse.ArgumentParser) -> None:
    """The command line's pages: a docs folder (the default) or single pages."""
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        default=[ROOT / "docs"],
        help="the docs folder (every page of both editions) or single pages",
    )


def main(argv=None) -> int:
    assert __doc__ is not None  # the module's docstring (absent only under -OO)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    add_pages_argument(parser)
    args = parser.parse_args(argv)
    dirty = 0
    pages = pages_of(args.paths)
    for path in pages:
        text = path.read_text(encoding="utf-8")
        new, changed = format_page(text)
        if changed:
            dirty += 1
            print(
                f"{path}: cells {changed} "
                + (
                    "need formatting (python -m tools.format_cells)"
                    if args.check
                    else "formatted"
                )
            )
            if not args.check:
                path.write_text(new, encoding="utf-8")
    return 1 if (args.check and dirty) else 0


if __name__ == "__main__":
    sys.exit(main())
