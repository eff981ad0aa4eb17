"""What every step of the build shares: its folders and the way it fails."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGS = ("zh", "en")
FULL_BUILD = ROOT / "_build"  # `make html`'s folder
PARTIAL_BUILD = FULL_BUILD / "partial"  # `--pages`' default folder


class BuildFailed(Exception):
    """A step stopped the build; the message says why (printed after "build FAILED:")."""
