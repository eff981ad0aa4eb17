"""The build's language: the one place a page asks "zh or en?".

The book is built twice from two source trees (``docs/zh`` and ``docs/en``)
whose code cells are identical. A cell that needs language-specific labels
(for example the tokens of a heatmap) calls :func:`book_language` instead of
forking the code. The build sets the environment variable ``MHA_BOOK_LANG``
(see ``conf.py``); every notebook kernel inherits it.
"""

from __future__ import annotations

import os
import unicodedata

LANG_ENV_VAR = "MHA_BOOK_LANG"
LANGUAGES = ("zh", "en")


def book_language(default: str = "en") -> str:
    """Return the language of the book being built: ``"zh"`` or ``"en"``.

    Outside a book build (a plain Python session) the ``default`` is returned.

    Args:
        default: language to use when ``MHA_BOOK_LANG`` is not set.

    Returns:
        ``"zh"`` or ``"en"``.

    Raises:
        ValueError: if ``MHA_BOOK_LANG`` (or ``default``) is another value.

    Example:
        >>> book_language() in ("zh", "en")
        True
    """
    lang = os.environ.get(LANG_ENV_VAR, default)
    if lang not in LANGUAGES:
        raise ValueError(f"{LANG_ENV_VAR} must be one of {LANGUAGES}, got {lang!r}")
    return lang


def pick(zh: object, en: object) -> object:
    """Return ``zh`` or ``en`` according to :func:`book_language`.

    Example:
        >>> pick("注意力", "attention") in ("注意力", "attention")
        True
    """
    return zh if book_language() == "zh" else en


def display_width(text: str) -> int:
    """Columns ``text`` takes in a monospace font: a wide (CJK) character takes two.

    Example:
        >>> display_width("pick('权重', 'weights')")  # 21 characters
        23
    """
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def pad_cols(text: str, width: int, align: str = "<") -> str:
    """Pad ``text`` with spaces to ``width`` terminal columns.

    Like ``f"{text:<{width}}"``, but a wide character (most CJK characters)
    counts as two columns (:func:`display_width`), as it takes two in a
    monospace font: Chinese table headers then line up with the numbers below
    them.

    Args:
        text: the text to pad (left as is when already wider).
        width: the number of columns to fill.
        align: ``"<"`` (text on the left) or ``">"`` (text on the right).

    Example:
        >>> pad_cols("时间", 6, ">") + "|", pad_cols("time", 6, ">") + "|"
        ('  时间|', '  time|')
    """
    if align not in ("<", ">"):
        raise ValueError(f"align must be '<' or '>', got {align!r}")
    fill = " " * max(width - display_width(text), 0)
    return text + fill if align == "<" else fill + text
