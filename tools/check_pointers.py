"""Gate: the chapters a module's docstring points to are the chapters that use it.

Usage: python -m tools.check_pointers [DOCS_DIR]   (exit 1 and a list of problems)

A module of mha_book says in its docstring where the book uses it ("Taught in
chapter 13-mqa-gqa-kv-cache", "(chapters 10, 14 and 15)"). The build knows
which modules each chapter's code cells import (``mha_book._cell_imports``,
the same reading that keys each page's cache, ``docs/_ext/book_cache.py``),
so the pointers are checked against it:

* every chapter a module docstring says it is taught or used in ("Taught in
  chapter NN") runs the module: its cells import it, or import a module of
  the package that imports it;
* a list in parentheses, "(chapter NN)" or "(chapters NN, MM and KK)", is
  complete: it names every chapter whose cells import the module itself (a
  chapter that imports modules to print their docstrings, as chapter 09
  does, shows them rather than uses them).

Other mentions of a chapter ("the block of chapter 10's causal decoder") are
references to its content, not pointers.

In a package's docstring, a pointer belongs to the module named last before
it (``:mod:`~mha_book.viz.explorer```) in the same paragraph or list item,
else to the package.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from .gate_main import gate_main

ROOT = Path(__file__).resolve().parents[1]
CHAPTER_PAGE = re.compile(r"^(\d\d)-[\w-]+\.md$")
# "chapter 05", "chapters 10, 14 and 15", "chapter 16-cross-attention", "chapter 10's"
POINTER = re.compile(
    r"\bchapters?\s+(\d{1,2}(?:-[a-z-]+)?(?:(?:,\s*|,?\s+and\s+)\d{1,2}(?:-[a-z-]+)?)*)"
)
_NUMBERS = r"\d{1,2}(?:-[a-z-]+)?(?:(?:,\s*|,?\s+and\s+)\d{1,2}(?:-[a-z-]+)?)*"
# A list of the chapters that use a module: "(chapter 05)", "(chapters 10, 14 and 15)".
LIST = re.compile(rf"\(chapters?\s+{_NUMBERS}\)")
# A claim that a chapter uses the module: "Taught in chapter 13-...", "used in chapter 17".
TAUGHT = re.compile(
    rf"\b(?:[Tt]aught|[Uu]sed|[Dd]iscussed)\s+(?:at the start of |in |by )?chapters?\s+{_NUMBERS}"
)
MODULE_ROLE = re.compile(r":mod:`~?([\w.]+)`")


def chapters_in(text: str) -> set[int]:
    """The chapter numbers a piece of text names.

    >>> sorted(chapters_in("Taught in chapter 05-verification; chapters 10, 14 and 15."))
    [5, 10, 14, 15]
    """
    found = set()
    for m in POINTER.finditer(text):
        found |= {int(n) for n in re.findall(r"(?<![\w-])(\d{1,2})\b", m.group(1))}
    return found


def pointers(module: str, doc: str) -> list[tuple[str, str, bool]]:
    """Each chapter pointer of a module docstring: (the module it is about, its
    text, whether it is a complete list in parentheses). Other mentions of a
    chapter ("the block of chapter 10's decoder") are not pointers.

    >>> pointers("mha_book.viz", "- :mod:`~mha_book.viz.explorer`: widget (chapters 11 and 16).")
    [('mha_book.viz.explorer', '(chapters 11 and 16)', True)]
    >>> pointers("mha_book.lm.poetry", "Taught in chapter 15-tang-poems. As chapter 10 did.")
    [('mha_book.lm.poetry', 'Taught in chapter 15-tang-poems', False)]
    """
    out = []
    for item in re.split(r"\n\s*\n|\n(?=\s*- )", doc):
        item = re.sub(r"\s+", " ", item)
        found = [(m, True) for m in LIST.finditer(item)]
        found += [(m, False) for m in TAUGHT.finditer(item)]
        for m, is_list in sorted(found, key=lambda f: f[0].start()):
            mods = MODULE_ROLE.findall(item[: m.start()])
            entry = (mods[-1] if mods else module, m.group(0), is_list)
            if entry not in out:
                out.append(entry)
    return out


def _code_cells(path: Path) -> list[str]:
    """The code cells of a MyST notebook page, read as the build reads them
    (``docs/_ext/book_cache.py``)."""
    from myst_nb.core.read import is_myst_markdown_notebook, read_myst_markdown_notebook

    text = path.read_text(encoding="utf-8")
    if not is_myst_markdown_notebook(text):
        return []
    cells = read_myst_markdown_notebook(text).cells
    return [c.source for c in cells if c.cell_type == "code"]


def _page_modules(docs: Path) -> tuple[dict[int, set[str]], set[int]]:
    """Chapter -> the package modules its code cells import (both editions:
    their code cells are the same); and the chapters that print modules'
    docstrings."""
    from mha_book._cell_imports import cell_imports
    from mha_book._digest import module_files, resolve

    uses: dict[int, set[str]] = {}
    shows: set[int] = set()
    for lang in ("en", "zh"):
        for path in sorted((docs / lang).glob("*.md")):
            m = CHAPTER_PAGE.match(path.name)
            if not m:
                continue
            names, reads_docstrings = cell_imports(_code_cells(path))
            found = resolve(names) if names is not None else set(module_files())
            number = int(m.group(1))
            uses.setdefault(number, set()).update(found)
            if reads_docstrings:  # it imports modules to print their docstrings
                shows.add(number)
    return uses, shows


def users(docs: Path) -> tuple[dict[str, set[int]], dict[str, set[int]]]:
    """Module -> the chapters that import it; and -> the chapters that run it
    (an import of theirs imports it)."""
    from mha_book._digest import closure

    direct: dict[str, set[int]] = {}
    runs: dict[str, set[int]] = {}
    uses, shows = _page_modules(docs)
    for chapter, modules in uses.items():
        for module in modules if chapter not in shows else ():
            direct.setdefault(module, set()).add(chapter)
        for module in closure(modules):
            runs.setdefault(module, set()).add(chapter)
    return direct, runs


def _numbers(chapters: set[int]) -> str:
    names = [f"{c:02d}" for c in sorted(chapters)]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def book_pointer_problems(docs: Path) -> list[str]:
    """The gate before a build: :func:`pointer_problems` for the book; a scratch
    book of the tests (its own pages, whose chapters the docstrings do not
    name) has nothing to check."""
    from .check_pages import written_from_map

    return pointer_problems(docs) if written_from_map(docs) else []


def pointer_problems(docs: Path, root: Path = ROOT / "mha_book") -> list[str]:
    """Every chapter pointer of a module docstring that the pages contradict."""
    from mha_book._digest import module_files

    direct, runs = users(docs)
    chapters = set(_page_modules(docs)[0])
    if not chapters:
        return []  # a book without chapters (a scratch book in the tests)
    problems = []
    for module, path in sorted(module_files(root).items()):
        doc = ast.get_docstring(ast.parse(path.read_bytes())) or ""
        where = f"{path.relative_to(root.parent)}"
        for about, text, is_list in pointers(module, doc):
            named = chapters_in(text)
            wrong = {
                c for c in named if c in chapters and c not in runs.get(about, set())
            }
            unknown = named - chapters
            missing = direct.get(about, set()) - named if is_list else set()
            if wrong:
                problems.append(
                    f"{where}: {text!r} names chapter {_numbers(wrong)}, whose code "
                    f"never runs {about}"
                )
            if unknown:
                problems.append(f"{where}: {text!r} names no chapter of the book")
            if missing:
                problems.append(
                    f"{where}: {text!r} leaves out chapter {_numbers(missing)}, "
                    f"whose code imports {about}; the chapters that import it: "
                    f"{_numbers(direct[about])}"
                )
    return problems


def main(argv: list[str]) -> int:
    return gate_main(pointer_problems, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
