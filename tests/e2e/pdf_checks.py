"""Checks of the PDF editions (tools/build_pdf.py), shared by the tests.

Each check returns a list of problems (empty = fine), so the same function
guards the real PDFs and is shown to catch a deliberately broken print.
"""

from __future__ import annotations

import io
import re
import unicodedata
from pathlib import Path

CJK = re.compile(r"[\u4e00-\u9fff]")
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)


RADICAL = re.compile(r"[\u2e80-\u2fdf]")  # CJK radicals: none in the book's text


def canonical(text: str) -> str:
    """Text compared without whitespace or ligatures (NFKC, which leaves the
    radicals of the CJK supplement as they are: they must not be in the PDF)."""
    return re.sub(r"\s+", "", unicodedata.normalize("NFKC", text))


def radical_problems(texts: list[str]) -> list[str]:
    """Pages whose text layer has a CJK radical where the page shows an ideograph
    (tools/build_pdf.py rewrites the fonts' ToUnicode maps so that none has)."""
    return [
        f"page {i}: {''.join(sorted(set(RADICAL.findall(text))))}"
        for i, text in enumerate(texts, 1)
        if RADICAL.search(text)
    ]


def page_texts(pdf: bytes | Path) -> list[str]:
    """The text of each page (a printed edition's: read once, see :func:`read_pdf`)."""
    if isinstance(pdf, Path):
        return read_pdf(pdf)["plain"]
    return [page.extract_text() or "" for page in _pages(pdf)]


def _pages(data: bytes):
    from pypdf import PdfReader

    return PdfReader(io.BytesIO(data)).pages


def _layout_text(page) -> str:
    return page.extract_text(extraction_mode="layout")


def read_pdf(pdf: Path) -> dict:
    """A printed PDF's text, page by page: ``plain`` and ``layout`` (pypdf's
    layout mode, which orders the text by position).

    pypdf takes minutes over the two editions' 700 pages, and every test
    process and test needs them: the text is kept beside the PDF
    (``<name>.text.json``) under the SHA-256 of the PDF and of this module,
    so it is read again only when either changes. A file lock makes the
    test processes read each PDF once.
    """
    import fcntl
    import hashlib
    import json
    import os

    data = pdf.read_bytes()
    digest = hashlib.sha256(data + Path(__file__).read_bytes()).hexdigest()
    cache = pdf.with_name(pdf.name + ".text.json")
    with open(pdf.with_name(pdf.name + ".text.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            stored = json.loads(cache.read_text(encoding="utf-8"))
            if stored["digest"] == digest:
                return stored
        except (OSError, ValueError, KeyError):
            pass  # none yet, or from another PDF: read it
        pages = _pages(data)
        stored = {
            "digest": digest,
            "plain": [page.extract_text() or "" for page in pages],
            "layout": [_layout_text(page) for page in pages],
        }
        partial = cache.with_name(cache.name + f".{os.getpid()}")
        partial.write_text(json.dumps(stored, ensure_ascii=False), encoding="utf-8")
        partial.replace(cache)
    return stored


def code_lines(source: Path) -> list[str]:
    """Every non-blank line of every code cell a MyST page shows.

    A cell tagged ``remove-cell`` (glue calls) is executed but not shown, so
    its lines are not looked for.
    """
    lines = []
    for body in CODE_CELL.findall(source.read_text(encoding="utf-8")):
        body_lines = body.splitlines()
        if any(
            line.startswith(":tags:") and "remove-cell" in line for line in body_lines
        ):
            continue
        if body_lines and body_lines[0].strip() == "---":  # a YAML options block
            end = body_lines.index("---", 1)
            body_lines = body_lines[end + 1 :]
        lines += [
            line for line in body_lines if line.strip() and not line.startswith(":")
        ]
    return lines


def page_edges(pdf: bytes | Path, first: int = 1, count: int | None = None):
    """(end, start) of each page's body in reading order: its last and first
    three lines, without the running header and the page number, canonical.

    pypdf's layout mode orders the text by position, so a code line that
    wraps across a page break ends one page and starts the next.
    """
    if isinstance(pdf, Path):
        layouts = read_pdf(pdf)["layout"]
    else:
        layouts = [_layout_text(page) for page in _pages(pdf)]
    edges = []
    for layout in layouts[first - 1 : None if count is None else first - 1 + count]:
        lines = layout.splitlines()
        lines = [line for line in lines if line.strip()][1:]  # the header
        if lines and lines[-1].strip().isdigit():
            lines = lines[:-1]  # the page number
        edges.append((canonical("".join(lines[-3:])), canonical("".join(lines[:3]))))
    return edges


def missing_code_lines(
    pages: list[str], source: Path, edges: list[tuple[str, str]] = ()
) -> list[str]:
    """Code lines of ``source`` that the printed pages lack (cut at the margin,
    hidden, or lost), compared without whitespace so wrapped lines match.

    ``pages``: the text of each page without its running header. ``edges``
    (:func:`page_edges`): a line wrapped across a page break is found as the
    end of one page and the start of the next. Chromium drops the glyphs a
    box clips, so a cut line's tail is missing from the text.
    """
    whole = "".join(canonical(page) for page in pages)

    def found(line: str) -> bool:
        if line in whole:
            return True
        return any(
            end.endswith(line[:i]) and start.startswith(line[i:])
            for (end, _), (_, start) in zip(edges, edges[1:])
            for i in range(1, len(line))
        )

    return [
        f"{source.name}: code line not in the PDF: {line.strip()!r}"
        for line in code_lines(source)
        if not found(canonical(line))
    ]


def image_count(pdf: Path, first_page: int, pages: int) -> int:
    """Image XObjects drawn on the pages first_page .. first_page + pages - 1."""
    from pypdf import PdfReader

    reader = PdfReader(pdf)
    count = 0
    for page in reader.pages[first_page - 1 : first_page - 1 + pages]:
        xobjects = page["/Resources"].get("/XObject", {})
        for ref in xobjects.values():
            obj = ref.get_object()
            if obj.get("/Subtype") == "/Image":
                count += 1
            elif obj.get("/Subtype") == "/Form":  # images nested in a form
                inner = obj.get("/Resources", {}).get("/XObject", {})
                count += sum(
                    r.get_object().get("/Subtype") == "/Image" for r in inner.values()
                )
    return count


def chapter_body(
    texts: list[str], book: str, chapter: dict
) -> tuple[list[str], list[str]]:
    """A chapter's printed pages without their running headers, and the pages
    whose header does not name the book, the chapter and the page number."""
    header = canonical(book + chapter["title"])
    body, problems = [], []
    for number in range(
        chapter["first_page"], chapter["first_page"] + chapter["pages"]
    ):
        lines = texts[number - 1].split("\n")
        if (
            len(lines) >= 2
            and canonical(lines[0]) == header
            and lines[1].strip() == str(number)
        ):
            lines = lines[2:]
        else:
            problems.append(
                f"page {number}: no running header {chapter['title']!r} / {number}"
            )
        body.append("\n".join(lines))
    return body, problems
