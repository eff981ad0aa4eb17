"""The environment of the notebook kernels, which decides what a page prints.

The book's execution cache is keyed on this module's code and warm_kernel.py's
(by their syntax trees: comments and docstrings change nothing), with the
locked versions and the Python version (tools/build/environment_key.py), not
on the rest of the build: changing how the build runs leaves the stored pages
valid, changing what the kernels see executes them again. What computes the
key lives in environment_key.py, so that editing it executes nothing.
"""

from __future__ import annotations

import os
from pathlib import Path

from .common import FULL_BUILD


def build_env(lang: str, build: Path, pages: list[str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["MHA_BOOK_LANG"] = lang
    env["MHA_BOOK_BUILD_DIR"] = str(build)
    # Expensive deterministic results (chapter 10's training) are stored here,
    # so the two editions and later builds compute each one once.
    env["MHA_BOOK_ARTIFACTS"] = str(build / "artifacts")
    if pages:
        # A partial build executes only these pages, and shares the full
        # build's executed notebooks and stored results (keyed by digest).
        env["MHA_BOOK_PAGES"] = ",".join(pages)
        # (Several partial builds at once: give each its own MHA_BOOK_EXEC_CACHE.)
        env.setdefault("MHA_BOOK_EXEC_CACHE", str(FULL_BUILD / "jupyter_cache"))
        env["MHA_BOOK_ARTIFACTS"] = str(FULL_BUILD / "artifacts")
    # Two builds run at once on two cores: one thread each for torch/BLAS.
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    env["PYTHONHASHSEED"] = "0"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    env["IPYTHONDIR"] = str(kernel_profile(build))
    return env


# Every kernel starts with this, from the IPython folder the build owns (so a
# reader's own ~/.ipython settings cannot change what a page prints): a cell
# meant to raise shows its own line and the error, not PyTorch's internals.
KERNEL_STARTUP = "from mha_book.book import short_tracebacks\n\nshort_tracebacks()\n"


def kernel_profile(build: Path) -> Path:
    """The IPython folder of the build's kernels, with its startup file written."""
    folder = build / "ipython"
    startup = folder / "profile_default" / "startup" / "00-book.py"
    if not startup.exists() or startup.read_text(encoding="utf-8") != KERNEL_STARTUP:
        startup.parent.mkdir(parents=True, exist_ok=True)
        startup.write_text(KERNEL_STARTUP, encoding="utf-8")
    return folder
