"""Fixtures of the build tests: a scratch copy of the build machinery, and
one clean two-edition book shared by the tests that only read it."""

import os

import pytest
from scratch_book import ROOT, build, cell, copy_build_machinery

# The fonts every scratch book cuts alike are cut once, in the folder the
# book's own build keeps its cuts in (docs/_ext/book_assets.py).
os.environ.setdefault("MHA_BOOK_FONT_CUTS", str(ROOT / "_build" / "font-cuts"))


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
