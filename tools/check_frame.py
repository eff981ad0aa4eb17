"""Gate: every chapter after the article's nine has the same frame.

Usage: python -m tools.check_frame [DOCS_DIR]   (exit 1 and a list of problems)

A chapter numbered 10 or higher (``docs/<lang>/NN-name.md``), in both
editions, has

* an introduction: prose between its title and its first section;
* a summary: the second-to-last section, headed ``## Summary`` (``## 小结``),
  with prose in it;
* exercises: the last section, headed ``## Exercises`` (``## 练习``).

Chapters 01–09 follow the article they retell and keep its outline.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from .gate_main import gate_main

LANGS = ("zh", "en")
FIRST_FRAMED = 10  # the chapters after the article's nine
CHAPTER = re.compile(r"^(\d\d)-[\w-]+\.md$")
SUMMARY = {"zh": "小结", "en": "Summary"}
EXERCISES = {"zh": "练习", "en": "Exercises"}


def _sections(text: str) -> tuple[bool, list[tuple[int, str, bool]]]:
    """Whether prose comes between the title and the first ``##`` section, and
    each ``##`` section as (line, heading, whether it has prose of its own).

    Headings are read with the parser Sphinx uses (a ``## comment`` in a code
    cell is no heading); prose is text outside headings: a paragraph, a list,
    a table (code cells, directives and comments are not).

    >>> intro, sections = _sections("# T\\n\\nHello.\\n\\n## A\\n\\n```python\\nx\\n```\\n")
    >>> intro, sections
    (True, [(5, 'A', False)])
    """
    from tools.page_model import _parser

    tokens = _parser().parse(text)
    intro, sections = False, []
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.tag == "h2" and tok.level == 0:
            line = (tok.map[0] if tok.map else 0) + 1
            sections.append((line, tokens[i + 1].content.strip(), False))
        elif (
            tok.type == "inline"
            and tokens[i - 1].type != "heading_open"
            and tok.content.strip()
        ):
            if sections:
                line, heading, _ = sections[-1]
                sections[-1] = (line, heading, True)
            else:
                intro = True
    return intro, sections


def chapter_frame_problems(path: Path, lang: str) -> list[str]:
    """What one chapter's frame lacks (an empty list: nothing).

    >>> import tempfile
    >>> p = Path(tempfile.mkdtemp()) / "10-x.md"
    >>> _ = p.write_text("# T\\n\\nWhy.\\n\\n## Body\\n\\nText.\\n\\n## Exercises\\n")
    >>> chapter_frame_problems(p, "en")  # doctest: +NORMALIZE_WHITESPACE
    ["10-x.md: the section before '## Exercises' is '## Body', not '## Summary'"]
    """
    intro, sections = _sections(path.read_text(encoding="utf-8"))
    name, problems = path.name, []
    summary, exercises = SUMMARY[lang], EXERCISES[lang]
    if not intro:
        problems.append(f"{name}: no introduction (prose before the first section)")
    headings = [heading for _, heading, _ in sections]
    if not headings or headings[-1] != exercises:
        last = f"'## {headings[-1]}'" if headings else "no section"
        problems.append(f"{name}: the last section is {last}, not '## {exercises}'")
    elif len(headings) < 2 or headings[-2] != summary:
        before = f"'## {headings[-2]}'" if len(headings) > 1 else "nothing"
        problems.append(
            f"{name}: the section before '## {exercises}' is {before}, "
            f"not '## {summary}'"
        )
    elif not sections[-2][2]:
        problems.append(f"{name}: '## {summary}' (line {sections[-2][0]}) is empty")
    for line, heading, _ in sections[:-2]:
        if heading in (summary, exercises):
            problems.append(f"{name}: a second '## {heading}' at line {line}")
    return problems


def frame_problems(docs: Path) -> list[str]:
    """Every framed chapter's problems, both editions, as ``lang/page: ...``."""
    problems = []
    for lang in LANGS:
        for path in sorted((docs / lang).glob("*.md")):
            m = CHAPTER.match(path.name)
            if m and int(m.group(1)) >= FIRST_FRAMED:
                problems += [f"{lang}/{p}" for p in chapter_frame_problems(path, lang)]
    return problems


def book_frame_problems(docs: Path) -> list[str]:
    """The gate before a build: :func:`frame_problems` for the book, whose index
    writes its contents from the map of the book; a scratch book of the tests
    (its own toctree and pages) has no chapters to frame."""
    from .check_pages import written_from_map

    return frame_problems(docs) if written_from_map(docs) else []


def main(argv: list[str]) -> int:
    return gate_main(frame_problems, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
