"""Build both language trees of the book and report per-page execution time.

Usage: python tools/build_book.py [--clean] [--pages PAGE ...] [--timeout SECONDS]
                                  [--pdf {no,auto,yes}]

With --pdf, the built site is then printed to one PDF per edition
(tools/build_pdf.py) into _build/pdf/ and linked from every page's download
menu; `make pdf` passes yes (fails without Chromium), `make html PDF=1` auto
(says the PDF was skipped where Chromium or the test tools are missing).

With --pages, a partial build: every page is read (links and references are
checked as in the full build) but only the named pages execute, into
_build/partial/ (never over _build/html); it shares the full build's
execution cache. `make page P="05-verification glossary"` builds and serves one.

Runs the zh and en Sphinx builds side by side (one process each, so the two
cores are both used), in strict mode (-W: any warning, including stderr from
a code cell, is an error). Output: _build/html/{zh,en}/ and a language chooser
at _build/html/index.html.

Before Sphinx starts, the gates run: the two editions must have the same
code and structure (tools/check_parity.py), the prose must glue its
measured numbers and use the glossary's zh terms (tools/check_prose.py), and
no visible cell may call glue nor any list of chapters miss one
(tools/check_pages.py).

The build succeeds only if every edition exits 0; an edition killed by a
signal or stopped at its wall-clock limit (MHA_BOOK_EDITION_TIMEOUT seconds,
default 1800, or --timeout) fails it, and the build says which and why. Each
edition runs in its own process group: the limit, Ctrl-C and SIGTERM stop
its notebook kernels too. --clean deletes only a folder this script made.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LANGS = ("zh", "en")
FULL_BUILD = ROOT / "_build"  # `make html`'s folder
PARTIAL_BUILD = FULL_BUILD / "partial"  # `--pages`' default folder
sys.path.insert(0, str(ROOT / "tools"))

import build_pdf  # noqa: E402
import compressed  # noqa: E402
from check_pages import page_problems  # noqa: E402
from check_parity import parity_problems  # noqa: E402
from check_prose import prose_problems  # noqa: E402


def sphinx_command(lang: str, srcdir: Path, outdir: Path, doctrees: Path) -> list[str]:
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
        "-d",
        str(doctrees),
        str(srcdir),
        str(outdir),
    ]


def build_env(lang: str, build: Path, pages: list[str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["MHA_BOOK_LANG"] = lang
    env["MHA_BOOK_BUILD_DIR"] = str(build)
    # Expensive deterministic results (chapter 10's training) are stored here,
    # so the two editions and later builds compute each one once.
    env["MHA_BOOK_ARTIFACTS"] = str(build / "artifacts")
    if pages:
        # A partial build executes only these pages, and shares the full
        # build's executed notebooks and stored results (keyed by digest).
        env["MHA_BOOK_PAGES"] = ",".join(pages)
        # (Several partial builds at once: give each its own MHA_BOOK_EXEC_CACHE.)
        env.setdefault("MHA_BOOK_EXEC_CACHE", str(FULL_BUILD / "jupyter_cache"))
        env["MHA_BOOK_ARTIFACTS"] = str(FULL_BUILD / "artifacts")
    # Two builds run at once on two cores: one thread each for torch/BLAS.
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    env["PYTHONHASHSEED"] = "0"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    env["IPYTHONDIR"] = str(kernel_profile(build))
    return env


# Every kernel starts with this, from the IPython folder the build owns (so a
# reader's own ~/.ipython settings cannot change what a page prints): a cell
# meant to raise shows its own line and the error, not PyTorch's internals.
KERNEL_STARTUP = "from mha_book.book import short_tracebacks\n\nshort_tracebacks()\n"


def kernel_profile(build: Path) -> Path:
    """The IPython folder of the build's kernels, with its startup file written."""
    folder = build / "ipython"
    startup = folder / "profile_default" / "startup" / "00-book.py"
    if not startup.exists() or startup.read_text(encoding="utf-8") != KERNEL_STARTUP:
        startup.parent.mkdir(parents=True, exist_ok=True)
        startup.write_text(KERNEL_STARTUP, encoding="utf-8")
    return folder


# Each edition gets this many seconds in all (override with the environment
# variable or --timeout); after that its whole process group is stopped.
EDITION_TIMEOUT_ENV = "MHA_BOOK_EDITION_TIMEOUT"
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
) -> int:
    """Run one Sphinx build per language in parallel; stream prefixed output.

    Returns 0 only if every edition exited 0. Each edition runs in its own
    process group, so a timeout, Ctrl-C or SIGTERM stops its kernels as well.
    """
    limit = timeout or float(
        os.environ.get(EDITION_TIMEOUT_ENV, DEFAULT_EDITION_TIMEOUT)
    )
    procs, runtimes = {}, {}
    for lang in langs:
        cmd = sphinx_command(
            lang, docs / lang, build / "html" / lang, build / "doctrees" / lang
        )
        env = build_env(lang, build, pages)
        # The kernels' connection files and Unix sockets (book_build.py chooses
        # the transport) go to a short folder of the edition's own, removed
        # afterwards even when a kernel was killed before it could clean up.
        runtimes[lang] = Path(tempfile.mkdtemp(prefix=f"mha-{lang}-"))
        env["JUPYTER_RUNTIME_DIR"] = str(runtimes[lang])
        procs[lang] = subprocess.Popen(
            cmd,
            cwd=ROOT,
            env=env,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def pump(lang, proc):
        for line in without_kernel_noise(proc.stdout):
            sys.stdout.write(f"[{lang}] {line}")
            sys.stdout.flush()

    threads = [
        threading.Thread(target=pump, args=item, daemon=True) for item in procs.items()
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + limit
    timed_out = set()
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        while any(p.poll() is None for p in procs.values()):
            if time.monotonic() > deadline:
                for lang, proc in procs.items():
                    if proc.poll() is None:
                        timed_out.add(lang)
                        stop_group(proc)
            time.sleep(0.2)
    except KeyboardInterrupt:
        for proc in procs.values():
            stop_group(proc, grace=3.0)
        print("build INTERRUPTED: both editions stopped")
        raise
    finally:
        signal.signal(signal.SIGTERM, previous)
        for runtime in runtimes.values():
            shutil.rmtree(runtime, ignore_errors=True)
    for t in threads:
        t.join(timeout=5)
    failed = 0
    for lang, proc in procs.items():
        reason = failure_reason(proc.returncode, lang in timed_out, limit)
        if reason:
            failed += 1
            print(f"[{lang}] build FAILED: {reason}")
    return 1 if failed else 0


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


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def exec_rows(build: Path, langs=LANGS) -> list[tuple]:
    """(lang, page, seconds of last execution, status in this build) for every page."""
    rows = []
    for lang in langs:
        path = build / "exec" / f"{lang}.json"
        if not path.exists():
            continue
        for doc, d in json.loads(path.read_text(encoding="utf-8")).items():
            runtime = d.get("runtime")
            status = (
                "FAILED"
                if d.get("succeeded") is False and d["read_this_build"]
                else "executed"
                if d["executed_this_build"]
                else "from cache"
                if d["read_this_build"]
                else "unchanged"
            )
            rows.append((lang, doc, runtime, status))
    return rows


def print_exec_table(rows: list[tuple]) -> None:
    if not rows:
        return
    print(
        "\nPer-page execution time (seconds of the last execution; status in this build):"
    )
    print(f"{'lang':4}  {'page':34}  {'seconds':>8}  status")
    for lang, doc, runtime, status in rows:
        secs = f"{runtime:8.2f}" if runtime is not None else f"{'-':>8}"
        print(f"{lang:4}  {doc:34}  {secs}  {status}")
    ran = [r for r in rows if r[3] == "executed"]
    total = sum(r[2] or 0 for r in ran)
    print(f"executed in this build: {len(ran)} page(s), {total:.1f} s of kernel time")


BASE_URL_ENV = "MHA_BOOK_BASE_URL"  # the site's public address (conf.py reads it too)
SITEMAP_NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
XHTML_NS = "http://www.w3.org/1999/xhtml"
HREFLANG = {"zh": "zh-CN", "en": "en"}


def join_sitemaps(out: Path, base_url: str | None) -> Path | None:
    """Write ``out/sitemap.xml``: every page of both editions, each with its
    hreflang alternates (the same page in zh-CN and en, itself included).

    sphinx-sitemap writes one sitemap per edition (``out/<lang>/sitemap.xml``,
    where conf.py loads it when ``MHA_BOOK_BASE_URL`` is set); this joins them
    and pairs each page with the other edition's page of the same name. With
    no base URL there is no sitemap: a stale one is removed. Returns its path.

    >>> import tempfile
    >>> out = Path(tempfile.mkdtemp())
    >>> for lang in LANGS:
    ...     (out / lang).mkdir()
    ...     _ = (out / lang / "sitemap.xml").write_text(
    ...         f'<urlset xmlns="{SITEMAP_NS}"><url><loc>https://b.org/x/{lang}/a.html'
    ...         '</loc><lastmod>2026-01-02T00:00:00Z</lastmod></url></urlset>')
    >>> print(join_sitemaps(out, "https://b.org/x").read_text())  # doctest: +ELLIPSIS
    <?xml version='1.0' encoding='utf-8'?>
    <urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">
      <url>
        <loc>https://b.org/x/zh/a.html</loc>
        <lastmod>2026-01-02T00:00:00Z</lastmod>
        <xhtml:link rel="alternate" hreflang="zh-CN" href="https://b.org/x/zh/a.html" />
        <xhtml:link rel="alternate" hreflang="en" href="https://b.org/x/en/a.html" />
      </url>
      <url>
        <loc>https://b.org/x/en/a.html</loc>...
    >>> join_sitemaps(out, None), (out / "sitemap.xml").exists()
    (None, False)
    """
    from xml.etree import ElementTree as ET

    target = out / "sitemap.xml"
    if not base_url:
        target.unlink(missing_ok=True)
        return None
    base = base_url.rstrip("/")
    pages: dict[str, dict[str, str | None]] = {}  # lang -> {page: lastmod}
    for lang in LANGS:
        path = out / lang / "sitemap.xml"
        if not path.exists():
            continue
        edition = f"{base}/{lang}/"
        pages[lang] = {}
        for url in ET.parse(path).getroot().iter(f"{{{SITEMAP_NS}}}url"):
            loc = url.findtext(f"{{{SITEMAP_NS}}}loc", "")
            if not loc.startswith(edition):
                raise ValueError(f"{path}: {loc} is not under {edition}")
            pages[lang][loc.removeprefix(edition)] = url.findtext(
                f"{{{SITEMAP_NS}}}lastmod"
            )
    ET.register_namespace("", SITEMAP_NS)
    ET.register_namespace("xhtml", XHTML_NS)
    root = ET.Element(f"{{{SITEMAP_NS}}}urlset")
    for lang, edition in pages.items():
        for page, lastmod in sorted(edition.items()):
            url = ET.SubElement(root, f"{{{SITEMAP_NS}}}url")
            ET.SubElement(url, f"{{{SITEMAP_NS}}}loc").text = f"{base}/{lang}/{page}"
            if lastmod:
                ET.SubElement(url, f"{{{SITEMAP_NS}}}lastmod").text = lastmod
            for other in pages:
                if page in pages[other]:
                    ET.SubElement(
                        url,
                        f"{{{XHTML_NS}}}link",
                        rel="alternate",
                        hreflang=HREFLANG[other],
                        href=f"{base}/{other}/{page}",
                    )
    ET.indent(root)
    ET.ElementTree(root).write(target, xml_declaration=True, encoding="utf-8")
    return target


def check_pages(docs: Path, pages: list[str]) -> list[str]:
    """The page names of ``--pages`` (``NN-name`` or ``NN-name.md``), or exit
    with the ones that exist in neither edition."""
    names = [p.removesuffix(".md") for p in pages]
    missing = [
        f"docs/{lang}/{name}.md"
        for name in names
        for lang in LANGS
        if not (docs / lang / f"{name}.md").is_file()
    ]
    if missing:
        raise SystemExit(f"build FAILED: no such page: {', '.join(missing)}")
    return names


REPORT_STYLE = """body{font-family:sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.25rem .6rem;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}"""


def write_build_report(build: Path, rows: list[tuple], seconds: float) -> None:
    """Record this build's time and publish _build/html/build-report.html.

    A build that executed every page is a cold build; one that executed none
    is a warm (no-change) rebuild. The last of each is kept in
    build/build-times.json and shown on the report with the per-page table.
    """
    import datetime
    import html

    times_file = build / "build-times.json"
    times = (
        json.loads(times_file.read_text(encoding="utf-8"))
        if times_file.exists()
        else {}
    )
    executed = sum(r[3] == "executed" for r in rows)
    kind = (
        "cold"
        if rows and executed == len(rows)
        else "warm"
        if executed == 0
        else "partial"
    )
    entry = {
        "seconds": round(seconds, 1),
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "executed_pages": executed,
        "pages": len(rows),
        "cpus": os.cpu_count(),
    }
    times[kind] = times["last"] = entry
    times_file.write_text(json.dumps(times, indent=1), encoding="utf-8")

    def fmt(kind):
        e = times.get(kind)
        return (
            (
                f"{e['seconds']:.1f} s ({e['executed_pages']}/{e['pages']} pages executed, "
                f"{e['cpus']} CPUs, {html.escape(e['date'])})"
            )
            if e
            else "—"
        )

    body = [
        "<h1>Build report · 构建报告</h1>",
        '<p><a href="zh/index.html">中文版</a> · <a href="en/index.html">English edition</a></p>',
        "<table><tr><th>build · 构建</th><th>time · 时间</th></tr>",
        f"<tr><td>cold (every page executed) · 冷构建</td><td>{fmt('cold')}</td></tr>",
        f"<tr><td>warm (no change, nothing executed) · 无改动重建</td><td>{fmt('warm')}</td></tr>",
        f"<tr><td>this build · 本次</td><td>{fmt('last')}</td></tr></table>",
        "<h2>Per-page execution · 各页执行时间</h2>",
        "<p>Seconds of each page's last execution, and what this build did with it. "
        "各页最近一次执行所用秒数，以及本次构建对它的处理。</p>",
        "<table><tr><th>lang</th><th>page</th><th>seconds</th><th>this build</th></tr>",
    ]
    for lang, doc, runtime, status in rows:
        secs = f"{runtime:.2f}" if runtime is not None else "—"
        body.append(
            f'<tr><td>{lang}</td><td><a href="{lang}/{doc}.html">{html.escape(doc)}</a></td>'
            f'<td class="num">{secs}</td><td>{status}</td></tr>'
        )
    body.append("</table>")
    body.append(page_weight_section(build))
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>Build report · 构建报告</title>"
        '<link rel="icon" href="zh/_static/favicon.svg" type="image/svg+xml">'
        f"<style>{REPORT_STYLE}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body>\n</html>\n"
    )
    (build / "html" / "build-report.html").write_text(page, encoding="utf-8")


# --- page weight: measured by the browser tests, shown on the report ------------
PAGE_WEIGHT = (
    "page-weight.json"  # in the build folder, written by tests/e2e/test_page_weight.py
)
PAGE_WEIGHT_START, PAGE_WEIGHT_END = "<!-- page-weight -->", "<!-- /page-weight -->"


# Not part of what a page loads: the report itself (it shows the measurement),
# the compressed copies (made from the files), the PDF editions.
NOT_FINGERPRINTED = {".gz", ".br", ".pdf"}


def site_fingerprint(site: Path) -> str:
    """A digest of every file a reader's browser can load from ``site``.

    The page-weight measurement records the fingerprint of the site it
    measured; the report shows the numbers only while the site still has it.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     site = Path(d); _ = (site / "a.html").write_text("x")
        ...     first = site_fingerprint(site)
        ...     _ = (site / "build-report.html").write_text("report")
        ...     same = site_fingerprint(site) == first
        ...     _ = (site / "a.html").write_text("y")
        ...     (same, site_fingerprint(site) == first)
        (True, False)
    """
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(p for p in site.rglob("*") if p.is_file()):
        rel = path.relative_to(site).as_posix()
        if rel == "build-report.html" or path.suffix in NOT_FINGERPRINTED:
            continue
        digest.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def page_weight_section(build: Path) -> str:
    """The report's page-weight table, from the browser tests' last measurement.

    A build cannot measure its own pages in a browser, so the browser test
    writes ``<build>/page-weight.json`` and calls :func:`publish_page_weight`;
    the table says when it was measured, and a later build shows it until the
    tests measure again.
    """
    import html

    path = build / PAGE_WEIGHT
    if not path.exists():
        # No heading without a table: a site built without the browser tests
        # (the hosted one) shows no empty section. The markers stay, for
        # publish_page_weight to fill.
        return "\n".join([PAGE_WEIGHT_START, PAGE_WEIGHT_END])
    parts = [PAGE_WEIGHT_START, "<h2>Page weight · 页面体积</h2>"]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        budget, measured_site = data["budget"], data["site"]
    except (ValueError, KeyError) as exc:  # an older or damaged file: measure again
        print(
            f"warning: ignoring {path} ({type(exc).__name__}: {exc})", file=sys.stderr
        )
        return "\n".join([PAGE_WEIGHT_START, PAGE_WEIGHT_END])
    now = site_fingerprint(build / "html")
    when = html.escape(data["measured"])
    if measured_site != now:
        parts.append(
            f"<p>The last measurement ({when}) was of another build of the site "
            f"(fingerprint {html.escape(measured_site)}; this build is {now}); its "
            "numbers are not shown. Run the browser tests (<code>make e2e</code>) to "
            "measure this one. 上次测量的是另一次构建，数字不再显示。</p>"
        )
        return "\n".join(parts + [PAGE_WEIGHT_END])
    parts.append(
        f"<p>A first visit to each page with a cold cache, on a phone viewport "
        f"throttled as Lighthouse's mobile profile (slow 4G, CPU 4&times; slower), "
        f"from the local server sending the gzip copies, measured by the browser "
        f"tests with the Performance API on {when}, on this build (site fingerprint "
        f"{now}). Budget: {budget['bytes'] / 1024:.0f} KiB in all, "
        f"{budget['image_bytes'] / 1024:.0f} KiB of images, blocking time under "
        f"{budget['blocking_ms']} ms, largest contentful paint by {budget['lcp_ms']} ms, "
        f"load event by {budget['load_ms']} ms. "
        "冷缓存首次访问各页（手机视口，按 Lighthouse 移动端限速：慢速 4G、CPU 慢 4 倍；"
        "本地服务器发送 gzip 副本）传输的字节数与时间，测于本次构建。</p>"
    )
    parts.append(
        "<table><tr><th>page</th><th>KiB</th><th>images KiB</th><th>requests</th>"
        "<th>TBT ms</th><th>LCP ms</th><th>load ms</th><th>math</th></tr>"
    )
    for key, r in data["pages"].items():
        parts.append(
            f'<tr><td><a href="{html.escape(key)}">{html.escape(key)}</a></td>'
            f'<td class="num">{r["bytes"] / 1024:.0f}</td>'
            f'<td class="num">{r["by_kind"].get("image", 0) / 1024:.0f}</td>'
            f'<td class="num">{r["requests"]}</td><td class="num">{r["blocking_ms"]}</td>'
            f'<td class="num">{r["lcp_ms"]}</td><td class="num">{r["load_ms"]}</td>'
            f"<td>{'yes' if r.get('math_css') else 'no'}</td></tr>"
        )
    parts.append("</table>")
    for lang, s in data.get("summary", {}).items():
        parts.append(
            f"<p>{lang}: {s['pages']} pages; largest {s['max_bytes'] / 1024:.0f} KiB, "
            f"median {s['median_bytes'] / 1024:.0f} KiB; load max {s['max_load_ms']} ms, "
            f"median {s['median_load_ms']} ms; LCP max {s['max_lcp_ms']} ms, "
            f"median {s['median_lcp_ms']} ms; blocking max {s['max_blocking_ms']} ms, "
            f"median {s['median_blocking_ms']} ms.</p>"
        )
    return "\n".join(parts + [PAGE_WEIGHT_END])


def publish_page_weight(build: Path, data: dict) -> None:
    """Store the browser tests' measurements and put them on the build report."""
    (build / PAGE_WEIGHT).write_text(json.dumps(data, indent=1), encoding="utf-8")
    report = build / "html" / "build-report.html"
    if not report.exists():
        return
    text = report.read_text(encoding="utf-8")
    section = page_weight_section(build)
    if PAGE_WEIGHT_START in text:
        head, rest = text.split(PAGE_WEIGHT_START, 1)
        text = head + section + rest.split(PAGE_WEIGHT_END, 1)[1]
    else:
        text = text.replace("\n</body>", "\n" + section + "\n</body>")
    report.write_text(text, encoding="utf-8")


# Execution caches kept per language (one per package digest), most recently
# used first; older ones are pruned after a successful build.
CACHES_KEPT = 3


def prune_caches(build: Path, langs=LANGS, keep: int = CACHES_KEPT) -> list[Path]:
    """Delete all but the ``keep`` most recently used caches of each language,
    and all but the ``keep`` newest stored results of each kind
    (mha_book.lm.artifacts names them ``<kind>-<digest>.pt``)."""
    removed = []
    stored = sorted(
        (build / "artifacts").glob("*.pt"),
        key=lambda p: p.stat().st_mtime,
        reverse=True,
    )
    seen: dict[str, int] = {}
    for old in stored:
        kind = old.stem.rsplit("-", 1)[0]
        seen[kind] = seen.get(kind, 0) + 1
        if seen[kind] > keep:
            old.unlink(missing_ok=True)
            old.with_suffix(".lock").unlink(missing_ok=True)
            removed.append(old)
    for lang in langs:
        caches = sorted(
            (build / "jupyter_cache").glob(f"{lang}-*"),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        for old in caches[keep:]:
            shutil.rmtree(old, ignore_errors=True)
            removed.append(old)
    return removed


@contextlib.contextmanager
def build_lock(build: Path):
    """Hold the build folder's lock; raise BuildBusy if another build holds it."""
    import fcntl

    build.mkdir(parents=True, exist_ok=True)
    with open(build / ".lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            raise BuildBusy(lock.read().strip() or "?") from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        yield


class BuildBusy(Exception):
    """Another build holds the build folder (the argument is its pid)."""


# The build marks the folders it creates; --clean deletes nothing else.
BUILD_MARKER = ".mha_book_build"


def claim(build: Path) -> None:
    """Create the build folder (if needed) and mark it as the build's own."""
    build.mkdir(parents=True, exist_ok=True)
    (build / BUILD_MARKER).touch()


def clean(build: Path, check_only: bool = False) -> str | None:
    """Empty a build folder this script made; return why not, if it refuses.

    The folder itself and its lock stay (a waiting build may hold the lock).
    """
    if not build.exists():
        return None
    if not build.is_dir():
        return f"refusing to clean {build}: not a folder"
    owned = (build / BUILD_MARKER).exists()
    if not owned and any(p.name != ".lock" for p in build.iterdir()):
        return (
            f"refusing to clean {build}: it holds files and was not made by "
            f"tools/build_book.py (no {BUILD_MARKER} in it)"
        )
    if not check_only:
        for item in build.iterdir():
            if item.name == ".lock":
                continue
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item)
            else:
                item.unlink()
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--clean", action="store_true", help="remove the build dir first"
    )
    parser.add_argument(
        "--docs", type=Path, default=ROOT / "docs", help="source dir with zh/ and en/"
    )
    parser.add_argument(
        "--build-dir",
        type=Path,
        help=f"output dir (default {FULL_BUILD.name}/, or "
        f"{PARTIAL_BUILD.relative_to(ROOT)}/ with --pages)",
    )
    parser.add_argument("--langs", nargs="+", choices=LANGS, default=list(LANGS))
    parser.add_argument(
        "--pages",
        nargs="+",
        metavar="PAGE",
        help="execute only these pages (e.g. 05-verification glossary); every "
        "page is read, so links and references are checked as in the full build; "
        f"output in {PARTIAL_BUILD.relative_to(ROOT)}/ unless --build-dir",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help=f"wall-clock limit per edition (default: ${EDITION_TIMEOUT_ENV} "
        f"or {DEFAULT_EDITION_TIMEOUT})",
    )
    parser.add_argument(
        "--pdf",
        choices=("no", "auto", "yes"),
        default="no",
        help="also print each edition to a PDF (tools/build_pdf.py) into "
        "<build>/pdf/ and the site: 'auto' where Chromium and the test tools "
        "are installed (else says it skipped), 'yes' or fail (default: no)",
    )
    args = parser.parse_args(argv)
    default = PARTIAL_BUILD if args.pages else FULL_BUILD
    docs, build = args.docs.resolve(), (args.build_dir or default).resolve()
    if args.pages:
        args.pages = check_pages(docs, args.pages)
    if args.clean:
        problem = clean(build, check_only=True)
        if problem:
            print(f"build FAILED: {problem}")
            return 1
    try:
        with build_lock(build):
            return build_book(args, docs, build)
    except BuildBusy as busy:
        print(
            f"build FAILED: another build (pid {busy}) is using {build}; "
            "wait for it to finish, or build elsewhere with --build-dir"
        )
        return 1


def serve_command(build: Path) -> str:
    """The make command that serves this build's site."""
    if build == FULL_BUILD.resolve():
        return "make serve"
    try:
        return f"make serve SITE={(build / 'html').relative_to(ROOT)}"
    except ValueError:
        return f"make serve SITE={build / 'html'}"


def pdf_wanted(args) -> bool | None:
    """Whether this build prints the PDF editions; None: it must and cannot."""
    if args.pdf == "no":
        return False
    if args.pages:
        print("PDF skipped: a partial build (--pages) prints no PDF")
        return False
    problem = build_pdf.missing_tools()
    if problem and args.pdf == "yes":
        print(f"build FAILED: cannot print the PDF editions: {problem}")
        return None
    if problem:
        print(f"PDF skipped: {problem}; the site is built without it")
        return False
    return True


def pdfs_up_to_date(build: Path, langs) -> bool:
    """Every edition's PDF is newer than its pages, the print CSS and the printer."""
    for lang in langs:
        pdf, record = (
            build / "pdf" / build_pdf.pdf_name(lang),
            build / "pdf" / f"{lang}.json",
        )
        if not (pdf.exists() and record.exists()):
            return False
        made = pdf.stat().st_mtime
        chapters = json.loads(record.read_text(encoding="utf-8"))["chapters"]
        sources = [ROOT / "docs/_static/book.css", Path(build_pdf.__file__)]
        sources += [build / "html" / lang / f"{c['doc']}.html" for c in chapters]
        if any(not p.exists() or p.stat().st_mtime > made for p in sources):
            return False
    return True


def make_pdfs(build: Path, langs) -> int:
    """Print the PDF editions of the built site (unless they are up to date)."""
    if pdfs_up_to_date(build, langs):
        print(f"PDF editions up to date in {build / 'pdf'}")
        return 0
    start = time.perf_counter()
    try:
        records = build_pdf.build_pdfs(build / "html", build / "pdf", langs)
    except Exception as error:  # noqa: BLE001 - reported, and the build fails
        print(f"build FAILED: printing the PDF editions: {error}")
        return 1
    for r in records:
        size = (build / "pdf" / r["pdf"]).stat().st_size / 1e6
        print(
            f"[{r['lang']}] PDF: {build / 'pdf' / r['pdf']}: {r['pages']} pages, "
            f"{len(r['chapters'])} chapters, {size:.1f} MB"
        )
    print(f"PDF editions printed in {time.perf_counter() - start:.1f} s")
    return 0


def build_book(args, docs: Path, build: Path) -> int:
    """The build proper, run while holding the build folder's lock."""
    if args.clean:
        problem = clean(build)
        if problem:
            print(f"build FAILED: {problem}")
            return 1
    claim(build)
    for stale in (build / "exec").glob("*.json"):
        stale.unlink()  # an interrupted build must not report the last one's pages
    start = time.perf_counter()
    problems = parity_problems(docs)
    if problems:
        for p in problems:
            print(f"parity: {p}")
        print(
            "build FAILED: the zh and en books must have the same pages, code cells and structure"
        )
        return 1
    problems = prose_problems(docs)
    if problems:
        for p in problems:
            print(f"prose: {p}")
        print(
            "build FAILED: measured numbers must be glued from the execution and zh terms "
            "must be the glossary's (tools/check_prose.py)"
        )
        return 1
    problems = page_problems(docs)
    if problems:
        for p in problems:
            print(f"pages: {p}")
        print(
            "build FAILED: glue calls belong in removed cells and every list of "
            "chapters must link the chapters it names (tools/check_pages.py)"
        )
        return 1
    out = build / "html"
    for lang in args.langs:
        # sphinx-sitemap writes it afresh when a base URL is set; never keep a stale one.
        (out / lang / "sitemap.xml").unlink(missing_ok=True)
    print_pdf = pdf_wanted(args)
    if print_pdf is None:
        return 1
    # The download menu offers the PDF only where it will be printed or is there.
    if print_pdf or all(
        (out / lang / build_pdf.pdf_name(lang)).exists() for lang in args.langs
    ):
        os.environ["MHA_BOOK_PDF"] = "1"
    else:
        os.environ.pop("MHA_BOOK_PDF", None)
    try:
        code = run_builds(docs, build, args.langs, args.timeout, args.pages)
    except KeyboardInterrupt:
        return 130
    if code == 0 and (docs / "landing.html").exists():
        shutil.copy2(docs / "landing.html", out / "index.html")
        (out / ".nojekyll").touch()
    if code == 0:
        join_sitemaps(out, os.environ.get(BASE_URL_ENV, "").strip() or None)
    rows = exec_rows(build, args.langs)
    print_exec_table(rows)
    seconds = time.perf_counter() - start
    if code == 0 and not args.pages:
        write_build_report(build, rows, seconds)
    if code == 0:
        prune_caches(build, args.langs)
    if code == 0 and print_pdf:
        code = make_pdfs(build, args.langs)
    if code == 0:
        compressed.precompress(out)  # the .gz and .br copies a host can send
    seconds = time.perf_counter() - start
    print(
        f"\nbuild {'succeeded' if code == 0 else 'FAILED'} in {seconds:.1f} s"
        + (
            f"; open {out / 'index.html'} or run `{serve_command(build)}`"
            if code == 0
            else ""
        )
    )
    return code


if __name__ == "__main__":
    sys.exit(main())
