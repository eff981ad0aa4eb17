"""Sphinx extension: which pages execute again, and which come from the cache.

myst-nb stores each edition's executed notebooks in a jupyter-cache folder
(``_build/jupyter_cache/<lang>-<digest>``), and serves a page from it while
its code cells are unchanged. The folder is keyed on what every page shares
(:func:`execution_digest`: the locked versions, the kernels' environment,
Python). Each page is also keyed on the package code it runs
(:func:`page_digest`: the mha_book modules its cells import, followed
through the package's imports, read without comments and docstrings, by
:mod:`mha_book._digest`). The digest a page's stored outputs were made with
is kept beside them (``page-digests.json``); when a page's digest changes,
its stored notebook is dropped and Sphinx reads the page again, so it
executes; no other page does.

A damaged cache heals (:func:`heal_cache`): what cannot be read is dropped
and executes again.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Tests build small books elsewhere by setting MHA_BOOK_BUILD_DIR.
BUILD = Path(os.environ.get("MHA_BOOK_BUILD_DIR", ROOT / "_build"))
# Executed notebooks, keyed by digest; a partial build shares the full build's.
EXEC_CACHE = Path(os.environ.get("MHA_BOOK_EXEC_CACHE", BUILD / "jupyter_cache"))


def selected_pages() -> set[str] | None:
    """The pages a partial build executes (``MHA_BOOK_PAGES``), or None: all."""
    pages = os.environ.get("MHA_BOOK_PAGES")
    return set(pages.split(",")) if pages else None


# --- the cache folder: the environment the kernels run in -------------------
def execution_digest(root: Path = ROOT) -> str:
    """Digest of what every page's execution shares: the locked versions, the
    kernels' environment and the Python version
    (:func:`tools.build.environment_key.environment_digest`).

    The package's code is not in it: each page is keyed on the code it
    imports (:func:`page_digest`), so an edit to one module executes only
    the pages that import it.
    """
    from tools.build.environment_key import environment_digest

    return environment_digest(root, sys.version)[:16]


def execution_cache_path(lang: str) -> str:
    """Return this language's cache directory for the current environment digest.

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


# --- each page: the package code it runs ---------------------------------------
DIGESTS_FILE = "page-digests.json"  # in the cache folder: page -> digest of its outputs


def page_digest(cells: list[str]) -> str:
    """The digest of the package code a page's cells run, with the startup file's."""
    from mha_book._cell_imports import cell_imports
    from mha_book._digest import code_digest, resolve

    names, docstrings = cell_imports(cells)
    if names is None:
        return code_digest(None, docstrings=docstrings)
    modules = resolve(names) | {"mha_book.book"}  # every kernel's startup imports it
    return code_digest(sorted(modules), docstrings=docstrings)


def notebook_cells(path: Path) -> list[str] | None:
    """The code cells of a MyST notebook page; None for a page without code."""
    from myst_nb.core.read import is_myst_markdown_notebook, read_myst_markdown_notebook

    text = path.read_text(encoding="utf-8")
    if not is_myst_markdown_notebook(text):
        return None
    cells = read_myst_markdown_notebook(text).cells
    return [c.source for c in cells if c.cell_type == "code"] or None


def _recorded(cache: Path) -> dict[str, str]:
    """The digests the stored pages were made with; {} for a missing file, and
    for a damaged one, which heals with a one-line notice."""
    from tools.build.common import read_record

    recorded = read_record(
        cache / DIGESTS_FILE, {}, healing="every page of this edition executes again"
    )
    return {str(k): str(v) for k, v in recorded.items()}


def drop_cached(cache: Path, sources: list[Path]) -> None:
    """Remove the stored notebooks of these pages, so that they execute again."""
    from jupyter_cache.cache.main import JupyterCacheBase

    wanted = {str(Path(s).resolve()) for s in sources}
    if not wanted or not cache.is_dir():
        return
    store = JupyterCacheBase(str(cache))
    for record in store.list_cache_records():
        if str(Path(record.uri).resolve()) in wanted:
            try:
                store.remove_cache(record.pk)
            except KeyError:  # its notebook file was already gone
                from jupyter_cache.cache.db import NbCacheRecord

                NbCacheRecord.remove_records([record.pk], store.db)


def _stale_pages(app, env, added, changed, removed) -> list[str]:
    """Sphinx's ``env-get-outdated``: the pages whose code's digest changed.

    Their stored notebooks are dropped and they are read again, so they
    execute; a page whose digest is the one its outputs were made with is
    left alone, even after an edit elsewhere in the package.
    """
    cache, pages = Path(app.config.nb_execution_cache_path), selected_pages()
    recorded, digests = _recorded(cache), {}
    app.book_recorded_digests = recorded  # _record_digests adds to them
    for docname in sorted(env.found_docs):
        if pages is not None and docname not in pages:
            continue  # a partial build leaves the other pages as they are
        cells = notebook_cells(Path(env.doc2path(docname)))
        if cells is not None:
            digests[docname] = page_digest(cells)
    app.book_page_digests = digests
    stale = sorted(d for d, digest in digests.items() if recorded.get(d) != digest)
    drop_cached(cache, [Path(env.doc2path(d)) for d in stale])
    return [d for d in stale if d not in added and d not in changed]


def _record_digests(app, exception) -> None:
    """Keep the digest of every page this build executed successfully."""
    from myst_nb.sphinx_ import NbMetadataCollector

    digests = getattr(app, "book_page_digests", {})
    started = getattr(app.env, "book_build_started", float("inf"))
    cache = Path(app.config.nb_execution_cache_path)
    recorded = getattr(app, "book_recorded_digests", None)
    if recorded is None:  # (the outdated pages were not looked for)
        recorded = _recorded(cache)
    for docname, digest in digests.items():
        data = NbMetadataCollector.get_exec_data(app.env, docname) or {}
        if data.get("succeeded") and data.get("mtime", 0) >= started:
            recorded[docname] = digest
    if cache.is_dir():
        target = cache / DIGESTS_FILE
        tmp = target.with_suffix(".tmp")
        tmp.write_text(json.dumps(recorded, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, target)


def setup(app):
    app.connect("env-get-outdated", _stale_pages)
    app.connect("build-finished", _record_digests)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
