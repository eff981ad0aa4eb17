"""What every step of the build shares: its folders and the way it fails."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LANGS = ("zh", "en")
FULL_BUILD = ROOT / "_build"  # `make html`'s folder
PARTIAL_BUILD = FULL_BUILD / "partial"  # `--pages`' default folder


class BuildFailed(Exception):
    """A step stopped the build; the message says why (printed after "build FAILED:")."""


def read_record(
    path: Path,
    default,
    kind: type = dict,
    damaged=None,
    healing: str = "starting it afresh",
):
    """A bookkeeping file of the build (JSON), or ``default`` if there is none.

    A damaged one (not JSON, or not a ``kind``) heals: one line says so and
    how (``healing``), and ``damaged`` is returned (``default`` if None), so
    the build goes on and its next write replaces the file.

    Example:
        >>> import tempfile
        >>> path = Path(tempfile.mkdtemp()) / "times.json"
        >>> read_record(path, {})
        {}
        >>> _ = path.write_text("garbage")
        >>> read_record(path, {})  # doctest: +ELLIPSIS
        WARNING (healed): .../times.json was unreadable (JSONDecodeError); starting it afresh
        {}
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, kind):
            raise TypeError(f"a {type(data).__name__}, not a {kind.__name__}")
        return data
    except FileNotFoundError:
        return default
    except (OSError, ValueError, TypeError) as err:
        print(
            f"WARNING (healed): {path} was unreadable ({type(err).__name__}); {healing}",
            flush=True,
        )
        return default if damaged is None else damaged
