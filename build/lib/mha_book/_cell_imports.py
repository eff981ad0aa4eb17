"""What a notebook's code cells import from mha_book, read without running them.

The book's build keys each page on the code it runs (docs/_ext/book_cache.py,
:func:`mha_book._digest.code_digest`): these are the names that start from.
"""

from __future__ import annotations

import ast

from mha_book._digest import imports_of

__all__ = ["cell_imports"]

READS_DOCSTRINGS = ("__doc__", "getdoc", "help(")


def cell_imports(cells: list[str]) -> tuple[list[str] | None, bool]:
    """The mha_book names code cells import (None: every module, because a cell
    imports by a name made at run time) and whether they read docstrings; for a
    page of the book (docs/_ext/book_cache.py keys each page on them).

    Example:
        >>> cell_imports(["import mha_book as mb\\nmb.attention.masks.causal_mask(2, 2)",
        ...               "from mha_book.viz.diagrams import kernel_choice"])[0]
        ['mha_book', 'mha_book.attention', 'mha_book.attention.masks', 'mha_book.attention.masks.causal_mask', 'mha_book.viz.diagrams', 'mha_book.viz.diagrams.kernel_choice']
        >>> cell_imports(["import importlib\\nimportlib.import_module(f'mha_book.{x}')"])
        (None, False)
    """
    names, aliases = set(), {}
    for source in cells:
        try:  # IPython's magics and shell lines are not Python
            tree = ast.parse(
                "\n".join(
                    "" if line.lstrip().startswith(("%", "!")) else line
                    for line in source.splitlines()
                )
            )
        except SyntaxError:
            return None, True
        names |= {n for n in imports_of(tree) if n.split(".")[0] == "mha_book"}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "mha_book":
                        aliases[alias.asname or "mha_book"] = (
                            alias.asname and alias.name
                        )
            elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith(
                "import_module"
            ):
                arg = node.args[0] if node.args else None
                if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
                    return None, any(w in source for w in READS_DOCSTRINGS)
                names.add(arg.value)
        names |= _attribute_chains(tree, aliases)
    docstrings = any(word in source for source in cells for word in READS_DOCSTRINGS)
    return sorted(n for n in names if n.split(".")[0] == "mha_book"), docstrings


def _attribute_chains(tree: ast.AST, aliases: dict[str, str | None]) -> set[str]:
    """``mha_book.a.b.c`` read through an imported name, with every prefix."""
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        text = ast.unparse(node)
        head, _, tail = text.partition(".")
        if head in aliases and tail.replace(".", "").replace("_", "").isalnum():
            full = f"{aliases[head] or head}.{tail}".split(".")
            found |= {".".join(full[:i]) for i in range(1, len(full) + 1)}
    return found
