"""How often a commit executes every page again: the last N commits replayed
through the build's page keys, today's and the old whole-package key.

Usage: python -m tools.replay_keys [N]   (default 100; prints a table)

Each commit and its parent are read from git (``git archive``, no checkout).
Every page of both editions gets the key the build gives it
(docs/_ext/book_cache.py): the shared environment
(tools.build.environment_key.environment_digest: the pins of what the kernels
import, the kernels' environment file where the tree has one) and the
digest of the package code the page imports (mha_book._digest: followed
through the package's imports, without comments or docstrings). A commit
executes a page again when the page's key differs from the parent's.

Older trees kept the key's own code in tools/build/kernel_env.py: it is read
as if split as today (only what today's kernel_env.py defines is keyed).
Older trees import their names eagerly in ``mha_book/__init__.py``; they are
read as if those names were lazy (the names' modules taken from the eager
imports), so that each commit is judged by today's keying rather than by the
layout it had. The old key, for comparison: any change to a file of
mha_book/, requirements/, pyproject.toml or tools/build_book.py executed every
page.
"""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from mha_book import _digest
from mha_book._cell_imports import cell_imports

from .build.environment_key import environment_digest
from .page_model import read_page

ROOT = Path(__file__).resolve().parents[1]
KERNEL_ENV = ROOT / "tools/build/kernel_env.py"
OLD_KEY = ("mha_book/", "requirements/", "pyproject.toml", "tools/build_book.py")


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout


def extract(rev: str, dest: Path) -> None:
    """The files of ``rev`` the keys read, into ``dest``."""
    paths = [
        p
        for p in ("mha_book", "docs", "requirements", "tools", "pyproject.toml")
        if git("ls-tree", rev, p)
    ]
    data = subprocess.run(
        ["git", "archive", rev, *paths], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")


def exports(init: Path, package: str) -> dict[str, str]:
    """A package's names -> their submodules: ``_EXPORTS``, or its eager imports."""
    found = _digest.exports_of(init)
    if found:
        return found
    for node in ast.parse(init.read_bytes()).body:
        module = node.module or "" if isinstance(node, ast.ImportFrom) else ""
        if isinstance(node, ast.ImportFrom) and module.startswith(package + "."):
            for alias in node.names:
                found[alias.asname or alias.name] = module[len(package) + 1 :]
    return found


def make_lazy(init: Path, package: str) -> None:
    """Drop an eager ``__init__``'s imports of its own names from the extracted
    copy: in today's lazy form they are ``_EXPORTS``, which no key reads."""
    tree = ast.parse(init.read_bytes())
    tree.body = [
        node
        for node in tree.body
        if not (
            isinstance(node, ast.ImportFrom)
            and (node.module or "").startswith(package + ".")
        )
    ]
    init.write_text(ast.unparse(tree), encoding="utf-8")


def graph(package: Path) -> tuple[dict[str, set[str]], dict[str, dict[str, str]]]:
    """Module -> the modules it imports, every package's names read as lazy."""
    files = _digest.module_files(package)
    names = {
        name: exports(path, name)
        for name, path in files.items()
        if path.name == "__init__.py"
    }
    for name, path in files.items():
        if names.get(name) and not _digest.exports_of(path):
            make_lazy(path, name)  # an older tree's eager names, read as today's
    edges = {}
    for name, path in files.items():
        found = _digest.imports_of(
            ast.parse(path.read_bytes()), name, path.name == "__init__.py"
        )
        if names.get(name):  # a package of names: importing it imports none of them
            found = {n for n in found if n.rpartition(".")[0] != name}
            found -= {f"{name}.{m}" for m in names[name].values()}
        edges[name] = {m for m in _digest.resolve(found, package, names) if m != name}
    return edges, names


def defined_names(node: ast.stmt) -> set[str]:
    """The top-level names a statement binds."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def split_kernel_env(tree: Path) -> None:
    """An older kernel_env.py that also computed the key, read as today's: only
    the statements that bind what today's kernel_env.py binds (or nothing)."""
    path = tree / "tools/build/kernel_env.py"
    if not path.exists():
        return
    today = set().union(*map(defined_names, ast.parse(KERNEL_ENV.read_bytes()).body))
    old = ast.parse(path.read_bytes())
    old.body = [n for n in old.body if defined_names(n) <= today]
    path.write_text(ast.unparse(old), encoding="utf-8")


def page_keys(tree: Path) -> dict[str, str]:
    """Every page of both editions -> its key, as the build computes it."""
    package = tree / "mha_book"
    edges, names = graph(package)
    files = _digest.module_files(package)
    split_kernel_env(tree)
    env = environment_digest(tree, sys.version)
    keys = {}
    for page in sorted((tree / "docs").glob("[ez][nh]/*.md")):
        cells = [without_options(cell) for cell in read_page(page).code_cells]
        if not cells:
            continue
        wanted, docstrings = cell_imports(cells)
        start = (
            set(files) if wanted is None else _digest.resolve(wanted, package, names)
        )
        start |= {"mha_book.book"} & set(files)
        code = _digest.modules_digest(
            _digest.closure(start, package, edges), package, docstrings=docstrings
        )
        keys[page.relative_to(tree / "docs").as_posix()] = env + code
    return keys


def without_options(cell: str) -> str:
    """A code cell without its leading ``:tags: [...]`` lines (myst-nb strips them)."""
    lines = cell.splitlines()
    while lines and lines[0].startswith(":"):
        lines.pop(0)
    return "\n".join(lines)


def replay(count: int) -> list[tuple[str, int, int, bool]]:
    """(commit, pages executed again, pages, old key executed all) per commit."""
    revs = git("rev-list", f"--max-count={count + 1}", "--first-parent", "HEAD").split()
    keys = {}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rev in revs:
            tree = Path(tmp) / rev
            extract(rev, tree)
            keys[rev] = page_keys(tree)
        for child, parent in zip(revs, revs[1:]):
            changed = git("diff", "--name-only", parent, child).split()
            old_all = any(path.startswith(OLD_KEY) for path in changed)
            now, before = keys[child], keys[parent]
            executed = sum(before.get(page) != key for page, key in now.items())
            rows.append((child[:8], executed, len(now), old_all))
    return rows


def main(argv: list[str]) -> int:
    rows = replay(int(argv[0]) if argv else 100)
    print(f"{'commit':8}  pages executed again (of all)   old key: all")
    for rev, executed, pages, old_all in rows:
        print(f"{rev:8}  {executed:4d} / {pages:<4d}                   {old_all}")
    n = len(rows)
    now_all = sum(executed == pages for _, executed, pages, _ in rows)
    old_all = sum(old for *_, old in rows)
    some = sum(executed > 0 for _, executed, _, _ in rows)
    print(
        f"\n{n} commits: every page executed again after {now_all} "
        f"({100 * now_all / n:.0f} %) with today's keys, {old_all} "
        f"({100 * old_all / n:.0f} %) with the old key; some page after {some}."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
