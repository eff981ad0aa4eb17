"""The book's table of contents and lists of chapters, from one map.

``mha_book.book_map`` holds the parts, the chapters and which chapter needs
which. The directive ``book-map`` writes what a page shows of it, in the
edition's language, as MyST that the page then parses (so its links are
checked like any other):

- ``contents``: the sidebar, one hidden toctree per part with the part's
  title as its ``:caption:`` (and the API, glossary and references last);
  the PDF editions follow the sidebar (``tools/build_pdf.py``).
- ``parts``: each part's title, its chapters and the sentence on what a
  reader can do after it (the index).
- ``next``: the chapters after ``:after:``, part by part, each with what it
  does (chapter 09).
- ``path``: the chapters after ``:after:`` in an order that reads each after
  the chapters it needs, with those chapters (chapter 08).

No list of chapters is typed into a page: a new chapter is one entry of
``mha_book.book_map.CHAPTERS``.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from mha_book import book_map

KINDS = ("contents", "parts", "next", "path")


def _lang(config_language: str) -> str:
    return "zh" if config_language.startswith("zh") else "en"


def _ref(c: book_map.Chapter, lang: str) -> str:
    """A link to chapter ``c`` that names it by number."""
    label = f"第 {c.number} 章" if lang == "zh" else f"Chapter {c.number}"
    return f"[{label}]({c.slug}.md)"


def _titled(c: book_map.Chapter, lang: str) -> str:
    """A link to chapter ``c`` that shows its number and title."""
    title = book_map.text(c.title, lang)
    sep = "　" if lang == "zh" else " "
    return f"[{c.number:02d}{sep}{title}]({c.slug}.md)"


def _list(items, lang: str) -> str:
    """Chapter references joined as prose: "A, B and C" / "A、B 和 C"."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    if lang == "zh":
        return "、".join(items[:-1]) + " 和 " + items[-1]
    return ", ".join(items[:-1]) + " and " + items[-1]


def contents_markdown(lang: str) -> list[str]:
    """The hidden, captioned toctrees of the sidebar.

    >>> lines = contents_markdown("en")
    >>> lines[:4]
    ['```{toctree}', ':caption: Part I: From the Formula to a Checked Module', ':hidden:', ':maxdepth: 1']
    >>> lines.count('```{toctree}') == len(book_map.PARTS) + 1
    True
    """
    lines: list[str] = []
    groups = [
        (book_map.text(p.title, lang), [c.slug for c in book_map.chapters_in(p.key)])
        for p in book_map.PARTS
    ]
    groups.append(
        (book_map.text(book_map.BACK_MATTER_CAPTION, lang), list(book_map.BACK_MATTER))
    )
    for caption, docs in groups:
        lines += [
            "```{toctree}",
            f":caption: {caption}",
            ":hidden:",
            ":maxdepth: 1",
            "",
        ]
        lines += [*docs, "```", ""]
    return lines


def parts_markdown(lang: str) -> list[str]:
    """Each part: its title and chapters, then what a reader can do after it.

    >>> print(parts_markdown("en")[-4])
    - [14 Where Am I? Positions in Attention](14-positions.md)
    """
    lines: list[str] = []
    for p in book_map.PARTS:
        lines += [f"**{book_map.text(p.title, lang)}**", ""]
        lines += [f"- {_titled(c, lang)}" for c in book_map.chapters_in(p.key)]
        lines += [""]
        lines += [book_map.text(p.after, lang), ""]
    return lines


def next_markdown(lang: str, after: int) -> list[str]:
    """The chapters after ``after``, part by part, with what each does.

    >>> print(next_markdown("en", 9)[2].split(")")[0])
    - **[Chapter 10](10-decoder-char-lm.md
    """
    lines: list[str] = []
    for p in book_map.PARTS:
        chapters = [c for c in book_map.chapters_in(p.key) if c.number > after]
        if not chapters:
            continue
        lines += [f"**{book_map.text(p.title, lang)}**", ""]
        for c in chapters:
            title = book_map.text(c.title, lang)
            summary = book_map.text(c.summary, lang)
            if lang == "zh":
                lines.append(f"- **{_ref(c, lang)}**（{title}）：{summary}")
            else:
                lines.append(f"- **{_ref(c, lang)}** ({title}). {summary}")
        lines += ["", book_map.text(p.after, lang), ""]
    return lines


def path_markdown(lang: str, after: int) -> list[str]:
    """The chapters after ``after`` in reading order, each with what it needs.

    >>> print(path_markdown("en", 9)[0])
    1. [10 A Causal Decoder That Writes Shakespeare](10-decoder-char-lm.md), after chapter 6.
    """
    lines = []
    for i, c in enumerate(book_map.reading_order(after), start=1):
        needs = [f"{n}" for n in c.needs]
        if lang == "zh":
            lines.append(f"{i}. {_titled(c, lang)}，先读第 {'、'.join(needs)} 章。")
        else:
            word = "chapter" if len(needs) == 1 else "chapters"
            lines.append(f"{i}. {_titled(c, lang)}, after {word} {_list(needs, lang)}.")
    return lines + [""]


def kind_markdown(kind: str, lang: str, after: int = 0) -> list[str]:
    """What ``book-map`` KIND writes, as MyST lines."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return {
        "contents": lambda: contents_markdown(lang),
        "parts": lambda: parts_markdown(lang),
        "next": lambda: next_markdown(lang, after),
        "path": lambda: path_markdown(lang, after),
    }[kind]()


DIRECTIVE = re.compile(
    r"^(`{3,})\{book-map\}\s+(\w+)\s*\n((?::[\w-]+:.*\n)*)\1[ \t]*$", re.M
)


def expand(text: str, lang: str) -> str:
    """``text`` (a Markdown cell) with each ``book-map`` directive written out,
    for a downloaded notebook, which has no Sphinx to run it; the contents'
    toctrees are left out.

    >>> print(expand("Next:\\n\\n```{book-map} path\\n:after: 17\\n```\\n", "en"))
    Next:
    <BLANKLINE>
    1. [18 What Several Heads Buy](18-what-heads-buy.md), after chapters 15, 16 and 17.
    2. [19 Heads That Work Together: Induction Heads](19-induction-heads.md), after chapters 15 and 18.
    3. [20 Heads That Look: a Vision Transformer on Real Handwritten Digits](20-vision-transformer.md), after chapters 11 and 18.
    <BLANKLINE>
    """

    def written(m: re.Match) -> str:
        kind = m.group(2)
        if kind == "contents":
            return ""
        after = re.search(r":after:\s*(\d+)", m.group(3))
        lines = kind_markdown(kind, lang, int(after.group(1)) if after else 0)
        return "\n".join(lines).rstrip("\n")

    return DIRECTIVE.sub(written, text)


class BookMap(SphinxDirective):
    """``book-map`` KIND (contents, parts, next or path), with ``:after: NN``."""

    required_arguments = 1
    option_spec = {"after": directives.nonnegative_int}

    def run(self) -> list[nodes.Node]:
        kind = self.arguments[0]
        if kind not in KINDS:
            raise self.error(f"book-map: the kind must be one of {KINDS}, got {kind!r}")
        lang = _lang(self.config.language)
        lines = kind_markdown(kind, lang, self.options.get("after", 0))
        # The page depends on the map: a change to it reads the page again.
        for path in _map_files():
            self.env.note_dependency(str(path))
        container = nodes.container(classes=["book-map", f"book-map-{kind}"])
        self.state.nested_parse(
            StringList(lines, source=self.get_source_info()[0]),
            self.content_offset,
            container,
        )
        return container.children if kind == "contents" else [container]


def _map_files() -> list[Path]:
    """The map's code and its data (``mha_book/data/book_map.toml``)."""
    code = Path(book_map.__file__)
    return [code, code.parent / "data" / "book_map.toml"]


def _map_digest() -> str:
    import hashlib

    h = hashlib.sha256()
    for path in _map_files():
        h.update(path.read_bytes())
    return h.hexdigest()


def _sidebar_outdated(app, env, added, changed, removed):
    """Sphinx's ``env-get-outdated``: every page, when the map changed.

    Every page's sidebar is the index's toctrees, which the map writes; Sphinx
    writes again only the pages it reads again, so a changed map (a new
    chapter, a part renamed) reads them all (their outputs come from the
    execution cache).
    """
    digest = _map_digest()
    before = getattr(env, "book_map_digest", None)
    env.book_map_digest = digest
    if before == digest:
        return []  # (an environment from before the map reads everything once)
    return sorted(env.found_docs - added - changed - removed)


def setup(app):
    app.add_directive("book-map", BookMap)
    app.connect("env-get-outdated", _sidebar_outdated)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
