"""Gates for what a page shows: teaching cells, and lists of chapters.

Usage: python -m tools.check_pages [DOCS_DIR]   (exit 1 and a list of problems)

Teaching cells
    A visible code cell shows what a reader would type. ``glue(...)`` is
    build plumbing: it belongs in a cell tagged ``remove-cell`` (executed,
    never shown), placed right after the cell that computes the value.

The map of the book
    The parts, the chapters and which chapter needs which live in one place,
    ``mha_book.book_map``; the sidebar, the index's parts and reading-path
    figure, chapter 08's reading path and chapter 09's next steps are written
    from it (the ``book-map`` directive, ``docs/_ext/book_toc.py``). The gate
    checks that the map and the pages agree: every ``NN-name.md`` of both
    editions is a chapter of the map, under the title its first heading
    gives, every chapter of the map has its page, and each chapter needs
    only earlier chapters (for a book whose index holds the directive
    ``{book-map} contents``). A new chapter is one entry of the map.

Lists of chapters
    A list of chapters typed into a page is never left to go stale. Before a
    list (or a paragraph) that names chapters by link, a MyST comment says
    which chapters it lists, and the gate checks that it links every one of
    them:

        % chapters: 10-       every chapter from 10 to the last one
        % chapters: 01-08     chapters 1 to 8

    The block is the text after the comment up to the next blank line. A new
    chapter that a ``10-`` list does not link fails the build. A block that
    links four or more chapters without such a comment is reported too, so a
    new list of chapters cannot escape the check. A list that the map can
    write (the chapters of a part, the chapters after one) belongs in a
    ``book-map`` directive instead.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from .gate_main import gate_main

LANGS = ("zh", "en")
CHAPTER = re.compile(r"^(\d\d)-[\w-]+\.md$")
# A link to a chapter page: [text](NN-name.md) or [text](NN-name.md#anchor).
CHAPTER_LINK = re.compile(r"\]\((\d\d)-[\w-]+\.md(?:#[\w-]*)?\)")
MARKER = re.compile(r"^%\s*chapters:\s*(\d\d)-(\d\d)?\s*$")
FENCE = re.compile(r"^(`{3,}|~{3,})")
UNMARKED_LIMIT = 4  # an unmarked block linking this many chapters is a list


def _tags(cell: str) -> set[str]:
    """The tags of a code cell, from its ``:tags: [...]`` option line."""
    m = re.search(r"^:tags:\s*\[([^\]]*)\]", cell, re.M)
    return {t.strip().strip("'\"") for t in m.group(1).split(",")} if m else set()


def glue_problems(docs: Path) -> list[str]:
    """Every visible code cell that calls ``glue(``.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> (d / "en").mkdir()
    >>> _ = (d / "en" / "p.md").write_text(
    ...     "```{code-cell} ipython3\\nx = 1\\nglue('x', x, display=False)\\n```\\n"
    ...     "```{code-cell} ipython3\\n:tags: [remove-cell]\\nglue('y', 2)\\n```\\n")
    >>> glue_problems(d)
    ['en/p.md:1: a visible code cell calls glue(: move the glue calls to a cell tagged remove-cell after it']
    """
    problems = []
    cell = re.compile(r"^(`{3,})\{code-cell\}[^\n]*\n(.*?)^\1[ \t]*$", re.M | re.S)
    for lang in LANGS:
        for path in sorted((docs / lang).glob("*.md")):
            text = path.read_text(encoding="utf-8")
            for m in cell.finditer(text):
                body = m.group(2)
                if re.search(r"\bglue\(", body) and "remove-cell" not in _tags(body):
                    line = text[: m.start()].count("\n") + 1
                    problems.append(
                        f"{lang}/{path.name}:{line}: a visible code cell calls glue(: "
                        "move the glue calls to a cell tagged remove-cell after it"
                    )
    return problems


def prose_blocks(text: str) -> list[tuple[int, str | None, str]]:
    """(first line, marker or None, text) of each prose block outside code fences.

    >>> prose_blocks("a\\n\\n% chapters: 10-\\n- [x](10-a.md)\\n- [y](11-b.md)\\n")
    [(1, None, 'a'), (4, '10-', '- [x](10-a.md)\\n- [y](11-b.md)')]
    """
    blocks, current, start, marker, fence = [], [], 0, None, None
    for number, line in enumerate(text.split("\n"), start=1):
        stripped = line.strip()
        m = FENCE.match(stripped)
        if fence:  # inside code: skipped
            if stripped == fence:
                fence = None
            continue
        if m and ("{code-cell}" in stripped or "{" not in stripped):
            if stripped != m.group(1):  # an opening fence (a closing one is bare)
                fence = m.group(1)
                continue
        if (mk := MARKER.match(stripped)) and not current:
            marker = f"{mk.group(1)}-{mk.group(2) or ''}"
            continue
        # A directive's fence and option lines end a block; its body is prose.
        boundary = bool(m) or bool(re.match(r"^:[\w-]+:", stripped))
        if stripped and not boundary:
            if not current:
                start = number
            current.append(line)
        elif current:
            blocks.append((start, marker, "\n".join(current)))
            current, marker = [], None
    if current:
        blocks.append((start, marker, "\n".join(current)))
    return blocks


def chapter_list_problems(docs: Path) -> list[str]:
    """Marked chapter lists that miss a chapter, and unmarked lists of chapters."""
    problems = []
    for lang in LANGS:
        chapters = sorted(
            int(m.group(1))
            for p in (docs / lang).glob("*.md")
            if (m := CHAPTER.match(p.name))
        )
        if not chapters:
            continue
        for path in sorted((docs / lang).glob("*.md")):
            for line, marker, block in prose_blocks(path.read_text(encoding="utf-8")):
                linked = {int(n) for n in CHAPTER_LINK.findall(block)}
                where = f"{lang}/{path.name}:{line}"
                if marker is None:
                    if len(linked) >= UNMARKED_LIMIT:
                        problems.append(
                            f"{where}: this block links {len(linked)} chapters: mark it "
                            "with a line '% chapters: NN-' (or 'NN-MM') above it, "
                            "so the gate checks it lists every one"
                        )
                    continue
                first, _, last = marker.partition("-")
                wanted = [
                    n
                    for n in chapters
                    if int(first) <= n <= (int(last) if last else chapters[-1])
                ]
                missing = [f"{n:02d}" for n in wanted if n not in linked]
                if missing:
                    problems.append(
                        f"{where}: the list marked 'chapters: {marker}' does not "
                        f"link chapter(s) {', '.join(missing)}"
                    )
    return problems


HEADING = re.compile(r"^# (.+?)\s*$", re.M)


def map_problems(docs: Path, chapters=None) -> list[str]:
    """Where the map of the book (``mha_book.book_map``) and the pages disagree.

    >>> import tempfile
    >>> from mha_book.book_map import Chapter
    >>> d = Path(tempfile.mkdtemp())
    >>> for lang, title in (("zh", "甲"), ("en", "A")):
    ...     (d / lang).mkdir()
    ...     _ = (d / lang / "01-a.md").write_text(f"# {title}\\n")
    ...     _ = (d / lang / "02-b.md").write_text("# B\\n")
    >>> a = Chapter(1, "01-a", "article", ("甲", "A"), (), ("", ""))
    >>> map_problems(d, [a])
    ['zh/02-b.md: a chapter page that mha_book/data/book_map.toml does not list: add a [[chapter]]', 'en/02-b.md: a chapter page that mha_book/data/book_map.toml does not list: add a [[chapter]]']
    >>> c = Chapter(3, "03-c", "article", ("丙", "C"), (4,), ("", ""))
    >>> map_problems(d, [a, Chapter(2, "02-b", "article", ("B", "B"), (), ("", "")), c])
    ... # doctest: +NORMALIZE_WHITESPACE
    ['mha_book/data/book_map.toml: chapter 3 needs chapter(s) 4, which are not earlier
      chapters of the map', 'zh/03-c.md: chapter 3 of the map has no page',
      'en/03-c.md: chapter 3 of the map has no page']
    """
    from mha_book import book_map

    chapters = list(book_map.CHAPTERS if chapters is None else chapters)
    problems = _map_data_problems(chapters, {p.key for p in book_map.PARTS})
    for lang in LANGS:
        pages = {p.stem: p for p in (docs / lang).glob("*.md") if CHAPTER.match(p.name)}
        for c in chapters:
            page = pages.pop(c.slug, None)
            if page is None:
                problems.append(
                    f"{lang}/{c.slug}.md: chapter {c.number} of the map has no page"
                )
                continue
            m = HEADING.search(page.read_text(encoding="utf-8"))
            title = book_map.text(c.title, lang)
            if m is None or m.group(1) != title:
                problems.append(
                    f"{lang}/{c.slug}.md: the first heading is "
                    f"{m.group(1) if m else None!r}, the map's title {title!r}"
                )
        problems += [
            f"{lang}/{stem}.md: a chapter page that {MAP_FILE} does not list: "
            "add a [[chapter]]"
            for stem in sorted(pages)
        ]
    return problems


MAP_FILE = "mha_book/data/book_map.toml"


def _map_data_problems(chapters, parts: set[str]) -> list[str]:
    """What is wrong inside the map: numbers, pages, parts and needs."""
    problems = []
    numbers = [c.number for c in chapters]
    if numbers != sorted(set(numbers)):
        problems.append(f"{MAP_FILE}: the chapters' numbers must rise, got {numbers}")
    for c in chapters:
        if c.slug[:2] != f"{c.number:02d}":
            problems.append(f"{MAP_FILE}: chapter {c.number} has the page {c.slug!r}")
        if c.part not in parts:
            problems.append(f"{MAP_FILE}: chapter {c.number}: no part {c.part!r}")
        wrong = [n for n in c.needs if n >= c.number or n not in numbers]
        if wrong:
            problems.append(
                f"{MAP_FILE}: chapter {c.number} needs chapter(s) "
                f"{', '.join(map(str, wrong))}, which are not earlier chapters of the map"
            )
    return problems


MAPPED = "{book-map} contents"  # an index that writes its contents from the map


def page_problems(docs: Path) -> list[str]:
    """Every problem of the gate. The map is checked for a book whose index
    writes its table of contents from it (a scratch book of the tests has its
    own toctree and pages)."""
    problems = glue_problems(docs) + chapter_list_problems(docs)
    if written_from_map(docs):
        problems += map_problems(docs)
    return problems


def written_from_map(docs: Path) -> bool:
    """Whether ``docs`` is the book, whose index writes its contents from the map
    (a scratch book of the tests has its own toctree and pages)."""
    index = docs / "en" / "index.md"
    return index.exists() and MAPPED in index.read_text(encoding="utf-8")


def main(argv: list[str]) -> int:
    return gate_main(page_problems, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
