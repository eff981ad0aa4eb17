"""The map of the book: its parts, its chapters, and which chapter needs which.

One source for every list of chapters the book shows: the sidebar's captioned
parts and the PDF's table of contents (``docs/_ext/book_toc.py`` writes the
toctrees from it), the parts and the reading-path figure of the index
(:func:`mha_book.viz.diagrams.reading_path`), the reading path of chapter 08,
the next steps of chapter 09, and the chapter titles that chapter 09's map of
the package prints. The map itself is data, ``mha_book/data/book_map.toml``:
a new chapter is one more ``[[chapter]]`` there, which this module reads into
``CHAPTERS`` (and ``[[part]]`` into ``PARTS``); ``tools/check_pages.py`` checks before every build that the
map and the pages agree (every ``NN-name.md`` of both editions is here, under
its own title, and nothing else is).

Texts are ``(zh, en)`` pairs; :func:`text` picks one. A chapter's ``summary``
is MyST (it may hold ``{term}`` and ``{cite:p}`` roles), since the build parses
it into the pages; titles are plain text.

Example:
    >>> [p.key for p in PARTS]
    ['article', 'learning', 'efficiency', 'positions']
    >>> [c.number for c in chapters_in("efficiency")]
    [12, 13, 17]
    >>> text(chapter(5).title, "en")
    'Verification: Shapes, Masks, Heatmaps and Cost'
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources

from mha_book.book import LANGUAGES, book_language

__all__ = [
    "BACK_MATTER",
    "BACK_MATTER_CAPTION",
    "CHAPTERS",
    "PARTS",
    "Chapter",
    "Part",
    "chapter",
    "chapter_label",
    "chapters_in",
    "part_of",
    "reading_order",
    "text",
]

Text = tuple[str, str]  # (zh, en)


@dataclass(frozen=True)
class Part:
    """One part of the book.

    Args:
        key: a short name, used by ``part`` of a :class:`Chapter`.
        title: the part's caption in the sidebar and the PDF, ``(zh, en)``.
        short: the part's name in the reading-path figure, ``(zh, en)``.
        after: one sentence: what a reader can do after the part, ``(zh, en)``.
    """

    key: str
    title: Text
    short: Text
    after: Text


@dataclass(frozen=True)
class Chapter:
    """One chapter: its page, its part, and the chapters it builds on.

    Args:
        number: the chapter's number, the ``NN`` of its page ``NN-name.md``.
        slug: the page's name without ``.md``.
        part: the ``key`` of a :class:`Part` of its part.
        title: the page's first heading, ``(zh, en)``.
        needs: the chapters a reader should have read first (earlier numbers
            of this map).
        summary: what the chapter does, one or two sentences of MyST, ``(zh, en)``.
    """

    number: int
    slug: str
    part: str
    title: Text
    needs: tuple[int, ...]
    summary: Text


def _load() -> tuple[tuple[Part, ...], tuple[Chapter, ...]]:
    """The parts and chapters of ``data/book_map.toml``, in its order."""
    path = resources.files("mha_book") / "data" / "book_map.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))

    def pair(entry: dict[str, str]) -> Text:
        return entry["zh"], entry["en"]

    parts = tuple(
        Part(p["key"], pair(p["title"]), pair(p["short"]), pair(p["after"]))
        for p in data["part"]
    )
    chapters = tuple(
        Chapter(
            c["number"],
            c["slug"],
            c["part"],
            pair(c["title"]),
            tuple(c["needs"]),
            pair(c["summary"]),
        )
        for c in data["chapter"]
    )
    return parts, chapters


PARTS, CHAPTERS = _load()

# The pages after the chapters, in the sidebar's last group.
BACK_MATTER: tuple[str, ...] = ("api", "api-experiments", "glossary", "references")
BACK_MATTER_CAPTION: Text = ("参考资料", "Reference")


def text(pair: Text, lang: str | None = None) -> str:
    """The ``(zh, en)`` pair's text in ``lang`` (default: the book's language).

    Example:
        >>> text(("位置", "Positions"), "zh")
        '位置'
    """
    lang = book_language() if lang is None else lang
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
    return pair[LANGUAGES.index(lang)]


def chapter(number: int) -> Chapter:
    """The chapter with this number.

    Example:
        >>> chapter(14).slug
        '14-positions'
    """
    for c in CHAPTERS:
        if c.number == number:
            return c
    raise ValueError(
        f"number must be a chapter of the book ({CHAPTERS[0].number}-"
        f"{CHAPTERS[-1].number}), got {number!r}"
    )


def part_of(number: int) -> Part:
    """The part that holds chapter ``number``.

    Example:
        >>> part_of(14).key
        'positions'
    """
    key = chapter(number).part
    return next(p for p in PARTS if p.key == key)


def chapters_in(part: str) -> list[Chapter]:
    """The chapters of a part, in the order of their numbers.

    Example:
        >>> [c.number for c in chapters_in("learning")]
        [10, 11, 15, 16, 18, 19, 20]
    """
    if part not in {p.key for p in PARTS}:
        raise ValueError(f"part must be one of {[p.key for p in PARTS]}, got {part!r}")
    return [c for c in CHAPTERS if c.part == part]


def chapter_label(number: int, lang: str | None = None) -> str:
    """The chapter's number and title as a reader sees them, in ``lang``.

    Example:
        >>> chapter_label(5, "en")
        'Chapter 5. Verification: Shapes, Masks, Heatmaps and Cost'
        >>> chapter_label(5, "zh")
        '第 5 章　功能验证：形状、掩码、热力图与开销'
    """
    c = chapter(number)
    lang = book_language() if lang is None else lang
    if lang == "zh":
        return f"第 {c.number} 章　{text(c.title, lang)}"
    return f"Chapter {c.number}. {text(c.title, lang)}"


def reading_order(after: int = 0) -> list[Chapter]:
    """The chapters after ``after`` in an order that reads each after its needs.

    Parts come in the order of ``PARTS``, chapters in a part by number,
    except that a chapter waits until every chapter it needs is read.

    Example:
        >>> [c.number for c in reading_order(9)]
        [10, 11, 12, 13, 16, 14, 15, 17, 18, 19, 20]
    """
    done = {c.number for c in CHAPTERS if c.number <= after}
    wanted = [c for p in PARTS for c in chapters_in(p.key) if c.number > after]
    order: list[Chapter] = []
    while wanted:
        ready = next((c for c in wanted if all(n in done for n in c.needs)), None)
        if ready is None:
            raise ValueError(
                f"CHAPTERS: the needs of chapters {[c.number for c in wanted]} "
                "form a cycle"
            )
        order.append(ready)
        done.add(ready.number)
        wanted.remove(ready)
    return order
