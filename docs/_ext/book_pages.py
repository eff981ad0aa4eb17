"""What every HTML page of the book gets beyond Sphinx's own.

The notebook download, the explorer's files where a page shows one, lazy and
density-sized figures, the theme's buttons in the page's language, the
edition's PDF in the download menu, accessible collapsed cells and
bibliography entries, no machine paths in the outputs, the ``lit`` role, and
(through ``book_toc``) the table of contents in parts.
"""

from __future__ import annotations

import sys
from pathlib import Path

from docutils import nodes

ROOT = Path(__file__).resolve().parents[2]


# --- notebook downloads ------------------------------------------------------
def _offer_notebook(app, pagename, templatename, context, doctree):
    """Write the page as a Jupyter notebook next to its MyST source.

    sphinx-book-theme lists ``ipynb_source`` in the page's download menu.
    """
    if doctree is None or pagename not in app.env.found_docs:
        return
    import nbformat
    from myst_nb.core.read import is_myst_markdown_notebook, read_myst_markdown_notebook

    text = Path(app.env.doc2path(pagename)).read_text(encoding="utf-8")
    if not is_myst_markdown_notebook(text):
        return
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    notebook = for_download(read_myst_markdown_notebook(text), app.config.language)
    nbformat.write(notebook, str(target))
    context["ipynb_source"] = f"{pagename}.ipynb"


# The first cell of every downloaded notebook: the build never runs it.
SETUP_CELL = """\
# Outside the book (Jupyter, Colab): install mha-book if it is missing, at the
# version that built this page, and set the language this notebook prints in.
import importlib.util
import os
import subprocess
import sys

if importlib.util.find_spec("mha_book") is None:
    pip = [sys.executable, "-m", "pip", "install", "--quiet"]
    subprocess.check_call([*pip, "mha-book[notebook]=={version}"])
os.environ["MHA_BOOK_LANG"] = "{lang}"
"""


def for_download(notebook, language: str):
    """The page's notebook as a reader downloads it: a first cell that installs
    ``mha_book`` and sets the edition's language, both in the metadata, and
    the lists of chapters (``book-map``) written out in its Markdown.

    >>> import nbformat
    >>> nb = for_download(nbformat.v4.new_notebook(), "zh_CN")
    >>> nb.metadata["mha_book"]["language"]
    'zh'
    >>> print(nb.cells[0].source.splitlines()[-1])
    os.environ["MHA_BOOK_LANG"] = "zh"
    """
    import nbformat

    from mha_book import __version__

    lang = "zh" if language.startswith("zh") else "en"
    from book_toc import expand  # the lists of chapters, written out

    for markdown in (c for c in notebook.cells if c.cell_type == "markdown"):
        markdown.source = expand(markdown.source, lang)
    source = SETUP_CELL.format(version=__version__, lang=lang)
    cell = nbformat.v4.new_code_cell(source, metadata={"tags": ["mha-book-setup"]})
    notebook.cells.insert(0, cell)
    notebook.metadata["mha_book"] = {"language": lang, "version": __version__}
    return notebook


# --- the attention explorer's script and style, on the pages that use it ----------
EXPLORER_MARK = 'class="mha-explorer"'  # the root of mha_book.explore's HTML


def _load_explorer(app, pagename, templatename, context, doctree):
    """Load ``explorer.js`` and ``explorer.css`` (from ``mha_book/viz/static``,
    copied into ``_static`` by ``html_static_path``) on a page that shows an
    explorer; Sphinx adds a file given here to this page only. The copies that
    the widget's HTML inlines for a notebook (``AttentionExplorer._repr_html_``)
    leave the page, so each file ships once and the reader's cache keeps it.
    """
    body = context.get("body", "")
    if EXPLORER_MARK in body:
        from mha_book.viz.explorer import static_asset

        app.add_css_file("explorer.css")
        app.add_js_file("explorer.js")
        for inline in (
            f"<style>{static_asset('explorer.css')}</style>",
            f"<script>{static_asset('explorer.js')}</script>",
        ):
            body = body.replace(inline, "")
        context["body"] = body


# --- images load when the reader gets near them ----------------------------------
# How many of a page's first figures load at once. None: no chapter's first
# figure is in the first screen of a phone (the nearest, chapter 10's, starts
# about 1,900 CSS px down at 390 px; the browser test checks every figure
# against the first screen), and an eager figure below it cost a phone up to
# 89 KiB before the page was usable. A config value, so changing it rewrites
# every page (Sphinx compares the "html" config values with the last build's).
EAGER_IMAGES = 0


def _lazy_images(app, doctree, docname):
    """Mark every image of a page but the first ``book_eager_images`` lazy.

    Runs on the resolved doctree, after myst-nb has turned the cells' outputs
    into image nodes; docutils' HTML writer writes ``loading="lazy"``. The
    browser then fetches a figure only when the reader scrolls near it, so a
    page's first load carries none of the figures far below the first screen.
    """
    eager = app.config.book_eager_images
    for i, image in enumerate(doctree.findall(nodes.image)):
        if i >= eager:
            image["loading"] = "lazy"


# --- figures drawn for high-density screens are shown at their CSS size ------
def _figure_widths(app, doctree, docname):
    """Give each figure drawn at several pixels per CSS pixel its CSS width.

    ``mha_book.viz.plot.figure_png`` draws at 3 image pixels per CSS pixel and
    records the density in the PNG; the page shows the image at its width /
    density CSS px (never wider than the column: the theme's ``max-width``),
    so a phone's screen of 3 device pixels per CSS pixel gets a pixel for
    each of its own. The height follows the width.
    """
    from PIL import Image

    from mha_book.viz.plot import DENSITY_KEY

    for image in doctree.findall(nodes.image):
        uri = image.get("uri", "")
        if not uri.endswith(".png") or "width" in image or "://" in uri:
            continue
        path = (
            Path(uri)
            if Path(uri).is_absolute()
            else Path(app.env.relfn2path(uri, docname)[1])
        )
        try:
            with Image.open(path) as png:
                density = int(png.text.get(DENSITY_KEY, "1"))
                width = png.width
        except (OSError, ValueError):
            continue  # Sphinx itself reports a missing image
        if density > 1:
            image["width"] = f"{round(width / density)}px"


# --- the theme's header buttons in the page's language -------------------------
# sphinx-book-theme's own zh_CN catalogue says 列印成 PDF (Taiwanese usage).
ZH_BUTTON_LABELS = {"列印成 PDF": "打印为 PDF", "Print to PDF": "打印为 PDF"}


def _localise_header_buttons(app, pagename, templatename, context, doctree):
    if not app.config.language.startswith("zh"):
        return

    def fix(buttons):
        for button in buttons or []:
            for key in ("tooltip", "label"):
                if button.get(key) in ZH_BUTTON_LABELS:
                    button[key] = ZH_BUTTON_LABELS[button[key]]
            fix(button.get("buttons"))

    fix(context.get("header_buttons"))


# --- accessibility -------------------------------------------------------------
def _visit_collapsed_cell(self, node):
    """myst-nb's collapsed cell (hide-input), without its English ``aria-label``.

    myst-nb labels the ``<summary>`` of every collapsed cell "Toggle hidden
    content", whatever the page's language; unlabelled, a screen reader names
    it by the words it shows (``nb_code_prompt_show``: 显示代码, Show code).
    """
    from myst_nb.sphinx_ import visit_HideCellInput

    start = len(self.body)
    visit_HideCellInput(self, node)
    self.body[start:] = [
        part.replace(' aria-label="Toggle hidden content"', "")
        for part in self.body[start:]
    ]


def _citation_roles(app, pagename, templatename, context, doctree):
    """Give bibliography entries a role their list may own.

    docutils marks each citation ``role="doc-biblioentry"`` inside a
    ``role="list"``; DPUB-ARIA 1.1 deprecates that role, so a screen reader
    (and axe-core's aria-required-children, a critical violation) sees a list
    without items. ``listitem`` says what the entries are.
    """
    body = context.get("body")
    if body and 'role="doc-biblioentry"' in body:
        context["body"] = body.replace('role="doc-biblioentry"', 'role="listitem"')


BOOK_PDF_LABELS = {
    "zh": ("整本书 PDF", "下载整本书的 PDF 版"),
    "en": ("Book PDF", "Download the whole book as a PDF"),
}


def _offer_book_pdf(app, pagename, templatename, context, doctree):
    """Add the edition's PDF (``html_context["book_pdf"]``) to the download menu."""
    pdf = context.get("book_pdf")
    if not pdf:
        return
    text, tooltip = BOOK_PDF_LABELS[
        "zh" if app.config.language.startswith("zh") else "en"
    ]
    for group in context.get("header_buttons") or []:
        if group.get("label") == "download-buttons":
            group["buttons"].append(
                {
                    "type": "link",
                    "url": context["pathto"](pdf, 1),
                    "text": text,
                    "tooltip": tooltip,
                    "icon": "fas fa-book",
                    "label": "download-book-pdf-button",
                }
            )


# --- no machine paths in the published pages ----------------------------------
def machine_paths() -> list[tuple[str, str]]:
    """(absolute prefix, what the reader sees instead), longest first.

    Tracebacks name files by absolute path: the virtual environment's
    site-packages, the repository, the home folder. None of those belong to
    the reader, so pages show them relative to their environment.
    """
    import sysconfig

    pairs = {
        sysconfig.get_paths()["purelib"] + "/": ".../site-packages/",
        sysconfig.get_paths()["stdlib"] + "/": ".../python/",
        str(ROOT) + "/": "",
        sys.prefix + "/": ".../",
        str(Path.home()) + "/": "~/",
    }
    return sorted(pairs.items(), key=lambda kv: -len(kv[0]))


def _hide_machine_paths(app, doctree):
    pairs = machine_paths()
    for block in doctree.findall(nodes.literal_block):
        for text in list(block.findall(nodes.Text)):
            new = str(text)
            for path, shown in pairs:
                new = new.replace(path, shown)
            if new != str(text):
                text.parent.replace(text, nodes.Text(new))


# --- quoted literature figures ---------------------------------------------
def lit_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{lit}`40–80 GB``` marks a figure quoted from a paper, not measured here.

    It renders as plain text; ``tools/check_prose.py`` requires a citation in
    the same paragraph, and lets no other typed measurement through.
    """
    return [nodes.inline(rawtext, text, classes=["lit"])], []


def setup(app):
    # the table of contents in parts and the lists of chapters (mha_book.book_map)
    app.setup_extension("book_toc")
    app.add_role("lit", lit_role)
    app.connect("doctree-read", _hide_machine_paths)
    app.add_config_value("book_eager_images", EAGER_IMAGES, "html", types=[int])
    app.connect("doctree-resolved", _lazy_images)
    app.connect("doctree-resolved", _figure_widths)
    app.connect("html-page-context", _offer_notebook, priority=500)
    app.connect("html-page-context", _localise_header_buttons, priority=900)
    app.connect("html-page-context", _offer_book_pdf, priority=901)
    app.connect("html-page-context", _load_explorer)
    app.connect("html-page-context", _citation_roles)
    from myst_nb.sphinx_ import HideCodeCellNode, depart_HideCellInput

    app.add_node(
        HideCodeCellNode,
        override=True,
        html=(_visit_collapsed_cell, depart_HideCellInput),
    )
    return {"parallel_read_safe": True, "parallel_write_safe": True}
