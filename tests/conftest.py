"""Shared fixtures (paths of the repository and of the built site) and test kinds.

Every test gets one marker, so a subset runs with ``-m``:

* ``unit``: the package and the tools, no build (``make test-fast`` with doctest);
* ``doctest``: the docstring examples of ``mha_book`` and ``tools``;
* ``build``: builds a small book in a scratch copy of the build machinery;
* ``site``: reads the built site in ``_build/html`` (``make html`` first);
* ``e2e``: drives Chromium over the built site (``make e2e``).
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _pytest.doctest import DoctestItem

ROOT = Path(__file__).resolve().parents[1]

# The browser tests run on their own (`make e2e`, which sets MHA_BOOK_E2E=1).
collect_ignore = [] if os.environ.get("MHA_BOOK_E2E") else ["e2e"]
# MHA_BOOK_SITE checks a site built elsewhere (tools/build_book.py --build-dir DIR: DIR/html).
SITE = Path(os.environ.get("MHA_BOOK_SITE", ROOT / "_build" / "html"))


@pytest.fixture(scope="session")
def site() -> Path:
    """The built site; `make test` builds it first (`make html`)."""
    if (
        not (SITE / "zh" / "index.html").exists()
        or not (SITE / "en" / "index.html").exists()
    ):
        pytest.fail("the site is not built: run `make html` (make test does it first)")
    return SITE


# What a scratch copy of the repository needs to build a book exactly like `make html`.
BUILD_MACHINERY = [
    "conf.py",
    "pyproject.toml",
    "requirements",
    "tools",
    "mha_book",
    "docs/_ext",
    "docs/_templates",
    "docs/_static",
    "docs/landing.html",
    "docs/references.bib",
    "docs/locale",
]


def copy_build_machinery(dest: Path) -> Path:
    """Copy the real conf.py, extension, templates, build script and package to ``dest``."""
    for name in BUILD_MACHINERY:
        src, dst = ROOT / name, dest / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(
                src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.mo")
            )
        else:
            shutil.copy2(src, dst)
    return dest


# --- scratch books: a one-page book built exactly like `make html` --------------
HEADER = "---\nfile_format: mystnb\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n\n# Page\n\n"


def cell(source: str, tags: str = "") -> str:
    opts = f":tags: [{tags}]\n" if tags else ""
    return f"```{{code-cell}} ipython3\n{opts}{source}\n```\n\n"


@pytest.fixture
def scratch(tmp_path):
    """A scratch copy of the build machinery, for a test's own small book."""
    return copy_build_machinery(tmp_path)


# The transport the notebook kernels use, printed by a cell (see
# test_kernels_talk_over_unix_sockets_in_a_folder_removed_after_the_build).
TRANSPORT_PROBE = (
    "from ipykernel.kernelapp import IPKernelApp\n"
    "app = IPKernelApp.instance()\n"
    "print('transport:', app.transport, '|', app.ip)"
)


@pytest.fixture(scope="session")
def clean_book(tmp_path_factory):
    """One clean two-edition book, built once for the tests that only read it.

    Returns ``(repo, result)``; a test that changes or rebuilds a book makes
    its own with ``scratch``.
    """
    repo = copy_build_machinery(tmp_path_factory.mktemp("clean_book"))
    result = build(
        repo, cell("print(6 * 7)"), cell(TRANSPORT_PROBE), langs=("zh", "en")
    )
    return repo, result


def write_book(repo: Path, *cells: str) -> None:
    """Write the same one-page book in every language."""
    for lang in ("zh", "en"):
        page = repo / "docs" / lang / "index.md"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(HEADER + "".join(cells), encoding="utf-8")


def run_build(repo: Path, *args: str, langs=("zh",)):
    """Run ``tools/build_book.py`` in ``repo`` as `make html` does; return the result."""
    return subprocess.run(
        [sys.executable, "tools/build_book.py", "--langs", *langs, *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def build(repo: Path, *cells: str, langs=("zh",)):
    """Write the one-page book in every language, build it, return the result."""
    write_book(repo, *cells)
    return run_build(repo, langs=langs)


def executed(repo: Path, lang="zh") -> bool:
    report = json.loads(
        (repo / "_build/exec" / f"{lang}.json").read_text(encoding="utf-8")
    )
    return report["index"]["executed_this_build"]


# Test files whose tests build a scratch book (see test_build_strict.py).
BUILD_TEST_FILES = {
    "test_build_strict.py",
    "test_build_faults.py",
    "test_build_messages.py",
    "test_pages_guard_claims.py",
    "test_partial_build.py",
    "test_exercises.py",
    "test_share_metadata.py",
}


def kind_of(item) -> str:
    """The marker of a collected test: doctest, e2e, build, site or unit."""
    if isinstance(item, DoctestItem):
        return "doctest"
    if "e2e" in item.path.parts:
        return "e2e"
    if item.path.name in BUILD_TEST_FILES:
        return "build"
    if "site" in getattr(item, "fixturenames", ()):
        return "site"
    return "unit"


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(kind_of(item))
