"""What a result computed with mha_book depends on: the package code it imports.

The book's build keys each page's stored outputs on a digest of the code that
can change them, and :func:`mha_book.lm.artifacts.cached` keys each stored
result the same way: the modules a page or a function imports, followed
through the package's own imports (importing ``a.b.c`` also runs ``a`` and
``a.b``), each read as its syntax tree, so comments and formatting change
nothing, and docstrings change nothing unless asked for; and, where one of
those modules reads the package's own files (through importlib.resources),
the package's data files. A module outside that set is not in the digest:
editing it executes nothing again. The package's names load lazily
(:mod:`mha_book._lazy`), so ``import mha_book`` really does import only the
package itself, and this reading of the imports is what runs.

Hand-written rather than taken from a library: the standard library's
``modulefinder`` runs on bytecode and would follow torch; this needs only
mha_book's own imports, read from the syntax tree.
"""

from __future__ import annotations

import ast
import functools
import hashlib
from pathlib import Path

__all__ = [
    "ROOT",
    "module_files",
    "imports_of",
    "resolve",
    "closure",
    "code_digest",
]

ROOT = Path(__file__).resolve().parent  # mha_book/
PACKAGE = ROOT.name


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the package under ``root``: dotted name -> file.

    Example:
        >>> module_files()["mha_book.attention.masks"].name
        'masks.py'
    """
    files = {}
    for path in sorted(root.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        parts = path.relative_to(root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        files[name] = path
    return files


def _nodes(tree: ast.AST):
    """Every node of ``tree``, less the bodies of ``if TYPE_CHECKING:`` blocks
    (imports a type checker reads and the program never runs)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo.extend(node.orelse)
            continue
        todo.extend(ast.iter_child_nodes(node))


def imports_of(tree: ast.AST, module: str = "", is_package: bool = False) -> set[str]:
    """Every name an import in ``tree`` may load: ``import a.b`` gives ``a.b``;
    ``from a import b`` gives ``a`` and ``a.b`` (``b`` may be a submodule).

    ``module`` (and whether it is a package) resolves relative imports.

    Example:
        >>> tree = ast.parse("from . import heads\\nimport torch")
        >>> sorted(imports_of(tree, "mha_book.attention.mha"))
        ['mha_book.attention', 'mha_book.attention.heads', 'torch']
    """
    found = set()
    for node in _nodes(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = module.split(".")
                package = package if is_package else package[:-1]
                package = package[: len(package) - node.level + 1]
                base = ".".join(package + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _stamp(root: Path) -> tuple:
    """Every file under ``root`` with its size and time of change: the caches
    below are keyed on it, so an edited file is read again."""
    return tuple(
        (path.as_posix(), (s := path.stat()).st_mtime_ns, s.st_size)
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    )


def _graph(root: Path) -> dict[str, set[str]]:
    """Each module of the package -> the package modules it imports."""
    return _graph_at(root, _stamp(root))


@functools.cache
def _graph_at(root: Path, stamp: tuple) -> dict[str, set[str]]:
    files = module_files(root)
    graph = {}
    for name, path in files.items():
        tree = ast.parse(path.read_bytes(), str(path))
        found = resolve(imports_of(tree, name, path.name == "__init__.py"), root)
        graph[name] = {n for n in found if n != name}
    return graph


def exports_of(init: Path) -> dict[str, str]:
    """A package's lazy names (its ``_EXPORTS``, :mod:`mha_book._lazy`): name ->
    submodule, relative to the package."""
    for node in ast.parse(init.read_bytes(), str(init)).body:
        if (
            isinstance(node, ast.Assign)
            and any(
                isinstance(t, ast.Name) and t.id == "_EXPORTS" for t in node.targets
            )
            and isinstance(node.value, ast.Dict)
        ):
            return {
                k.value: v.value
                for k, v in zip(node.value.keys, node.value.values)
                if isinstance(k, ast.Constant)
                and isinstance(k.value, str)
                and isinstance(v, ast.Constant)
                and isinstance(v.value, str)
            }
    return {}


def resolve(names, root: Path = ROOT, exports=None) -> set[str]:
    """The package modules among ``names``, with a lazy name read as the module
    that defines it (``mha_book.MultiHeadAttention`` -> ``mha_book.attention.mha``).

    ``exports``: each package's lazy names (package -> name -> submodule);
    default: read from the packages' ``_EXPORTS`` (:func:`exports_of`).

    Example:
        >>> sorted(resolve(["torch", "mha_book", "mha_book.causal_mask"]))
        ['mha_book', 'mha_book.attention.masks']
    """
    files, found = module_files(root), set()
    for name in names:
        if name in files:
            found.add(name)
            continue
        package, _, attribute = name.rpartition(".")
        if exports is not None:
            module = exports.get(package, {}).get(attribute)
        elif package in files and files[package].name == "__init__.py":
            module = exports_of(files[package]).get(attribute)
        else:
            module = None
        if module is not None:
            found.add(f"{package}.{module}")
    return found


def closure(modules, root: Path = ROOT, graph=None) -> set[str]:
    """The package modules that importing ``modules`` runs.

    ``graph``: module -> the package modules it imports; default: read from
    the files under ``root``.

    Example:
        >>> sorted(closure(["mha_book.attention.masks"]))[:3]
        ['mha_book', 'mha_book._checks', 'mha_book._lazy']
    """
    graph, seen = graph if graph is not None else _graph(root), set()
    todo = list(modules)
    while todo:
        name = todo.pop()
        if name in seen or name not in graph:
            continue
        seen.add(name)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]  # its packages
        todo += sorted(graph[name])
    return seen


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(
            node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
        ):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                node.body = body[1:] or [ast.Pass()]
    return tree


# What a module runs, less what only names things for others: a package's list of
# lazy names (a page that uses one is keyed on its module), ``__all__`` (star
# imports, which the book does not use, and the API page) and what only a type
# checker reads.
NAMES_ONLY = ("_EXPORTS", "__all__")


def _runs(node: ast.stmt) -> bool:
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return not any(isinstance(t, ast.Name) and t.id in NAMES_ONLY for t in targets)
    return not (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test))


def _code(path: Path, docstrings: bool) -> str:
    """A module as its syntax tree: no comments, no layout, no line numbers."""
    s = path.stat()
    return _code_at(path, s.st_mtime_ns, s.st_size, docstrings)


@functools.cache
def _code_at(path: Path, mtime_ns: int, size: int, docstrings: bool) -> str:
    tree = ast.parse(path.read_bytes(), str(path))
    tree.body = [node for node in tree.body if _runs(node)]
    return ast.dump(tree if docstrings else _without_docstrings(tree))


def _data(root: Path) -> str:
    """SHA-256 of the package's files that are not Python (texts, poems, the
    explorer's script and style)."""
    return _data_at(root, _stamp(root))


@functools.cache
def _data_at(root: Path, stamp: tuple) -> str:
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if (
            path.is_file()
            and path.suffix not in (".py", ".pyc")
            and "__pycache__" not in path.parts
        ):
            h.update(path.relative_to(root).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def code_digest(modules=None, *, docstrings: bool = False, root: Path = ROOT) -> str:
    """SHA-256 of the code that importing ``modules`` runs (and of the data files,
    if that code reads them).

    Args:
        modules: Dotted module names; None for every module of the package.
        docstrings: Whether docstrings count (for a page that prints them).
        root: The package folder (a copy of it, in the tests).

    Example:
        >>> code_digest(["mha_book.attention.masks"]) == code_digest(
        ...     ["mha_book.attention.masks", "mha_book._checks"])
        True
        >>> code_digest(["mha_book.attention.masks"]) == code_digest()
        False
    """
    names = module_files(root) if modules is None else closure(modules, root)
    return modules_digest(names, root, docstrings=docstrings)


def modules_digest(names, root: Path = ROOT, *, docstrings: bool = False) -> str:
    """SHA-256 of exactly these modules (no imports followed), and of the data
    files if one of them reads them."""
    files = module_files(root)
    h = hashlib.sha256()
    for name in sorted(names):
        h.update(name.encode() + b"\0" + _code(files[name], docstrings).encode())
    if any(_reads_files(files[name]) for name in names):
        h.update(_data(root).encode())
    return h.hexdigest()


def _reads_files(path: Path) -> bool:
    """Whether a module opens the package's own files (texts, poems, the
    explorer's script): they are read through importlib.resources."""
    s = path.stat()
    return _reads_files_at(path, s.st_mtime_ns, s.st_size)


@functools.cache
def _reads_files_at(path: Path, mtime_ns: int, size: int) -> bool:
    return "importlib.resources" in imports_of(ast.parse(path.read_bytes()))
