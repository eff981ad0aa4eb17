"""Shared fixtures: paths of the repository and of the built site."""

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# The browser tests run on their own (`make e2e`, which sets MHA_BOOK_E2E=1).
collect_ignore = [] if os.environ.get("MHA_BOOK_E2E") else ["e2e"]
SITE = ROOT / "_build" / "html"


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
