"""Sphinx extension: the build says what it is doing and what to fix.

* Progress: a line when a page starts and when it is done (seconds, and
  whether its cells executed or came from the cache), and a line every
  ``HEARTBEAT`` seconds while one page runs, so a long build is never silent.
  The lines go to stdout; ``tools/build_book.py`` prefixes them with the
  edition's language.
* A failed page: instead of myst-nb's traceback (and Sphinx's crash report),
  one short warning per page: its source in ``docs/``, the cell that failed
  (number, line, first lines), the exception type and message, and the path
  of a log with the full traceback (``<build>/reports/<lang>/<page>.log``, as
  Jupyter Book writes ``reports/<page>.log``). A cell over the time limit
  says how long it ran and how to raise the limit. The warning fails the
  strict build, and the rest of that page's warnings (outputs it never made)
  are dropped: they follow from the one error.
* A partial build (``MHA_BOOK_PAGES``, set by ``tools/build_book.py --pages``)
  reads every page, so links and references resolve as in the full build,
  but executes only the chosen ones; the others' warnings (outputs they
  never made) are dropped.
* A page that warned (a failure included) is read again by the next build,
  changed or not, so a rebuild never hides a failure behind "unchanged".
* A figure drawn without the book's CJK font: matplotlib's "Glyph ...
  missing from font" on stderr gets the rule that fixes it.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from pathlib import Path

from sphinx.util import logging as sphinx_logging

logger = sphinx_logging.getLogger(__name__)

HEARTBEAT = 30.0  # seconds between "still running" lines
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
FONT_RULE = (
    "matplotlib drew Chinese text without the book's CJK font. Draw figures "
    "with mha_book.viz.plot.new_figure() (or plot_attention), never plt.figure() or "
    "plt.subplots(): new_figure registers the font and sizes the figure for a phone."
)


def _say(app, text: str) -> None:
    print(text, flush=True)


def _lang(app) -> str:
    return app.config.language.split("_")[0]


def docs_source(app, docname: str) -> str:
    """The page's source as an author finds it: ``docs/<lang>/<page>.md``.

    The path as the author finds it from the repository's root.
    """
    return f"docs/{_lang(app)}/{docname}.md"


def report_path(app, docname: str) -> Path:
    import book_build

    return book_build.BUILD / "reports" / _lang(app) / f"{docname}.log"


def _shown(path: Path) -> str:
    """A path as the author types it: relative to the current folder if inside."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


# --- progress -------------------------------------------------------------------
class _Heartbeat:
    """Prints "still running" every HEARTBEAT seconds until stopped."""

    def __init__(self, app, docname: str) -> None:
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(app, docname), daemon=True
        )
        self._thread.start()

    def _run(self, app, docname):
        while not self._stop.wait(HEARTBEAT):
            elapsed = time.monotonic() - self.started
            _say(app, f"  ... {docname}: still running after {elapsed:.0f} s")

    def stop(self) -> float:
        self._stop.set()
        return time.monotonic() - self.started


def _selected(docname: str) -> bool:
    """Whether this build executes the page (a partial build executes a few)."""
    import book_build

    pages = book_build.selected_pages()
    return pages is None or docname in pages


# One Sphinx process builds one edition: this state is per edition.
_heartbeats: dict[str, _Heartbeat] = {}
_failed_pages: set[str] = set()  # pages whose cells failed in this build
_warned_pages: set[str] = set()  # pages that gave any warning in this build


def _page_started(app, docname, source):
    _heartbeats[docname] = _Heartbeat(app, docname)
    _say(app, f"  start {docname}")


def _page_done(app, doctree):
    from myst_nb.sphinx_ import NbMetadataCollector

    docname = app.env.docname
    beat = _heartbeats.pop(docname, None)
    seconds = beat.stop() if beat else 0.0
    data = NbMetadataCollector.get_exec_data(app.env, docname)
    if not _selected(docname):
        how = "not executed (partial build)"
    elif data is None:
        how = "no code"
    elif not data.get("succeeded", True):
        how = "FAILED"
        _report_failure(app, docname, data)
    else:
        started = getattr(app.env, "book_build_started", float("inf"))
        how = "executed" if data.get("mtime", 0) >= started else "from cache"
    _say(app, f"  done  {docname}: {seconds:.1f} s, {how}")


# --- failures -------------------------------------------------------------------
def _code_cells(path: Path) -> list[tuple[int, str]]:
    """(line, source) of each ``{code-cell}`` of a MyST page, options left out."""
    cells, lines = [], path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if re.match(r"^(```+|~~~+)\{code-cell\}", lines[i]):
            fence, start, body = re.match(r"^(`+|~+)", lines[i]).group(1), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith(fence):
                body.append(lines[i])
                i += 1
            while body and body[0].startswith(":"):  # :tags: and other options
                body.pop(0)
            cells.append((start, "\n".join(body).strip()))
        i += 1
    return cells


def failing_cell(cells: list[tuple[int, str]], traceback: str) -> int | None:
    """Index of the cell the traceback quotes: whole (an error) or its start (a
    timeout quotes the first lines); None if no cell matches."""
    for i, (_, source) in enumerate(cells):
        if source and source in traceback:
            return i
    for i, (_, source) in enumerate(cells):
        first = source.splitlines()[0] if source else ""
        if first and first in traceback:
            return i
    return None


def exception_line(traceback: str) -> str:
    """``Type: message`` of the error the cell raised (the last such line)."""
    found = re.findall(
        r"^([A-Za-z_][\w.]*(?:Error|Exception|Warning|Interrupt)\b.*)$",
        traceback,
        flags=re.MULTILINE,
    )
    for line in reversed(found):
        if not line.startswith(("nbclient.", "jupyter_cache.", "CellExecutionError")):
            return line.strip()
    return found[-1].strip() if found else "unknown error"


def failure_message(app, docname: str, data: dict, source: Path) -> str:
    traceback = ANSI.sub("", data.get("traceback") or "")
    cells = _code_cells(source) if source.exists() else []
    index = failing_cell(cells, traceback)
    where = docs_source(app, docname)
    if index is None:
        cell = "a code cell"
    else:
        line, code = cells[index]
        preview = "\n".join(f"      {s}" for s in code.splitlines()[:3])
        cell = f"code cell {index + 1} (line {line + 1}):\n{preview}\n   "
    if data.get("error") == "CellTimeoutError":
        limit = re.search(r"after (\d+) seconds", traceback)
        after = f"{limit.group(1)} s" if limit else "the time limit"
        what = (
            f"did not finish within {after}, the limit per cell this page sets in "
            "its front matter. Make it faster, or raise the limit:\n"
            "      mystnb:\n        execution_timeout: 1200\n"
            "    (or remove it: by default a cell has no limit, and the edition's "
            "wall-clock limit stops a hang; nb_execution_timeout in conf.py)"
        )
    else:
        what = f"raised {exception_line(traceback)}"
    return f"{where}: {cell} {what}\n    full traceback: {report_path(app, docname)}"


def _report_failure(app, docname: str, data: dict) -> None:
    log = report_path(app, docname)
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(ANSI.sub("", data.get("traceback") or ""), encoding="utf-8")
    _failed_pages.add(docname)
    source = Path(app.env.doc2path(docname))
    logger.warning(
        failure_message(app, docname, data, source), type="book", subtype="exec"
    )


class _WarningWatch(logging.Filter):
    """Note the page of every warning; drop myst-nb's own report of a failed
    execution and the warnings that follow on a failed page (glue keys its
    cells never made). Runs after Sphinx has counted the warning, so a
    dropped one still fails the build."""

    def __init__(self, app) -> None:
        super().__init__()
        self.app = app

    def filter(self, record: logging.LogRecord) -> bool:
        location = str(getattr(record, "location", "") or "")
        page = self._page(location.rsplit(":", 1)[0]) if location else None
        if page is not None:
            _warned_pages.add(page)
        if getattr(record, "type", None) == "book":
            return True
        if str(record.msg).startswith("Executing notebook failed"):
            return False
        return page not in _failed_pages

    def _page(self, path: str) -> str | None:
        env = self.app.env
        return env.path2doc(path) if env is not None else None  # None: not a page


class _NotExecutedHere(logging.Filter):
    """In a partial build, drop the warnings of the pages it did not execute
    (their outputs, such as glue keys, are missing by design). Runs before
    Sphinx counts warnings, so they do not fail the build; the executed
    pages' links and references are checked as in the full build."""

    def __init__(self, app) -> None:
        super().__init__()
        self.app = app

    def filter(self, record: logging.LogRecord) -> bool:
        location = getattr(record, "location", None)
        if isinstance(location, tuple):  # (docname, line)
            page = location[0]
        elif location is not None and not isinstance(location, str):  # a node
            path = sphinx_logging.get_node_location(location) or ""
            page = self.app.env.path2doc(path.rsplit(":", 1)[0]) if path else None
        elif location and ":" in location:  # "path:line"
            page = self.app.env.path2doc(location.rsplit(":", 1)[0])
        else:  # a docname, or nowhere
            page = location or None
        return page is None or _selected(page)


# --- a page that warned is read again ----------------------------------------------
def _warned_file(app) -> Path:
    import book_build

    return book_build.BUILD / "reports" / _lang(app) / "warned.json"


def _save_warned(app, exception):
    """Remember the pages that warned: the next build reads them again, even
    unchanged, so a failure is never hidden by a rebuild that reads nothing."""
    path = _warned_file(app)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(sorted(_warned_pages)), encoding="utf-8")


def _read_warned_again(app, env, added, changed, removed):
    from tools.build.common import read_record

    # Damaged, it cannot say which pages warned: every page is read again.
    warned = set(
        read_record(
            _warned_file(app),
            [],
            list,
            damaged=list(env.all_docs),
            healing="every page is read again",
        )
    )
    return sorted(warned & set(env.all_docs) - set(removed))


# --- figures without the font ------------------------------------------------------
def font_hint(stderr_text: str) -> str | None:
    """The rule to follow when stderr shows matplotlib missing a CJK glyph."""
    return (
        FONT_RULE if re.search(r"Glyph \d+ .*missing from font", stderr_text) else None
    )


def _install_filter(app):
    for handler in logging.getLogger("sphinx").handlers:
        # the handler that prints warnings (its earlier filters count them for -W)
        if type(handler).__name__ == "WarningStreamHandler":
            handler.filters.insert(0, _NotExecutedHere(app))  # before counting
            handler.addFilter(_WarningWatch(app))  # after counting


def setup(app):
    app.connect("builder-inited", _install_filter)
    app.connect("source-read", _page_started)
    app.connect("doctree-read", _page_done, priority=400)
    app.connect("env-get-outdated", _read_warned_again)
    app.connect("build-finished", _save_warned)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
