"""Read a MyST notebook page into the parts the book's gates compare.

A page is parsed with the same markdown-it parser (and MyST extensions) that
Sphinx uses, so a ``# comment`` inside a code cell is never a heading and a
fence inside a directive is never prose. Directives whose body is Markdown
(admonitions, figure captions, exercises) are parsed again, recursively.

What a page yields (see ``Page``):

* ``code_cells``: the bodies of its ``{code-cell}`` fences, options included;
* ``structure``: headings (level), labels, code-cell positions, directives
  (name, and the argument where it does not depend on the language), math
  blocks and glossary entries, in document order, each with its line;
* ``inline``: the multiset of glue keys and citation keys the prose uses;
* ``paragraphs``: the prose of each paragraph, heading, list item or table
  cell as (line, text, roles), with code, math and roles taken out of the text.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

MYST_EXTENSIONS = {"dollarmath", "amsmath", "colon_fence", "deflist"}
# Directives whose body is Markdown prose (parsed again for structure and prose).
PROSE_DIRECTIVES = {
    "note",
    "tip",
    "hint",
    "important",
    "warning",
    "caution",
    "attention",
    "danger",
    "error",
    "seealso",
    "admonition",
    "glue:figure",
    "figure",
    "exercise",
    "solution",
    "epigraph",
    "topic",
    "sidebar",
}
# Directives whose argument names a file, key or label (the same in both editions).
KEYED_DIRECTIVES = {
    "glue:figure",
    "glue",
    "literalinclude",
    "include",
    "figure",
    "image",
    "bibliography",
    "solution",
    "solution-start",
}
INLINE_KEYED_ROLES = ("glue", "cite", "eq", "numref")
CITE_ROLE = re.compile(r"^cite(:\w+)?$")


@dataclass
class Item:
    """One structural element of a page."""

    kind: str
    detail: str
    line: int

    def describe(self) -> str:
        return f"{self.kind} {self.detail}".strip() + f" (line {self.line})"


@dataclass
class Paragraph:
    """A run of prose: its text without code, math or roles, and the roles it holds."""

    line: int
    text: str
    roles: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Page:
    code_cells: list[str] = field(default_factory=list)
    structure: list[Item] = field(default_factory=list)
    inline: Counter = field(default_factory=Counter)
    paragraphs: list[Paragraph] = field(default_factory=list)


@functools.cache
def _parser():
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    return create_md_parser(
        MdParserConfig(enable_extensions=MYST_EXTENSIONS), RendererHTML
    )


def _directive(info: str) -> tuple[str, str] | None:
    """``{name} argument`` -> (name, argument); None for a plain code fence."""
    m = re.match(r"^\{([\w:.-]+)\}\s*(.*)$", info.strip())
    return (m.group(1), m.group(2).strip()) if m else None


def _split_options(body: str) -> tuple[dict[str, str], str]:
    """Split a directive body into its ``:key: value`` options and the rest."""
    options, lines = {}, body.split("\n")
    i = 0
    if lines and lines[0].strip() == "---":  # YAML option block
        end = lines.index("---", 1) if "---" in lines[1:] else 0
        for line in lines[1:end]:
            key, _, value = line.partition(":")
            options[key.strip()] = value.strip()
        i = end + 1
    while i < len(lines) and re.match(r"^:[\w-]+:", lines[i]):
        key, _, value = lines[i][1:].partition(":")
        options[key.strip()] = value.strip()
        i += 1
    return options, "\n".join(lines[i:])


def _shown_text(role: str, content: str) -> str:
    """The words a cross-reference role shows the reader (other roles: a space)."""
    if role in ("term", "ref", "doc"):
        m = re.match(r"^(.*?)\s*<[^<>]+>$", content, re.S)
        return m.group(1) if m else (content if role == "term" else " ")
    return " "


def _inline(tok, line: int) -> Paragraph:
    text, roles = [], []
    for child in tok.children or []:
        if child.type == "text":
            text.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            text.append("\n")
        elif child.type == "myst_role":
            name = child.meta.get("name", "")
            roles.append((name, child.content))
            text.append(_shown_text(name, child.content))
        elif child.type in ("code_inline", "math_inline"):
            text.append(" ")
    return Paragraph(line, "".join(text), roles)


def _walk(text: str, page: Page, offset: int) -> None:
    for tok in _parser().parse(text):
        line = (tok.map[0] if tok.map else 0) + offset + 1
        if tok.type == "heading_open":
            page.structure.append(Item("heading", tok.tag, line))
        elif tok.type == "myst_target":
            page.structure.append(Item("label", tok.content, line))
        elif tok.type == "math_block" or tok.type == "amsmath":
            page.structure.append(Item("math", "", line))
        elif tok.type == "inline":
            para = _inline(tok, line)
            page.paragraphs.append(para)
            for name, content in para.roles:
                if name.startswith(INLINE_KEYED_ROLES):
                    page.inline[f"{name}:{content.strip()}"] += 1
        elif tok.type in ("fence", "colon_fence"):
            _fence(tok, page, line)


def _fence(tok, page: Page, line: int) -> None:
    parsed = _directive(tok.info)
    if parsed is None:
        return  # a plain code block
    name, arg = parsed
    if name == "code-cell":
        page.code_cells.append(tok.content.strip())
        page.structure.append(Item("code-cell", str(len(page.code_cells)), line))
        return
    options, body = _split_options(tok.content)
    detail = name + (f" {arg}" if name in KEYED_DIRECTIVES and arg else "")
    page.structure.append(Item("directive", detail, line))
    for key in ("name", "label"):  # figures name themselves, exercises label
        if key in options:
            page.structure.append(Item("label", options[key], line))
    if "class" in options:  # e.g. a solution collapsed as a dropdown
        page.structure.append(Item("class", options["class"], line))
    body_offset = line + tok.content.count("\n") - body.count("\n")
    if name == "glossary":
        # One entry per unindented line; the definitions are prose.
        for i, entry in enumerate(body.split("\n")):
            if entry.strip() and not entry[0].isspace():
                page.structure.append(Item("glossary-entry", "", body_offset + i))
        page.paragraphs.extend(
            Paragraph(body_offset + i, entry)
            for i, entry in enumerate(body.split("\n"))
            if entry.strip()
        )
    elif name in PROSE_DIRECTIVES:
        if name in ("admonition", "exercise") and arg:  # the title is prose
            page.paragraphs.append(Paragraph(line, arg))
        _walk(body, page, body_offset - 1)
        page.structure.append(Item("end", name, line))


def read_page(path: Path) -> Page:
    """Parse one MyST page (front matter skipped by the parser)."""
    page = Page()
    _walk(path.read_text(encoding="utf-8"), page, 0)
    return page


def is_citation(role: str) -> bool:
    return bool(CITE_ROLE.match(role))
