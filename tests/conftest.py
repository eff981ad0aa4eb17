"""Shared fixtures: paths of the repository and of the built site."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"


@pytest.fixture(scope="session")
def site() -> Path:
    """The built site; `make test` builds it first (`make html`)."""
    if not (SITE / "zh" / "index.html").exists() or not (SITE / "en" / "index.html").exists():
        pytest.fail("the site is not built: run `make html` (make test does it first)")
    return SITE
