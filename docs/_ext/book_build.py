"""Sphinx extension: how the book's pages execute.

* ``execution_cache_path``: the myst-nb cache directory, keyed by a digest of
  the ``mha_book`` sources and the locked dependency versions, so a change to
  the package re-executes every page while a rebuild with no change executes
  nothing; a damaged cache heals (``heal_cache``).
* kernels over Unix sockets (``transport = "ipc"``) instead of TCP ports.
* each edition's executed notebooks in a folder of its own, outside the site;
  a partial build executes only the selected pages.
* a cell's printed output joined as it came (``join_streams``), and what a
  cell writes to stderr reported in the build log.
* the execution report: after each build, ``_build/exec/<lang>.json`` lists
  every page's last execution (runtime, method) and whether this build read it.

What the HTML pages get is in ``book_pages``; the Chinese search in
``book_search``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path

from docutils import nodes

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
    # The locked versions, and the file that sets the kernels' environment.
    files += sorted((root / "requirements").glob("*.txt"))
    files += [
        root / "pyproject.toml",
        root / "tools" / "build" / "editions.py",
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
    app.connect("env-before-read-docs", _note_read)
    app.connect("doctree-read", _report_stderr)
    app.connect("build-finished", _write_exec_report)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
