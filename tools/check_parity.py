"""Check that the zh and en books have the same pages and the same code cells.

Usage: python tools/check_parity.py [DOCS_DIR]   (exit 1 and a list on mismatch)

Prose may differ between languages; code must not. A code cell is the body of
a ```{code-cell} fence, including its options (tags and so on).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

LANGS = ("zh", "en")
CODE_CELL = re.compile(r"^(`{3,}|~{3,})\{code-cell\}[^\n]*\n(.*?)^\1[ \t]*$", re.M | re.S)


def pages(tree: Path) -> dict[str, Path]:
    """Map page path (relative, posix) to file for every .md under ``tree``."""
    return {p.relative_to(tree).as_posix(): p for p in sorted(tree.rglob("*.md"))}


def code_cells(page: Path) -> list[str]:
    """Return the code cells of a MyST notebook page, in order."""
    return [m.group(2).strip() for m in CODE_CELL.finditer(page.read_text(encoding="utf-8"))]


def parity_problems(docs: Path) -> list[str]:
    """List every page that lacks its counterpart or whose code cells differ."""
    zh, en = pages(docs / "zh"), pages(docs / "en")
    problems = [
        f"{name}: exists in docs/{'zh' if name in zh else 'en'} only"
        for name in sorted(set(zh) ^ set(en))
    ]
    for name in sorted(set(zh) & set(en)):
        a, b = code_cells(zh[name]), code_cells(en[name])
        if len(a) != len(b):
            problems.append(f"{name}: {len(a)} code cells in zh, {len(b)} in en")
            continue
        for i, (x, y) in enumerate(zip(a, b), start=1):
            if x != y:
                problems.append(f"{name}: code cell {i} differs between zh and en")
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
