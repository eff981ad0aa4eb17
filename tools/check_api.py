"""Gate: the API pages document every public module of mha_book.

Usage: python -m tools.check_api [DOCS_DIR]   (exit 1 and a list of problems)

The API pages (``docs/<lang>/api.md`` and ``api-*.md``) list no modules by
hand: each section holds a ``.. book-api:: mha_book.<package>`` directive
(``docs/_ext/book_api.py``), which documents the package and every public
module below it, read from the package's files (:func:`public_modules`);
``:top:`` documents a package and only the plain modules directly in it. This
gate checks that the directives of each edition's pages cover every public
module, so a new subpackage without a section fails the build; a new module
inside a documented package appears by itself.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from .gate_main import gate_main

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIR = ROOT / "mha_book"
LANGS = ("zh", "en")
# The directives of the API page: automodule (by hand) and book-api (computed).
DIRECTIVE = re.compile(
    r"^\s*(?:\.\.\s+|```\{)(automodule|book-api)(?:::|\})\s+([\w.]+)\s*$"
)


def public_modules(root: Path = PACKAGE_DIR) -> list[str]:
    """Every public module of the package, sorted: no part of its name private.

    >>> mods = public_modules()
    >>> "mha_book.attention.masks" in mods, "mha_book._digest" in mods
    (True, False)
    """
    from mha_book._digest import module_files

    return sorted(
        name
        for name in module_files(root)
        if not any(part.startswith("_") for part in name.split("."))
    )


def _is_package(name: str, root: Path) -> bool:
    from mha_book._digest import module_files

    return module_files(root)[name].name == "__init__.py"


def documented(package: str, top: bool = False, root: Path = PACKAGE_DIR):
    """The modules ``.. book-api:: package`` documents, in order, each with
    whether its members are documented too.

    >>> documented("mha_book", top=True)[:2]
    [('mha_book', False), ('mha_book.book', True)]
    >>> documented("mha_book.bench")[:2]
    [('mha_book.bench', False), ('mha_book.bench.cli', True)]
    """
    mods = public_modules(root)
    if package not in mods:
        raise ValueError(f"book-api: {package!r} is not a public module of mha_book")
    below = [m for m in mods if m.startswith(package + ".")]
    if top:
        below = [
            m
            for m in below
            if "." not in m[len(package) + 1 :] and not _is_package(m, root)
        ]
    # A package shows its docstring; each object is documented once, in the
    # module that defines it (a lazy name, such as mha_book.bench.kernel_times,
    # links there: book_refs).
    return [(package, False)] + [(m, not _is_package(m, root)) for m in below]


def page_modules(text: str, root: Path = PACKAGE_DIR) -> set[str]:
    """The modules an API page's text documents, through its directives.

    >>> sorted(page_modules(".. automodule:: mha_book.book\\n"))
    ['mha_book.book']
    """
    found, lines = set(), text.splitlines()
    for i, line in enumerate(lines):
        m = DIRECTIVE.match(line)
        if not m:
            continue
        kind, name = m.groups()
        if kind == "automodule":
            found.add(name)
            continue
        top = any(
            re.match(r"^\s*:top:\s*$", following) for following in lines[i + 1 : i + 4]
        )
        try:
            found |= {mod for mod, _ in documented(name, top, root)}
        except ValueError:
            continue  # the build reports it
    return found


def api_pages(docs: Path, lang: str) -> list[Path]:
    """An edition's API pages: ``api.md`` and any ``api-<part>.md`` beside it.

    >>> [p.name for p in api_pages(ROOT / "docs", "en")]
    ['api.md', 'api-experiments.md']
    """
    return sorted((docs / lang).glob("api.md")) + sorted((docs / lang).glob("api-*.md"))


def api_problems(docs: Path, root: Path = PACKAGE_DIR) -> list[str]:
    """Every public module an edition's API pages leave out, and every module
    one of them names that is not one.

    >>> api_problems(ROOT / "docs")
    []
    """
    problems = []
    modules = set(public_modules(root))
    if not any((docs / lang / "api.md").exists() for lang in LANGS):
        return []  # a book without an API page (a scratch book in the tests)
    for lang in LANGS:
        if not (docs / lang / "api.md").exists():
            problems.append(f"{lang}/api.md: missing")
            continue
        shown = set()
        for page in api_pages(docs, lang):
            named = page_modules(page.read_text(encoding="utf-8"), root)
            problems += [
                f"{lang}/{page.name}: {m} is not a public module of mha_book"
                for m in sorted(named - modules)
            ]
            shown |= named
        problems += [
            f"{lang}/api*.md: {m} is not documented (add a section with "
            f"'.. book-api:: {m.rsplit('.', 1)[0] if m.count('.') > 1 else m}')"
            for m in sorted(modules - shown)
        ]
    return problems


def main(argv: list[str]) -> int:
    return gate_main(api_problems, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
