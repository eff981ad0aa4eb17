"""Sphinx extension: the description a shared link shows is the page's first paragraph.

conf.py loads it, with sphinxext-opengraph and sphinx-sitemap, only when the
site's public address is set (``MHA_BOOK_BASE_URL``). sphinxext-opengraph
writes the Open Graph and Twitter card tags; by itself it describes a page
with its first 200 characters of text from the title on, which runs on into
the next paragraph or list, and joins the pieces of a Chinese sentence with
spaces. This hands it the first paragraph of the page's prose instead, as
plain text, for ``og:description`` and ``<meta name="description">`` alike.
"""

from __future__ import annotations

import html

from docutils import nodes


def first_paragraph(doctree: nodes.Node, limit: int = 200) -> str:
    """The text of the first paragraph of the page's own prose, at most ``limit`` characters.

    Paragraphs inside an admonition, a table, a list, a glossary or a cell
    output do not count: only one whose parent is a section (or the document).

    >>> from docutils.core import publish_doctree
    >>> tree = publish_doctree('''Title
    ... =====
    ...
    ... .. note:: Not this.
    ...
    ... The   first
    ... paragraph.
    ...
    ... The second.''')
    >>> first_paragraph(tree)
    'The first paragraph.'
    >>> first_paragraph(tree, limit=12)
    'The first...'
    """
    for para in doctree.findall(nodes.paragraph):
        if isinstance(para.parent, (nodes.section, nodes.document)):
            text = " ".join(para.astext().split())
            if len(text) > limit:
                text = text[: limit - 3].rstrip() + "..."
            return text
    return ""


def _describe(app, pagename, templatename, context, doctree):
    """Give sphinxext-opengraph (which runs after this) the first paragraph."""
    if doctree is None:
        return
    text = first_paragraph(doctree, app.config.ogp_description_length)
    if not text:
        return
    # The page's fields override what the extension would compute (it writes
    # them as given, escaping only quotes); copied, so the environment's own
    # metadata is left as it was.
    og = html.escape(text, quote=False)
    context["meta"] = {**(context.get("meta") or {}), "og:description": og}
    # A description tag present already keeps the extension from adding its own.
    escaped = html.escape(text, quote=True)
    context["metatags"] += f'<meta name="description" content="{escaped}" />\n'


def setup(app):
    app.setup_extension("sphinxext.opengraph")
    # sphinxext-opengraph reads the page's fields at the default priority (500).
    app.connect("html-page-context", _describe, priority=400)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
