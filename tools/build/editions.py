"""The two Sphinx processes, one per edition, and their notebook kernels.

Each edition runs in its own process group with its own environment
(:func:`build_env`): the wall-clock limit, Ctrl-C and SIGTERM stop its
kernels too.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from .common import LANGS, ROOT
from .kernel_env import build_env


def sphinx_command(
    srcdir: Path, outdir: Path, doctrees: Path, offer_pdf: bool = False
) -> list[str]:
    """The strict Sphinx build of one edition (``-W``: a warning fails it).

    ``offer_pdf`` sets the tag ``pdf``: conf.py then links the edition's PDF
    from every page's download menu.
    """
    return [
        sys.executable,
        "-m",
        "sphinx",
        "-b",
        "html",
        "-c",
        str(ROOT),
        "-W",
        "--keep-going",
        "-q",
        # Plain text: the output is read through a pipe, prefixed per edition
        # and matched by the tests, even where FORCE_COLOR is set (as in CI).
        "--no-color",
        *(["-t", "pdf"] if offer_pdf else []),
        "-d",
        str(doctrees),
        str(srcdir),
        str(outdir),
    ]


# Each edition gets this many seconds in all (override with the environment
# variable or --timeout); after that its whole process group is stopped.
EDITION_TIMEOUT_ENV = "MHA_BOOK_EDITION_TIMEOUT"
BUILD_PID_ENV = "MHA_BOOK_BUILD_PID"  # the build an edition ends with
DEFAULT_EDITION_TIMEOUT = 1800


def stop_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """Stop a process and everything it started (its kernels): TERM, then KILL.

    jupyter_client starts each kernel in a session of its own, outside the
    edition's process group, so the kernels are found as descendants too.
    """
    import psutil  # installed with ipykernel

    try:
        kernels = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        kernels = []
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for child in kernels:
            try:
                child.send_signal(sig)
            except psutil.NoSuchProcess:
                pass
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=grace)
            psutil.wait_procs(kernels, timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def failure_reason(code: int | None, timed_out: bool, limit: float) -> str | None:
    """Why an edition failed, in words; None if it succeeded."""
    if timed_out:
        return f"exceeded the {limit:.0f} s limit ({EDITION_TIMEOUT_ENV}); stopped"
    if code is None or code == 0:
        return None
    if code < 0:
        return f"killed by signal {signal.Signals(-code).name}"
    return f"exit {code}"


def run_builds(
    docs: Path,
    build: Path,
    langs=LANGS,
    timeout: float | None = None,
    pages: list[str] | None = None,
    offer_pdf: bool = False,
    lock_fd: int | None = None,
) -> int:
    """Run one Sphinx build per language in parallel; stream prefixed output.

    Returns 0 only if every edition exited 0. Each edition runs in its own
    process group, so a timeout, Ctrl-C or SIGTERM stops its kernels as well.
    Each keeps the build lock's descriptor ``lock_fd`` open and ends when this
    process does, even killed (book_build.end_with_the_build).
    """
    limit = timeout or float(
        os.environ.get(EDITION_TIMEOUT_ENV, DEFAULT_EDITION_TIMEOUT)
    )
    # The kernels' connection files and Unix sockets (book_build.py chooses
    # the transport) go to a short folder of each edition's own, removed
    # afterwards even when a kernel was killed before it could clean up.
    # Named for this process, so that the next build removes those of a build
    # that was killed before it could (remove_stale_runtimes).
    remove_stale_runtimes()
    runtimes = {
        lang: Path(tempfile.mkdtemp(prefix=f"{RUNTIME_PREFIX}{lang}-{os.getpid()}-"))
        for lang in langs
    }
    try:
        procs = {
            lang: start_edition(
                lang, docs, build, pages, offer_pdf, runtimes[lang], lock_fd
            )
            for lang in langs
        }
        threads = [pump_output(lang, proc) for lang, proc in procs.items()]
        timed_out = wait_for(procs, limit)
    finally:
        for runtime in runtimes.values():
            shutil.rmtree(runtime, ignore_errors=True)
    for thread in threads:
        thread.join(timeout=5)
    failed = 0
    for lang, proc in procs.items():
        reason = failure_reason(proc.returncode, lang in timed_out, limit)
        if reason:
            failed += 1
            print(f"[{lang}] build FAILED: {reason}")
    return 1 if failed else 0


RUNTIME_PREFIX = "mha-"  # + <lang>-<pid of the build>-<random>


def remove_stale_runtimes() -> list[Path]:
    """Remove the runtime folders of builds whose process is gone (killed)."""
    import psutil

    removed = []
    for folder in Path(tempfile.gettempdir()).glob(f"{RUNTIME_PREFIX}*-*-*"):
        parts = folder.name.split("-")
        if (
            len(parts) >= 4
            and parts[2].isdigit()
            and not psutil.pid_exists(int(parts[2]))
        ):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def start_edition(
    lang: str,
    docs: Path,
    build: Path,
    pages: list[str] | None,
    offer_pdf: bool,
    runtime: Path,
    lock_fd: int | None = None,
) -> subprocess.Popen:
    """Start one edition's Sphinx build in a process group of its own, holding
    the build lock's descriptor ``lock_fd`` and told this process's pid
    (``MHA_BOOK_BUILD_PID``), so that it ends with the build."""
    cmd = sphinx_command(
        docs / lang, build / "html" / lang, build / "doctrees" / lang, offer_pdf
    )
    env = build_env(lang, build, pages)
    env["JUPYTER_RUNTIME_DIR"] = str(runtime)
    env[BUILD_PID_ENV] = str(os.getpid())
    return subprocess.Popen(
        cmd,
        cwd=ROOT,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        pass_fds=() if lock_fd is None else (lock_fd,),
    )


# The editions the build is stopping (a limit, Ctrl-C, SIGTERM): what they
# print while they die (Sphinx's crash report for the kernel it lost) is not
# the reason, which the build prints itself.
STOPPING: set[str] = set()


def pump_output(lang: str, proc: subprocess.Popen) -> threading.Thread:
    """Copy an edition's output to ours, each line prefixed with its language."""

    def pump():
        assert proc.stdout is not None
        for line in without_kernel_noise(proc.stdout):
            if lang in STOPPING:
                continue
            sys.stdout.write(f"[{lang}] {line}")
            sys.stdout.flush()

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return thread


def wait_for(procs: dict[str, subprocess.Popen], limit: float) -> set[str]:
    """Wait for every edition; stop those still running after ``limit`` seconds.

    Returns the languages stopped at the limit. Ctrl-C or SIGTERM stops both
    editions and raises KeyboardInterrupt.
    """
    deadline = time.monotonic() + limit
    timed_out = set()
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        while any(p.poll() is None for p in procs.values()):
            if time.monotonic() > deadline:
                for lang, proc in procs.items():
                    if proc.poll() is None:
                        timed_out.add(lang)
                        STOPPING.add(lang)
                        stop_group(proc)
            time.sleep(0.2)
    except KeyboardInterrupt as stop:
        STOPPING.update(procs)
        for proc in procs.values():
            stop_group(proc, grace=3.0)
        how = "SIGTERM" if isinstance(stop, Terminated) else "Ctrl-C"
        print(f"build INTERRUPTED by {how}: both editions and their kernels stopped")
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
    return timed_out


KERNEL_SHUTDOWN_ERROR = "[IPKernelApp] ERROR | Exception in message handler:"


def without_kernel_noise(lines):
    """The build's output lines, less what jupyter prints about itself.

    Dropped: the note that a kernel talks over local TCP, and the traceback a
    kernel prints when it is stopped mid-reply (a cell over its time limit),
    which ends in ``zmq.error.ZMQError``; the build's own message names the
    cell. Any other traceback is passed on whole.

    >>> list(without_kernel_noise([KERNEL_SHUTDOWN_ERROR + "\\n", "Traceback:\\n",
    ...     "  File x\\n", "zmq.error.ZMQError: Socket operation on non-socket\\n",
    ...     "done\\n"]))
    ['done\\n']
    """
    held: list[str] = []
    for line in lines:
        if "Kernel is running over TCP without encryption" in line:
            continue
        if held:
            held.append(line)
            if line.startswith("zmq.error.ZMQError"):
                held = []  # the whole block was the stopped kernel's
            elif not line.startswith((" ", "Traceback", "zmq", "During handling")):
                yield from held  # some other error: show all of it
                held = []
            continue
        if line.startswith(KERNEL_SHUTDOWN_ERROR):
            held = [line]
            continue
        yield line
    yield from held


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C is (``kill``, or ``make`` stopped by it)."""


def _raise_interrupt(signum, frame):
    raise Terminated
