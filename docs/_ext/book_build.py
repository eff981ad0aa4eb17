"""Sphinx extension with the book's build machinery.

* ``execution_cache_path``: the myst-nb cache directory, keyed by a digest of
  the ``mha_book`` sources and the locked dependency versions, so a change to
  the package re-executes every page while a rebuild with no change executes
  nothing.
* ``ChineseQuerySearch``: Chinese search that also segments the reader's
  query in the browser (greedy longest match against the index), so
  多头注意力 typed without spaces finds the pages that contain it.
* kernels over Unix sockets (``transport = "ipc"``) instead of TCP ports.
* the attention explorer's files (``mha_book/viz/static``) on the pages that use it.
* images after a page's first load lazily (``loading="lazy"``).
* the execution report: after each build, ``_build/exec/<lang>.json`` lists
  every page's last execution (runtime, method) and whether this build read it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path

from docutils import nodes
from sphinx.search.zh import SearchChinese

ROOT = Path(__file__).resolve().parents[2]
# Tests build small books elsewhere by setting MHA_BOOK_BUILD_DIR.
BUILD = Path(os.environ.get("MHA_BOOK_BUILD_DIR", ROOT / "_build"))
# Executed notebooks, keyed by digest; a partial build shares the full build's.
EXEC_CACHE = Path(os.environ.get("MHA_BOOK_EXEC_CACHE", BUILD / "jupyter_cache"))


def selected_pages() -> set[str] | None:
    """The pages a partial build executes (``MHA_BOOK_PAGES``), or None: all."""
    pages = os.environ.get("MHA_BOOK_PAGES")
    return set(pages.split(",")) if pages else None


# --- cache key -------------------------------------------------------------
def execution_digest(root: Path = ROOT) -> str:
    """Digest of everything that can change what a code cell prints."""
    h = hashlib.sha256()
    package = (root / "mha_book").rglob("*")  # its sources and its data
    files = sorted(p for p in package if p.is_file() and "__pycache__" not in p.parts)
    # The locked versions; the build script sets the kernels' environment.
    files += sorted((root / "requirements").glob("*.txt"))
    files += [
        root / "pyproject.toml",
        root / "tools" / "build_book.py",
    ]
    for path in files:
        h.update(path.relative_to(root).as_posix().encode())
        h.update(path.read_bytes())
    h.update(sys.version.encode())
    return h.hexdigest()[:16]


def execution_cache_path(lang: str) -> str:
    """Return this language's cache directory for the current package digest.

    Nothing is deleted here: another build may be using an older cache. The
    build script keeps the few most recently used caches per language and
    prunes the rest after a successful build (``tools/build_book.py``), so an
    edit-and-revert or a branch switch finds its cache again.
    """
    current = EXEC_CACHE / f"{lang}-{execution_digest()}"
    for note in heal_cache(current):
        print(f"WARNING (healed): {note}", flush=True)  # a notice, not a Sphinx warning
    current.mkdir(parents=True, exist_ok=True)
    os.utime(current)  # "used now": pruning keeps the most recently used
    return str(current)


def heal_cache(path: Path) -> list[str]:
    """Drop what is broken in a jupyter-cache folder; say what was dropped.

    A damaged database loses the whole cache (every page of that edition runs
    again); a cached notebook that is missing or unreadable loses its record
    (that page runs again). Without this, each later build would fail until
    the cache was deleted by hand.
    """
    import nbformat
    from jupyter_cache.cache.db import NbCacheRecord
    from jupyter_cache.cache.main import JupyterCacheBase

    if not path.is_dir():
        return []
    try:
        cache = JupyterCacheBase(str(path))
        records = cache.list_cache_records()
    except Exception as err:  # sqlite says "file is not a database", and the like
        shutil.rmtree(path, ignore_errors=True)
        return [
            f"execution cache {path.name} was unreadable ({type(err).__name__}); "
            "every page of this edition runs again"
        ]
    notes = []
    for record in records:
        notebook = path / "executed" / record.hashkey / "base.ipynb"
        try:
            nbformat.reads(notebook.read_text(encoding="utf8"), nbformat.NO_CONVERT)
            continue
        except Exception as err:
            why = (
                "missing"
                if not notebook.exists()
                else f"unreadable ({type(err).__name__})"
            )
        shutil.rmtree(notebook.parent, ignore_errors=True)
        NbCacheRecord.remove_records([record.pk], cache.db)
        notes.append(
            f"cached notebook of {Path(record.uri).stem} was {why}; it runs again"
        )
    return notes


# --- Chinese search --------------------------------------------------------
SPLIT_QUERY_JS = r"""
function splitQuery(query) {
  const index = (typeof Search !== "undefined" && Search._index) ? Search._index : null;
  const has = (obj, w) => obj && Object.prototype.hasOwnProperty.call(obj, w);
  const known = (w) => index && (has(index.terms, w) || has(index.titleterms, w));
  const out = [];
  const parts = query.split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)
    .filter((t) => t);
  for (const part of parts) {
    for (const run of part.match(/\p{Script=Han}+|[^\p{Script=Han}]+/gu) || []) {
      if (!/\p{Script=Han}/u.test(run) || !index) { out.push(run); continue; }
      // Greedy longest match against the words the index holds.
      let i = 0;
      while (i < run.length) {
        let j = run.length;
        while (j > i + 1 && !known(run.slice(i, j))) j--;
        const word = run.slice(i, j);
        if (j > i + 1 || known(word)) out.push(word);
        i = j;
      }
    }
  }
  return out;
}
"""


class ChineseQuerySearch(SearchChinese):
    """Chinese search whose browser side segments queries typed without spaces."""

    js_splitter_code = SPLIT_QUERY_JS
    # Sphinx 9.0 ships english-stemmer.js for Chinese (Latin words are stemmed
    # as English) but then sets ``window.Stemmer = ChineseStemmer``, which does
    # not exist: every search dies with "Stemmer is not defined". Naming the
    # stemmer after the code that is really shipped fixes it.
    language_name = "English"


# --- execution report ------------------------------------------------------
def _note_read(app, env, docnames):
    env.book_read_this_build = sorted(docnames)
    env.book_build_started = time.time()


def _write_exec_report(app, exception):
    if exception is not None:
        return
    from myst_nb.sphinx_ import NbMetadataCollector

    read = set(getattr(app.env, "book_read_this_build", []))
    started = getattr(app.env, "book_build_started", float("inf"))
    pages = {}
    for docname in sorted(app.env.found_docs):
        data = NbMetadataCollector.get_exec_data(app.env, docname)
        if data is None:
            continue
        pages[docname] = {
            "runtime": data.get("runtime"),
            "method": data.get("method"),
            "succeeded": data.get("succeeded"),
            "read_this_build": docname in read,
            # A cache hit reports the time its entry was made, before this build.
            "executed_this_build": docname in read and data.get("mtime", 0) >= started,
        }
    out = BUILD / "exec" / f"{app.config.language.split('_')[0]}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(pages, indent=1), encoding="utf-8")


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
    nbformat.write(read_myst_markdown_notebook(text), str(target))
    context["ipynb_source"] = f"{pagename}.ipynb"


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


# --- stderr shown in the build log ------------------------------------------
def _report_stderr(app, doctree):
    """Say what a cell wrote to stderr (myst-nb's own warning only counts it)."""
    from sphinx.util import logging as sphinx_logging

    logger = sphinx_logging.getLogger(__name__)
    for node in doctree.findall(nodes.Element):
        if "stderr" not in node["classes"]:
            continue
        text = node.astext().strip()
        from book_progress import font_hint

        hint = font_hint(text)
        message = f"a code cell wrote to stderr:\n{text[:2000]}"
        logger.warning(message + (f"\n{hint}" if hint else ""), location=node)


# --- quoted literature figures ---------------------------------------------
def lit_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{lit}`40–80 GB``` marks a figure quoted from a paper, not measured here.

    It renders as plain text; ``tools/check_prose.py`` requires a citation in
    the same paragraph, and lets no other typed measurement through.
    """
    return [nodes.inline(rawtext, text, classes=["lit"])], []


# --- kernel transport -------------------------------------------------------
# jupyter_client gives a TCP kernel five ports by binding port 0, reading the
# number and releasing it; the kernel binds it a moment later. The other
# edition starts kernels at the same time, and a port it takes in between
# leaves a kernel that never answers its heartbeat (a build once waited on
# one forever). Unix sockets (jupyter_client's transport "ipc") are files, and
# a file named after a fresh id cannot collide. myst-nb builds the kernel
# manager without any configuration, so the transport is set on it here, in
# nbclient's public create_kernel_manager. The socket path must be absolute:
# jupyter_client's default, "kernel-ipc", is relative, and the kernel runs in
# the page's folder while the client stays in the build's. A socket path must
# stay under ~100 bytes; with a longer runtime folder, or with
# MHA_BOOK_KERNEL_TRANSPORT=tcp, kernels keep TCP.
MAX_SOCKET_DIR = 50  # + "/kernel-<36-char id>-ipc-<n>" stays under 104 bytes


def use_ipc_kernels() -> bool:
    """Make myst-nb's kernels use Unix sockets where that is safe; say whether it did."""
    import uuid

    from jupyter_core.paths import jupyter_runtime_dir
    from nbclient import NotebookClient

    runtime = jupyter_runtime_dir()
    if os.name != "posix" or os.environ.get("MHA_BOOK_KERNEL_TRANSPORT") == "tcp":
        return False
    if len(runtime) > MAX_SOCKET_DIR or hasattr(NotebookClient, "_mha_book_ipc"):
        return False
    create = NotebookClient.create_kernel_manager

    def create_kernel_manager(self):
        km = create(self)
        km.transport = "ipc"
        km.ip = os.path.join(runtime, f"kernel-{uuid.uuid4()}-ipc")  # absolute
        return km

    NotebookClient.create_kernel_manager = create_kernel_manager
    NotebookClient._mha_book_ipc = True
    return True


# --- executed notebooks outside the site ----------------------------------------
def _own_output_folder(app):
    """Give each edition its own folder for myst-nb's executed notebooks.

    myst-nb writes them (and their image outputs) to ``jupyter_execute`` beside
    the output directory: ``_build/html/jupyter_execute``, one folder for both
    editions building at once, inside the published site. Runs after myst-nb's
    own ``builder-inited`` handler, which sets that folder.
    """
    folder = BUILD / "jupyter_execute" / app.config.language
    config = {"output_folder": str(folder)}
    pages = selected_pages()
    if pages is not None:  # a partial build reads every page, executes these
        srcdir = Path(app.srcdir)
        config["execution_excludepatterns"] = [
            str(path)
            for path in sorted(srcdir.rglob("*.md"))
            if path.relative_to(srcdir).with_suffix("").as_posix() not in pages
        ]
    app.env.mystnb_config = app.env.mystnb_config.copy(**config)


# --- printed output ---------------------------------------------------------
# myst-nb joins a cell's stream outputs (nb_merge_streams) by stripping each
# later chunk's trailing whitespace and adding a newline. A print whose text
# reaches the notebook in two messages, which happens when the machine is busy
# ("pixels  " then "(3, 224, 224)"), is then shown on two lines, and the page
# differs from build to build. The chunks are pieces of one stream: this joins
# them as they came, and keeps the rest of myst-nb's merge (a line rewritten
# after a carriage return shows once; stdout comes before stderr).
def join_streams(outputs: list) -> list:
    """A cell's outputs with each stream's chunks joined into its first one."""
    from myst_nb.core import utils

    joined, streams = [], {}
    for output in outputs:
        if output["output_type"] != "stream":
            joined.append(output)
        elif output["name"] in streams:
            streams[output["name"]]["text"] += output["text"]
        else:  # a copy: the executed notebook the build saves keeps its chunks
            streams[output["name"]] = type(output)(output)
            joined.append(streams[output["name"]])
    for output in streams.values():  # a line rewritten after "\r" shows once
        text = utils._RGX_CARRIAGERETURN.sub("", output["text"])
        output["text"] = text.rstrip() + "\n"
    for i, output in enumerate(joined[:-1]):  # stdout before stderr, as myst-nb does
        after = joined[i + 1]
        if output["output_type"] == after["output_type"] == "stream":
            if output["name"] == "stderr" and after["name"] == "stdout":
                joined[i], joined[i + 1] = after, output
    return joined


def use_joined_streams() -> None:
    from myst_nb.core import render

    render.coalesce_streams = join_streams


def setup(app):
    use_ipc_kernels()
    use_joined_streams()
    app.connect("builder-inited", _own_output_folder, priority=900)
    try:
        import jieba

        jieba.setLogLevel(logging.WARNING)
    except ImportError:  # pragma: no cover
        pass
    app.add_search_language(ChineseQuerySearch)
    app.add_role("lit", lit_role)
    app.connect("env-before-read-docs", _note_read)
    app.connect("doctree-read", _report_stderr)
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
    app.connect("build-finished", _write_exec_report)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
