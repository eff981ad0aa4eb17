"""Sphinx extension: the API page documents every public module of mha_book.

The page does not list modules by hand. Each section holds one directive,

.. code-block:: rst

    .. book-api:: mha_book.attention

which documents the package and every public module below it (a module whose
dotted name has no part starting with ``_``), read from the package's files
(:func:`tools.check_api.public_modules`). ``:top:`` documents a package and
only the plain modules directly in it (``mha_book`` itself, ``mha_book.book``,
``mha_book.seeds``). A package shows its docstring, and each module its
docstring and members: an object is documented once, where it is defined,
and a name a package exports lazily (``mha_book.bench.kernel_times``) links
there (``book_refs``). ``tools/check_api.py``, a gate before every build,
checks that the page's directives cover every public module.
"""

from __future__ import annotations

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from tools.check_api import PACKAGE_DIR, documented, public_modules


class BookApi(SphinxDirective):
    """``.. book-api:: package``: automodule for the package and its modules."""

    required_arguments = 1
    option_spec = {"top": directives.flag}

    def run(self) -> list[nodes.Node]:
        package = self.arguments[0]
        try:
            mods = documented(package, "top" in self.options)
        except ValueError as err:
            raise self.error(str(err)) from None
        lines = []
        for name, members in mods:
            lines.append(f".. automodule:: {name}")
            if members:
                lines.append("   :members:")
            lines.append("")
        self.env.note_dependency(str(PACKAGE_DIR / "__init__.py"))
        node = nodes.container()
        self.state.nested_parse(StringList(lines, self.get_source_info()[0]), 0, node)
        self.env.book_api_modules = tuple(public_modules())
        return node.children


def _outdated(app, env, added, changed, removed) -> list[str]:
    """Read the API pages again when the package gained or lost a module."""
    if getattr(env, "book_api_modules", None) in (None, tuple(public_modules())):
        return []
    return [d for d in env.found_docs if d == "api" or d.startswith("api-")]


def setup(app):
    app.add_directive("book-api", BookApi)
    app.connect("env-get-outdated", _outdated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
