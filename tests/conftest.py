"""Shared fixtures (paths of the repository and of the built site) and test kinds.

The tests live in one folder per kind, and each test gets its folder's marker,
so a subset runs with ``-m`` (or by folder):

* ``unit/``: the package and the tools, no build (``make test-fast`` with doctest);
* ``doctest``: the docstring examples of ``mha_book``, ``tools`` and ``docs/_ext``;
* ``build/``: builds a small book in a scratch copy of the build machinery;
* ``site/``: reads the built site in ``_build/html`` (``make html`` first);
* ``e2e/``: drives Chromium over the built site (``make e2e``).
"""

import os
from pathlib import Path

import pytest
from _pytest.doctest import DoctestItem

ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
KINDS = ("unit", "build", "site", "e2e")

# The browser tests run on their own (`make e2e`, which sets MHA_BOOK_E2E=1).
# The conftest files hold no doctests: --doctest-modules would import each one
# again as a module named "conftest", and the tiers' conftests share that name.
collect_ignore = ["conftest.py", "build/conftest.py"]
collect_ignore += [] if os.environ.get("MHA_BOOK_E2E") else ["e2e"]
# MHA_BOOK_SITE checks a site built elsewhere (python -m tools.build_book --build-dir DIR: DIR/html).
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


def kind_of(item) -> str:
    """The marker of a collected test: doctest, or the name of its folder."""
    if isinstance(item, DoctestItem):
        return "doctest"
    try:
        folder = item.path.relative_to(TESTS).parts[0]
    except ValueError:  # pragma: no cover - only tests/ and the doctests are collected
        raise pytest.UsageError(f"{item.path}: a test outside tests/") from None
    if folder not in KINDS:
        raise pytest.UsageError(
            f"{item.path}: tests live in one of tests/{{{','.join(KINDS)}}}/"
        )
    if folder == "unit" and "site" in getattr(item, "fixturenames", ()):
        raise pytest.UsageError(
            f"{item.nodeid}: reads the built site; move it to tests/site/"
        )
    return folder


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(kind_of(item))
