"""Check that the zh and en books have the same pages, code and structure.

Usage: python -m tools.check_parity [DOCS_DIR]   (exit 1 and a list on mismatch)

Prose may differ between languages; nothing else may:

* code: a code cell is the body of a ```{code-cell} fence, options included;
* structure: headings (levels, order), labels, the position of every code
  cell among them, directives (admonitions, figures with their glue keys,
  included sources, exercises), math blocks and glossary entries;
* inline keys: the glue keys and citations the prose uses (as a multiset,
  since word order differs between the languages).

The first structural difference of a page is reported with both lines.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .page_model import Page, read_page

LANGS = ("zh", "en")


def pages(tree: Path) -> dict[str, Path]:
    """Map page path (relative, posix) to file for every .md under ``tree``."""
    return {p.relative_to(tree).as_posix(): p for p in sorted(tree.rglob("*.md"))}


def code_cells(page: Path) -> list[str]:
    """Return the code cells of a MyST notebook page, in order."""
    return read_page(page).code_cells


def code_problems(name: str, zh: Page, en: Page) -> list[str]:
    a, b = zh.code_cells, en.code_cells
    if len(a) != len(b):
        return [f"{name}: {len(a)} code cells in zh, {len(b)} in en"]
    return [
        f"{name}: code cell {i} differs between zh and en; {first_difference(x, y)}"
        for i, (x, y) in enumerate(zip(a, b), start=1)
        if x != y
    ]


def first_difference(zh: str, en: str) -> str:
    r"""Where two cells first differ: the line number and both lines.

    >>> first_difference("a = 1\nb = 2", "a = 1\nb = 3")
    "line 2: zh 'b = 2', en 'b = 3'"
    >>> first_difference("a = 1", "a = 1\nb = 2")
    "line 2: zh has no line, en 'b = 2'"
    """
    x, y = zh.splitlines(), en.splitlines()
    for i in range(max(len(x), len(y))):
        a = repr(x[i]) if i < len(x) else "has no line"
        b = repr(y[i]) if i < len(y) else "has no line"
        if a != b:
            return f"line {i + 1}: zh {a}, en {b}"
    return "they differ in trailing whitespace"


def structure_problems(name: str, zh: Page, en: Page) -> list[str]:
    """The first place where the two editions' structure differs, if any."""
    problems = []
    for i in range(max(len(zh.structure), len(en.structure))):
        a = zh.structure[i] if i < len(zh.structure) else None
        b = en.structure[i] if i < len(en.structure) else None
        if a is None or b is None or (a.kind, a.detail) != (b.kind, b.detail):
            problems.append(
                f"{name}: structure differs at element {i + 1}: "
                f"zh has {a.describe() if a else 'nothing more'}, "
                f"en has {b.describe() if b else 'nothing more'}"
            )
            break
    only_zh, only_en = zh.inline - en.inline, en.inline - zh.inline
    if only_zh or only_en:
        problems.append(
            f"{name}: inline glue/citation keys differ: "
            f"zh only {sorted(only_zh.elements())}, en only {sorted(only_en.elements())}"
        )
    return problems


def parity_problems(docs: Path) -> list[str]:
    """List every page that lacks its counterpart or whose code or structure differ."""
    zh, en = pages(docs / "zh"), pages(docs / "en")
    problems = [
        f"{name}: exists in docs/{'zh' if name in zh else 'en'} only"
        for name in sorted(set(zh) ^ set(en))
    ]
    for name in sorted(set(zh) & set(en)):
        a, b = read_page(zh[name]), read_page(en[name])
        problems += code_problems(name, a, b) + structure_problems(name, a, b)
    return problems


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    docs = Path(argv[0]) if argv else Path(__file__).resolve().parents[1] / "docs"
    problems = parity_problems(docs)
    for p in problems:
        print(f"parity: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
