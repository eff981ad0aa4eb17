"""Notebook kernels that start with PyTorch already imported.

Every page runs in a kernel of its own, and a fresh Python spends about two
seconds importing torch, matplotlib and IPython before the page's first line
runs: about a minute of each cold build. Each edition's build starts one
*zygote* (``python warm_kernel.py --zygote SOCKET``), a process that imports
them once and then waits; a page's kernel is a fork of it. A fork starts
with the zygote's memory and nothing else: no page has run in the zygote, so
no page's state can reach another, as with a fresh process.

The kernel that jupyter_client starts (``python warm_kernel.py -f FILE``,
the build's kernelspec ``python3``: :func:`write_kernelspec`) is a small
stand-in: it asks the zygote for a fork that takes its arguments,
environment, folder and standard streams, relays the signals it gets to it
(an interrupt, a stop) and exits with its status. If the stand-in is killed,
the fork sees it and exits. Where no zygote answers, the stand-in becomes an
ordinary kernel (``python -m ipykernel_launcher``), so a page always runs.

Hand-written: jupyter_client starts each kernel as a new process and offers
no pre-started pool that could be handed to myst-nb per page.

Runs as a script (the kernel's folder is the page's), so it imports only the
standard library until the zygote loads the kernel's own.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import sys
import threading
import time
from pathlib import Path

ZYGOTE_ENV = "MHA_BOOK_ZYGOTE"  # the zygote's socket, set for the kernels
# What the zygote imports once, for every page: the imports a page's first
# cell and the kernel itself make; torch._dynamo, which a torch optimizer
# imports on its first step (about 2.7 s of every page that trains);
# matplotlib.figure (0.5 s of every page that draws: the book draws bare
# Figures, never through pyplot, which stays the kernel's to import and
# to give its backend);
# and the kernel's shell and debugger classes, which the kernel would
# otherwise import while it starts (0.2 s of every page, mostly debugpy).
# (Not matplotlib_inline's backend: on import it hooks into the IPython shell
# it finds, and the zygote has none.)
PRELOAD = (
    "torch",
    "torch._dynamo",
    "numpy",
    "matplotlib",
    "matplotlib.figure",
    "IPython",
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    "ipykernel.debugger",
)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def write_kernelspec(folder: Path) -> Path:
    """The kernelspec ``python3`` that starts this stand-in, under ``folder``
    (put ``folder`` on ``JUPYTER_PATH``); returns the spec's folder."""
    spec = folder / "kernels" / "python3"
    spec.mkdir(parents=True, exist_ok=True)
    kernel = {
        "argv": [
            sys.executable,
            str(Path(__file__).resolve()),
            "-f",
            "{connection_file}",
        ],
        "display_name": "Python 3 (mha_book build)",
        "language": "python",
        "interrupt_mode": "signal",
    }
    (spec / "kernel.json").write_text(json.dumps(kernel, indent=1), encoding="utf-8")
    return spec


# --- the stand-in -------------------------------------------------------------
def stand_in(argv: list[str]) -> int:
    """Ask the zygote for a kernel with ``argv``; relay signals; its exit status."""
    path = os.environ.get(ZYGOTE_ENV)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    request = {
        "argv": argv,
        "env": dict(os.environ),
        "cwd": os.getcwd(),
        "pid": os.getpid(),
    }
    try:
        if not path:
            raise OSError("no zygote")
        conn.connect(path)
        socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
        reply = conn.makefile("r", encoding="utf-8")
        kernel = int(reply.readline() or 0)
    except (OSError, ValueError):
        kernel = 0
    if not kernel:  # no zygote, or it failed: a kernel of our own
        conn.close()
        os.execv(sys.executable, [sys.executable, "-m", "ipykernel_launcher", *argv])
    for sig in FORWARDED:
        signal.signal(sig, lambda number, _frame: os.kill(kernel, number))
    _end_with_parent(lambda: os.kill(kernel, signal.SIGKILL))  # Sphinx killed
    for line in reply:  # "exit N" once the kernel has ended
        if line.startswith("exit "):
            return int(line.split()[1])
    return 1  # the zygote went away: the kernel ends once this has (_watch)


# --- the zygote ---------------------------------------------------------------
def zygote(path: str) -> None:
    """Import PRELOAD, then fork a kernel for each stand-in that connects."""
    # Listening first: a stand-in that connects while the imports run waits
    # in the queue for its kernel rather than starting a cold one.
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    _end_with_parent()  # the edition's Sphinx, killed: no orphan
    # ipykernel sets this before a page can import matplotlib; matplotlib
    # reads it on import, so it is set here as the kernel would set it.
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    for module in PRELOAD:
        __import__(module)
    _read_package_code()
    waiting: dict[int, socket.socket] = {}  # kernel pid -> its stand-in
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # wakes the loop below
    events = selectors.DefaultSelector()
    events.register(server, selectors.EVENT_READ)
    events.register(wake_r, selectors.EVENT_READ)
    while True:
        for key, _ in events.select():
            if key.fileobj is server:
                conn, _ = server.accept()
                pid = _fork_kernel(conn, server, waiting)
                if pid:
                    waiting[pid] = conn
            else:
                os.read(wake_r, 512)
        _report_ended(waiting)


def _read_package_code() -> None:
    """Read the package's modules once, as a page's first stored-result lookup
    would (about 1.2 s: every module parsed to key the result on its code).
    What is read is cached by file size and time of change
    (:mod:`mha_book._digest`), so a file edited later is read again."""
    try:
        from mha_book import _digest
    except ImportError:  # no package here (a build of another book): nothing
        return
    _digest.code_digest(_digest.module_files())  # the import graph, every module


def _fork_kernel(conn: socket.socket, server: socket.socket, waiting: dict) -> int:
    """Fork a kernel for the stand-in on ``conn``; its pid (0 if refused)."""
    data, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
    while not data.endswith(b"\n"):
        more = conn.recv(1 << 20)
        if not more:
            conn.close()
            return 0
        data += more
    request = json.loads(data)
    pid = os.fork()
    if pid == 0:  # the kernel
        server.close()
        for other in waiting.values():  # the other kernels' stand-ins
            other.close()
        try:
            _become_kernel(request, fds)
        finally:
            os._exit(1)
    for fd in fds:
        os.close(fd)
    conn.sendall(f"{pid}\n".encode())
    return pid


def _report_ended(waiting: dict[int, socket.socket]) -> None:
    """Tell each ended kernel's stand-in its exit status."""
    while waiting:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = waiting.pop(pid, None)
        if conn is not None:
            code = os.waitstatus_to_exitcode(status)
            try:
                conn.sendall(f"exit {code if code >= 0 else 128 - code}\n".encode())
            except OSError:
                pass
            conn.close()


def _become_kernel(request: dict, fds: list[int]) -> None:
    """In the fork: take the stand-in's streams, folder, environment and
    arguments, watch it, and run the kernel."""
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGCHLD, *FORWARDED):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    _watch(request["pid"])
    _fresh_random_state()
    # ipykernel read JPY_PARENT_PID when the zygote imported it, before any
    # kernel had a parent; this kernel's is given here. (Without a parent a
    # kernel prints its "connect another client" banner into the build log.)
    parent = int(os.environ.get("JPY_PARENT_PID") or 0)
    sys.argv = [sys.argv[0], *request["argv"], f"--IPKernelApp.parent_handle={parent}"]
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()
    os._exit(0)


def _fresh_random_state() -> None:
    """Seed the global generators from the system's entropy, as a fresh Python
    does: every fork would otherwise draw the zygote's numbers."""
    import random

    import numpy
    import torch

    random.seed()
    numpy.random.seed()
    torch.seed()


def _end_with_parent(before_exit=None) -> None:
    """Exit (after ``before_exit()``) once this process's parent is gone."""
    parent = os.getppid()
    _exit_when(lambda: os.getppid() != parent, before_exit)


def _watch(pid: int) -> None:
    """End this kernel when its stand-in is gone (killed: nothing relays any more)."""
    _exit_when(lambda: not _alive(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _exit_when(gone, before_exit=None) -> None:
    """A thread that exits the process (after ``before_exit()``) once ``gone()``."""

    def watch() -> None:
        while not gone():
            time.sleep(0.5)
        try:
            if before_exit is not None:
                before_exit()
        finally:
            os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--zygote"]:
        zygote(sys.argv[2])
    else:
        sys.exit(stand_in(sys.argv[1:]))
