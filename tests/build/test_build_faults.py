"""The build fails clearly, or stops, when an edition dies, hangs or is interrupted,
and its tools never delete what they did not make."""

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from scratch_book import build, cell, executed, run_build, write_book


def hanging_book(scratch: Path) -> Path:
    """A page whose cell records its kernel's pid and then hangs; return the pid file."""
    pid_file = scratch / "kernel.pid"
    write_book(
        scratch,
        cell(
            "import os, time\n"
            f"open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
            "time.sleep(600)"
        ),
    )
    return pid_file


def running_kernel(pid_file: Path) -> int:
    """The pid of the kernel running hanging_book's cell, once it runs it."""
    for _ in range(600):
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.2)
    return int(pid_file.read_text())


def test_an_edition_killed_by_a_signal_fails_the_build(scratch):
    # Only the zh edition's Sphinx process is killed (by its own notebook
    # kernel, whose parent is the edition's kernel zygote: tools/build/warm_kernel.py).
    killer = cell(
        "import os, signal, psutil\n"
        "if os.environ['MHA_BOOK_LANG'] == 'zh':\n"
        "    [sphinx] = [p for p in psutil.Process().parents() if '-m sphinx' in ' '.join(p.cmdline())]\n"
        "    os.kill(sphinx.pid, signal.SIGKILL)\n"
        "print('alive')"
    )
    result = build(scratch, killer, langs=("zh", "en"))
    assert result.returncode != 0
    assert "[zh] build FAILED: killed by signal SIGKILL" in result.stdout
    assert "[en] build FAILED" not in result.stdout
    assert "build succeeded" not in result.stdout
    assert not (scratch / "_build/html/build-report.html").exists()
    assert not (scratch / "_build/html/index.html").exists()
    # The killed edition's kernel zygote, kernel and its stand-in end with it.
    time.sleep(2)
    left = [
        p.info["cmdline"]
        for p in psutil.process_iter(["cmdline"])
        if str(scratch) in " ".join(p.info["cmdline"] or [])
    ]
    assert left == []


def seconds_to_reach_the_cell(scratch: Path) -> float:
    """How long a build of hanging_book takes, on this machine and now, to
    start running the page's cell (Sphinx's start, the zygote's imports, the
    kernel's start); the build is then stopped. The reference for the limit
    below, measured in the same test: a fixed 12 s measured the machine (with
    two CPU-burning processes beside the tests, 12 s passed before the kernel
    had started)."""
    pid_file = hanging_book(scratch)
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.build_book", "--langs", "zh"],
        cwd=scratch,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    running_kernel(pid_file)
    seconds = time.monotonic() - started
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    pid_file.unlink()
    return seconds


def test_a_hung_edition_is_stopped_at_its_limit_with_its_kernel(scratch):
    # The limit leaves the kernel twice the time it took to start just now.
    limit = max(12, math.ceil(2 * seconds_to_reach_the_cell(scratch)) + 5)
    pid_file = hanging_book(scratch)
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "tools.build_book", "--langs", "zh"]
        + ["--timeout", str(limit)],
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=limit + 300,
    )
    assert result.returncode != 0
    assert f"[zh] build FAILED: exceeded the {limit} s limit" in result.stdout
    assert time.monotonic() - started < limit + 100  # not the cell's 600 s
    kernel = int(pid_file.read_text())  # the cell ran before the limit
    time.sleep(1)
    with pytest.raises(ProcessLookupError):
        os.kill(kernel, 0)  # the kernel went with its edition: no orphan


@pytest.mark.parametrize("target", ["the build", "its process group"])
def test_sigterm_stops_the_build_and_its_kernels(scratch, target):
    """SIGTERM to the build, or to its whole process group as ``kill -TERM``
    does to ``make html`` and everything it started: the editions and their
    kernels stop, and one line says why, without Sphinx's crash report."""
    pid_file = hanging_book(scratch)
    proc = subprocess.Popen(  # in a session of its own, as make runs it
        ["sh", "-c", f"{sys.executable} -m tools.build_book --langs zh; exit $?"]
        if target == "its process group"
        else [sys.executable, "-m", "tools.build_book", "--langs", "zh"],
        cwd=scratch,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    kernel = running_kernel(pid_file)
    if target == "its process group":
        os.killpg(proc.pid, signal.SIGTERM)
    else:
        proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode != 0
    assert (
        "build INTERRUPTED by SIGTERM: both editions and their kernels stopped" in out
    )
    assert "Traceback" not in out and "report this error" not in out
    assert "build succeeded" not in out
    time.sleep(1)
    with pytest.raises(ProcessLookupError):
        os.kill(kernel, 0)
    left = [
        p.info["cmdline"]
        for p in psutil.process_iter(["cmdline"])
        if str(scratch) in " ".join(p.info["cmdline"] or [])
    ]
    assert left == []


def book_processes(scratch: Path) -> list:
    return [
        p.info["cmdline"]
        for p in psutil.process_iter(["cmdline"])
        if str(scratch) in " ".join(p.info["cmdline"] or [])
    ]


def test_a_killed_build_leaves_nothing_running_and_no_folder(scratch):
    """SIGKILL to the build used to leave its editions running, holding no
    lock (a new build ran beside them), and two temporary folders."""
    pid_file = hanging_book(scratch)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tools.build_book", "--langs", "zh", "en"],
        cwd=scratch,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    kernel = running_kernel(pid_file)
    editions = [
        c
        for c in psutil.Process(proc.pid).children()
        if "sphinx" in " ".join(c.cmdline())
    ]
    assert len(editions) == 2
    lock = (scratch / "_build" / ".lock").resolve()
    for edition in editions:  # each holds the build's lock while it lives
        assert any(Path(f.path) == lock for f in edition.open_files()), edition
    folders = list(Path(tempfile.gettempdir()).glob(f"mha-*-{proc.pid}-*"))
    assert len(folders) == 2
    proc.kill()
    proc.wait()
    for _ in range(50):  # each process watches its parent twice a second
        if not book_processes(scratch) and not psutil.pid_exists(kernel):
            break
        time.sleep(0.2)
    assert book_processes(scratch) == []
    assert not psutil.pid_exists(kernel) or psutil.Process(kernel).status() == "zombie"
    result = build(scratch, cell("print(1)"))  # at once, and it tidies up
    assert result.returncode == 0, result.stdout[-2000:]
    assert not any(folder.exists() for folder in folders)


CRASH_REPORT = ("Loaded Extensions", "report this error", "Traceback\n=========")


def test_a_killed_kernel_gets_the_books_message_not_a_crash_report(scratch):
    """nbclient's DeadKernelError used to reach Sphinx, which printed its
    crash report; now it is the page's failure: page, cell, cause, log."""
    killer = cell("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")
    result = build(scratch, cell("print(1)"), killer)
    assert result.returncode != 0
    assert "docs/zh/index.md: code cell 2 (line" in result.stdout
    assert "the kernel died while running this cell" in result.stdout
    assert "full traceback: " in result.stdout
    assert not any(part in result.stdout for part in CRASH_REPORT), result.stdout


def test_a_file_size_limit_gets_one_line_not_a_crash_report(scratch):
    """``ulimit -f`` (or a full disk): Sphinx's OSError became its crash report."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (150_000, 150_000))

    write_book(scratch, cell("print(1)"))
    result = subprocess.run(
        [sys.executable, "-m", "tools.build_book", "--langs", "zh"],
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=300,
        preexec_fn=limit,
    )
    assert result.returncode != 0
    assert (
        "build stopped: a file passed the file-size limit (ulimit -f)" in result.stdout
    )
    assert "full traceback: " in result.stdout
    assert not any(part in result.stdout for part in CRASH_REPORT), result.stdout


def test_clean_refuses_a_folder_the_build_did_not_make(scratch, tmp_path):
    foreign = tmp_path / "precious"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me", encoding="utf-8")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tools.build_book",
            "--clean",
            "--build-dir",
            str(foreign),
        ],
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert "refusing to clean" in result.stdout and str(foreign) in result.stdout
    assert (foreign / "notes.txt").read_text(encoding="utf-8") == "keep me"


def test_a_folder_the_build_did_not_make_is_never_written_or_marked(scratch, tmp_path):
    """Building into someone's folder, then --clean on it, used to delete their
    files: the build had marked the folder as its own."""
    foreign = tmp_path / "precious"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me", encoding="utf-8")
    write_book(scratch, cell("print(1)"))
    for extra in ([], ["--clean"]):
        result = run_build(scratch, "--build-dir", str(foreign), *extra)
        assert result.returncode != 0
        assert "refusing to" in result.stdout and str(foreign) in result.stdout
        assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
    # A new folder and an empty one are the build's: built into, and marked.
    for fresh in (tmp_path / "new", tmp_path / "empty"):
        if fresh.name == "empty":
            fresh.mkdir()
        result = run_build(scratch, "--build-dir", str(fresh))
        assert result.returncode == 0, result.stdout[-2000:]
        assert (fresh / ".mha_book_build").exists()
        assert (fresh / "html" / "zh" / "index.html").exists()


FIGURE = (
    "import io\nfrom IPython.display import Image\nfrom matplotlib.figure import Figure\n"
    "fig, png = Figure(figsize=(2, 1)), io.BytesIO()\n"
    "fig.add_subplot().plot([0, 1])\nfig.savefig(png, format='png')\n"
    "Image(png.getvalue())"
)


def test_a_page_or_figure_damaged_on_disk_is_written_again(scratch):
    """A page cut short after a build (a full disk, a killed copy) used to stay
    cut short, and the next build said it succeeded."""
    first = build(scratch, cell("print(6 * 7)"), cell(FIGURE))
    assert first.returncode == 0, first.stdout[-2000:]
    site = scratch / "_build" / "html" / "zh"
    page, figure = site / "index.html", next((site / "_images").glob("*.png"))
    whole = {path: path.read_bytes() for path in (page, figure)}
    for damaged in (page, figure):
        damaged.write_bytes(whole[damaged][: len(whole[damaged]) // 2])
        result = run_build(scratch)
        assert result.returncode == 0, result.stdout[-2000:]
        assert (
            "1 page(s) on disk differ from what the last build wrote" in result.stdout
        )
        assert {path: path.read_bytes() for path in whole} == whole
    quiet = run_build(scratch)  # nothing damaged: nothing said, nothing written
    assert "differ from what" not in quiet.stdout and "no record" not in quiet.stdout
    (scratch / "_build" / "reports" / "zh" / "written.json").write_text("{garbage")
    healed = run_build(scratch)
    assert healed.returncode == 0 and "WARNING (healed)" in healed.stdout


def test_clean_deletes_its_own_build_and_the_table_never_shows_an_old_one(scratch):
    first = build(scratch, cell("print(1)"))
    assert first.returncode == 0, first.stdout
    stale = scratch / "_build" / "exec" / "zh.json"
    report = json.loads(stale.read_text(encoding="utf-8"))
    report["a-page-of-an-old-build"] = dict(report["index"])
    stale.write_text(json.dumps(report), encoding="utf-8")
    (scratch / "_build" / "leftover.txt").write_text("old", encoding="utf-8")
    broken = build(scratch, cell("raise RuntimeError('broken')"))
    assert broken.returncode != 0
    assert "a-page-of-an-old-build" not in broken.stdout
    result = subprocess.run(
        [sys.executable, "-m", "tools.build_book", "--clean", "--langs", "zh"],
        cwd=scratch,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert not (scratch / "_build" / "leftover.txt").exists()
    assert "refusing" not in result.stdout


def test_the_katex_copy_is_keyed_on_the_katex_version(tmp_path, monkeypatch):
    import importlib

    monkeypatch.setenv("MHA_BOOK_BUILD_DIR", str(tmp_path))
    import book_build
    import book_cache
    import book_math

    importlib.reload(book_cache)  # BUILD follows MHA_BOOK_BUILD_DIR
    importlib.reload(book_build)
    version = book_math.katex_version()
    first = Path(book_math.katex_static_dir())
    assert first == tmp_path / "static_katex" / version
    css = (first / "katex" / "katex.min.css").read_text()
    fonts = {f.name for f in (first / "katex" / "fonts").iterdir()}
    named = set(re.findall(r"url\(fonts/([^)]+)\)", css))
    assert named and named == fonts  # every font it names is there, and only WOFF2
    assert all(name.endswith(".woff2") for name in named)

    monkeypatch.setattr(book_math, "katex_version", lambda: "99.0")
    second = Path(book_math.katex_static_dir())
    assert second == tmp_path / "static_katex" / "99.0"
    assert (second / "katex" / "katex.min.css").is_file()


def test_a_missing_katex_says_how_to_install_it(tmp_path, monkeypatch):
    import importlib

    import book_math

    book_math = importlib.reload(book_math)
    monkeypatch.setattr(book_math, "KATEX_PACKAGE", tmp_path / "katex")
    with pytest.raises(RuntimeError, match=r"make html.*package-lock\.json"):
        book_math.katex_static_dir()


def test_a_second_build_in_the_same_folder_is_refused(scratch):
    import fcntl

    lock_path = scratch / "_build" / ".lock"
    lock_path.parent.mkdir(parents=True)
    with open(lock_path, "a+") as held:  # as a running build holds it
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        held.write("4242")
        held.flush()
        result = build(scratch, cell("print(1)"))
    assert result.returncode != 0
    assert "another build (pid 4242) is using" in result.stdout
    assert build(scratch, cell("print(1)")).returncode == 0  # free again


def test_caches_of_other_digests_survive_and_only_old_ones_are_pruned(scratch):
    caches = scratch / "_build" / "jupyter_cache"
    caches.mkdir(parents=True)
    now = time.time()
    for age, digest in enumerate(["aaaa", "bbbb", "cccc", "dddd"], start=1):
        old = caches / f"zh-{digest}"
        old.mkdir()
        os.utime(old, (now - 3600 * age, now - 3600 * age))
    result = build(scratch, cell("print(1)"))
    assert result.returncode == 0, result.stdout
    kept = sorted(p.name for p in caches.glob("zh-*"))
    # this build's cache and the two most recently used others (CACHES_KEPT = 3)
    assert len(kept) == 3 and "zh-aaaa" in kept and "zh-bbbb" in kept
    assert not (caches / "zh-dddd").exists()


def _corrupt(kind: str, cache: Path) -> None:
    if kind == "damaged database":
        (cache / "global.db").write_bytes(b"this is not an sqlite database" * 100)
        return
    if kind == "damaged page digests":  # docs/_ext/book_cache.py's record
        (cache / "page-digests.json").write_text('{"index": ', encoding="utf-8")
        return
    [notebook] = cache.glob("executed/*/base.ipynb")
    if kind == "truncated notebook":
        notebook.write_text(notebook.read_text(encoding="utf8")[:100], encoding="utf8")
    else:  # a record whose file is gone
        import shutil

        shutil.rmtree(notebook.parent)


@pytest.mark.parametrize(
    "kind",
    [
        "truncated notebook",
        "missing notebook",
        "damaged database",
        "damaged page digests",
    ],
)
def test_a_corrupt_cache_heals_with_a_warning(scratch, kind):

    first = build(scratch, cell("print(6 * 7)"))
    assert first.returncode == 0, first.stdout
    [cache] = (scratch / "_build" / "jupyter_cache").glob("zh-*")
    _corrupt(kind, cache)
    # New prose makes Sphinx read the page again, so it consults the cache.
    again = build(scratch, "Some new prose.\n\n", cell("print(6 * 7)"))
    assert again.returncode == 0, again.stdout
    assert "WARNING (healed):" in again.stdout
    if kind == "damaged page digests":
        assert "page-digests.json was unreadable (JSONDecodeError)" in again.stdout
    assert executed(scratch), "the page whose cache entry was broken did not run again"
    assert "42" in (scratch / "_build/html/zh/index.html").read_text(encoding="utf-8")


def test_kernels_talk_over_unix_sockets_in_a_folder_removed_after_the_build(
    clean_book,
):
    # Unix sockets named after the kernel cannot race for a TCP port with the
    # other edition's kernels; the folder holding them goes with the build.
    repo, result = clean_book  # its second cell prints TRANSPORT_PROBE
    assert result.returncode == 0, result.stdout
    for lang in ("zh", "en"):
        page = (repo / f"_build/html/{lang}/index.html").read_text(encoding="utf-8")
        line = page[page.rindex("transport: ") :].split("<", 1)[0]  # the output
        transport, sockets = line.strip().removeprefix("transport: ").split(" | ")
        assert transport == "ipc", line
        assert f"/mha-{lang}-" in sockets  # the edition's own runtime folder
        assert not Path(sockets).parent.exists(), "runtime folder left behind"


def test_damaged_bookkeeping_files_heal_with_a_warning(scratch):
    """Garbage in the build's times or in its record of the pages that warned:
    one line says so, the build succeeds and writes both afresh. A damaged
    record of warned pages cannot say which pages warned, so every page is
    read again (and a failure it recorded is never hidden)."""
    first = build(scratch, cell("print(6 * 7)"))
    assert first.returncode == 0, first.stdout
    times = scratch / "_build" / "build-times.json"
    warned = scratch / "_build" / "reports" / "zh" / "warned.json"
    for path in (times, warned):
        assert path.exists(), path
        path.write_text("garbage {", encoding="utf-8")
    again = run_build(scratch)  # nothing changed: only a page that warned is read
    assert again.returncode == 0, again.stdout
    assert "build-times.json was unreadable (JSONDecodeError); starting it afresh" in (
        again.stdout
    )
    assert "warned.json was unreadable (JSONDecodeError); every page is read again" in (
        again.stdout
    )
    assert "from cache" in again.stdout  # the page was read again
    assert "last" in json.loads(times.read_text(encoding="utf-8"))
    assert json.loads(warned.read_text(encoding="utf-8")) == []


def saved_outputs(repo: Path, lang: str = "zh_CN") -> list[str]:
    """The text outputs of the notebook the build saved for the number checks."""
    notebook = json.loads(
        (repo / "_build/jupyter_execute" / lang / "index.ipynb").read_text("utf-8")
    )
    return [
        "".join(output.get("text", ""))
        for c in notebook["cells"]
        if c["cell_type"] == "code"
        for output in c["outputs"]
    ]


def test_a_page_from_the_cache_saves_its_outputs_for_the_number_checks(scratch):
    """A page read again but served from the execution cache saved its notebook
    without outputs, so tools/check_numbers compared nothing for it (and an
    edition stopped half-way left pages that differed from the other's)."""
    first = build(scratch, cell("print(6 * 7)"))
    assert first.returncode == 0, first.stdout[-2000:]
    assert executed(scratch) and saved_outputs(scratch) == ["42\n"]
    shutil.rmtree(scratch / "_build" / "doctrees")  # every page is read again
    again = run_build(scratch)
    assert again.returncode == 0, again.stdout[-2000:]
    assert not executed(scratch)  # from the cache
    assert saved_outputs(scratch) == ["42\n"]
