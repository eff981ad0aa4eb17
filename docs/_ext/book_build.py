"""Sphinx extension: how the book's pages execute.

* kernels over Unix sockets (``transport = "ipc"``) instead of TCP ports.
* each edition's executed notebooks in a folder of its own, outside the site;
  a partial build executes only the selected pages.
* a cell's printed output joined as it came (``join_streams``), and what a
  cell writes to stderr reported in the build log.
* the execution report: after each build, ``_build/exec/<lang>.json`` lists
  every page's last execution (runtime, method) and whether this build read it.

Which pages execute again, and the execution cache, are ``book_cache``'s; what
the HTML pages get is ``book_pages``'; the Chinese search ``book_search``'s.
"""

from __future__ import annotations

import errno
import json
import os
import sys
import time
from pathlib import Path

from book_cache import BUILD, EXEC_CACHE, ROOT, selected_pages  # noqa: F401 (book_math, book_progress)
from docutils import nodes


# --- execution report ------------------------------------------------------
def _note_read(app, env, docnames):
    env.book_read_this_build = sorted(docnames)
    env.book_build_started = time.time()
    if docnames:  # a page read may execute: its kernel forks from the zygote
        use_warm_kernels()


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


# --- kernels forked from one that has imported torch ----------------------------
def use_warm_kernels() -> bool:
    """Start this edition's zygote (tools/build/warm_kernel.py) and give the
    kernels the kernelspec that forks from it; say whether it did. Called
    once Sphinx knows it reads some page: a build that reads none (nothing
    changed) starts no zygote.

    Off with MHA_BOOK_WARM_KERNELS=0, and where the runtime folder is too long
    for a socket path: then every page starts a fresh Python, as before.
    """
    import atexit
    import subprocess
    import sys

    from jupyter_core.paths import jupyter_runtime_dir

    from tools.build import warm_kernel

    runtime = jupyter_runtime_dir()
    if os.name != "posix" or os.environ.get("MHA_BOOK_WARM_KERNELS") == "0":
        return False
    if len(runtime) > MAX_SOCKET_DIR or warm_kernel.ZYGOTE_ENV in os.environ:
        return False
    socket_path = os.path.join(runtime, f"zygote-{os.getpid()}")
    os.makedirs(runtime, exist_ok=True)
    zygote = subprocess.Popen(
        [sys.executable, warm_kernel.__file__, "--zygote", socket_path],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    atexit.register(zygote.kill)
    spec_root = Path(runtime) / "kernelspecs"
    warm_kernel.write_kernelspec(spec_root)
    paths = [str(spec_root), *filter(None, [os.environ.get("JUPYTER_PATH")])]
    os.environ["JUPYTER_PATH"] = os.pathsep.join(paths)
    os.environ[warm_kernel.ZYGOTE_ENV] = socket_path
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


# --- a page from the cache keeps its outputs in jupyter_execute -----------------
# myst-nb 1.4 saves each page's notebook to jupyter_execute from the object it
# parsed. A page it executes gets its outputs in that object; a page served
# from the cache gets them in a copy (jupyter-cache's merge), so its saved
# notebook had none, and tools/check_numbers compared empty pages (an edition
# stopped half-way left its pages empty while the other's had outputs).
def keep_cached_outputs() -> None:
    """Serve a cached page's outputs in the notebook myst-nb parsed and saves."""
    from myst_nb.core.execute.cache import NotebookClientCache

    start = NotebookClientCache.start_client

    def start_client(self):
        parsed = self._notebook
        start(self)
        if self._notebook is not parsed:  # the merged copy: its cells into parsed
            parsed.cells = self._notebook.cells
            parsed.metadata = self._notebook.metadata
            self._notebook = parsed

    NotebookClientCache.start_client = start_client


# --- a dead kernel, a full disk: the book's short message -----------------------
# A kernel killed mid-cell (a signal, the out-of-memory killer) makes nbclient
# raise DeadKernelError, which myst-nb does not catch: Sphinx printed its crash
# report. Here it is a failed execution like any other, so the page's failure
# message names the cell (book_progress). A disk that is full, or a file past
# the size limit (ulimit -f), raised OSError wherever Sphinx was writing: one
# line says so, with the file, and the traceback goes to a log.
KERNEL_DIED = (
    "DeadKernelError: the kernel died while running this cell "
    "(killed by a signal, out of memory, or it exited)"
)
DISK_ERRORS = {
    errno.ENOSPC: "the disk is full",
    errno.EFBIG: "a file passed the file-size limit (ulimit -f)",
    errno.EDQUOT: "the disk quota is used up",
}


def use_named_kernel_deaths() -> None:
    from jupyter_cache.executors.utils import ExecutionResult
    from myst_nb.core.execute import cache
    from nbclient.exceptions import DeadKernelError

    execute = cache.single_nb_execution

    def single_nb_execution(nb, cwd, timeout, allow_errors, *args, **kwargs):
        running = {}

        def note(cell, **_):  # nbclient's hook: the cell about to run
            running["source"] = cell.get("source", "")

        try:
            return execute(
                nb, cwd, timeout, allow_errors, *args, on_cell_execute=note, **kwargs
            )
        except DeadKernelError as err:  # the cell's source lets book_progress find it
            trace = f"{running.get('source', '')}\n\n{KERNEL_DIED}\n"
            return ExecutionResult(nb, cwd, 0.0, err, trace)

    cache.single_nb_execution = single_nb_execution


def disk_error(exception: BaseException, folder: Path = BUILD) -> str | None:
    """What a full disk or a file-size limit is, in words, if ``exception``
    (or what caused it) was one, or writing a MiB into ``folder`` now fails
    so (an extension may have turned the OSError into another error); None
    for other errors."""
    seen, todo = [], [exception]
    while todo:
        err = todo.pop()
        if err is None or any(err is e for e in seen):
            continue
        seen.append(err)
        if isinstance(err, OSError) and err.errno in DISK_ERRORS:
            return f"{DISK_ERRORS[err.errno]} ({err.strerror}, writing {err.filename})"
        todo += [err.__cause__, err.__context__]
    probe = folder / f".disk-probe-{os.getpid()}"
    try:
        probe.write_bytes(bytes(2**20))
    except OSError as err:
        if err.errno in DISK_ERRORS:
            return f"{DISK_ERRORS[err.errno]} ({err.strerror}, writing into {folder})"
    finally:
        probe.unlink(missing_ok=True)
    return None


def use_short_disk_errors() -> None:
    from sphinx._cli.util import errors

    handle = errors.handle_exception

    def handle_exception(exception, /, *, stderr=sys.stderr, **kwargs):
        cause = disk_error(exception)
        if cause is None:
            return handle(exception, stderr=stderr, **kwargs)
        log = errors.save_traceback(
            exception,
            message_log=kwargs.get("message_log", ()),
            extensions=kwargs.get("extensions", ()),
        )
        print(f"build stopped: {cause}\n    full traceback: {log}", file=stderr)

    errors.handle_exception = handle_exception


# --- an edition ends with its build ----------------------------------------------
def end_with_the_build() -> None:
    """Have the kernel kill this edition when the build that started it ends,
    even by SIGKILL (Linux's parent-death signal); its kernels and zygote
    follow it (tools/build/warm_kernel.py watches each parent). Elsewhere,
    or when Sphinx was not started by the build, nothing changes."""
    parent = os.environ.get("MHA_BOOK_BUILD_PID")
    if not parent or not sys.platform.startswith("linux"):
        return
    import ctypes
    import signal

    PR_SET_PDEATHSIG = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != int(parent):  # the build died before the line above
        os._exit(1)


def setup(app):
    end_with_the_build()
    use_ipc_kernels()
    use_joined_streams()
    keep_cached_outputs()
    use_named_kernel_deaths()
    use_short_disk_errors()
    app.connect("builder-inited", _own_output_folder, priority=900)
    app.connect("env-before-read-docs", _note_read)
    app.connect("doctree-read", _report_stderr)
    app.connect("build-finished", _write_exec_report)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
