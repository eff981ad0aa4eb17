"""Build both language trees of the book and report per-page execution time.

Usage: python -m tools.build_book [--clean] [--pages PAGE ...] [--timeout SECONDS]
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

Before Sphinx starts, the gates run (tools/build/gates.py): the two editions must have the same
code and structure (tools/check_parity.py), the prose must glue its
measured numbers and use the glossary's zh terms (tools/check_prose.py), and
no visible cell may call glue nor any list of chapters miss one
(tools/check_pages.py).

The build succeeds only if every edition exits 0; an edition killed by a
signal or stopped at its wall-clock limit (MHA_BOOK_EDITION_TIMEOUT seconds,
default 1800, or --timeout) fails it, and the build says which and why. Each
edition runs in its own process group: the limit, Ctrl-C and SIGTERM stop
its notebook kernels too. The build writes only into a new or empty folder,
or one it made (it marks them); --clean deletes only a folder this script made.

The steps live in tools/build/, one module per concern; build_book() below
lists them in order.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

from . import compressed
from .build import cache, editions, gates, pdf, report, search, sitemap
from .build.common import FULL_BUILD, LANGS, PARTIAL_BUILD, ROOT, BuildFailed


def build_book(
    options: argparse.Namespace, docs: Path, build: Path, lock_fd: int | None = None
) -> int:
    """The build proper, run while holding the build folder's lock (``lock_fd``:
    its descriptor, which the editions keep open)."""
    start, started_at = time.perf_counter(), time.time()
    try:
        prepare_folder(build, options.clean, options.langs)
        gates.run_gates(docs)
        printing = pdf.pdf_wanted(options.pdf, partial=bool(options.pages))
        code = editions.run_builds(
            docs,
            build,
            options.langs,
            options.timeout,
            options.pages,
            offer_pdf=pdf.pdf_offered(build, options.langs, printing),
            lock_fd=lock_fd,
        )
    except BuildFailed as failure:
        print(f"build FAILED: {failure}")
        return 1
    except KeyboardInterrupt:
        return 130
    rows = report.exec_rows(build, options.langs)
    report.print_exec_table(rows)
    if code == 0:
        code = finish_site(options, docs, build, rows, start, printing, started_at)
    print_outcome(code, build, time.perf_counter() - start)
    return code


def prepare_folder(build: Path, clean: bool, langs) -> None:
    """Empty the folder if asked, mark it as the build's own, and forget what
    the last build recorded that this one must write afresh."""
    problem = cache.clean(build) if clean else None
    if problem:
        raise BuildFailed(problem)
    cache.claim(build)
    for stale in (build / "exec").glob("*.json"):
        stale.unlink()  # an interrupted build must not report the last one's pages
    for lang in langs:
        # sphinx-sitemap writes it afresh when a base URL is set; never keep a stale one.
        (build / "html" / lang / "sitemap.xml").unlink(missing_ok=True)


def finish_site(
    options, docs: Path, build: Path, rows, start: float, printing, started_at: float
) -> int:
    """After both editions built: the landing page, sitemap, search indexes,
    report, PDFs and the compressed copies; prune old caches (never what this
    build used: it started at ``started_at``, epoch seconds)."""
    out = build / "html"
    if (docs / "landing.html").exists():
        shutil.copy2(docs / "landing.html", out / "index.html")
        (out / ".nojekyll").touch()
    sitemap.join_sitemaps(out, os.environ.get(sitemap.BASE_URL_ENV, "").strip() or None)
    search.write_search_indexes(out, options.langs)  # the ranked search of each edition
    if not options.pages:
        report.write_build_report(build, rows, time.perf_counter() - start)
    cache.prune_caches(build, options.langs, used_since=started_at)
    try:
        if printing:
            pdf.make_pdfs(build, options.langs)
    except BuildFailed as failure:
        print(f"build FAILED: {failure}")
        return 1
    compressed.precompress(out)  # the .gz and .br copies a host can send
    return 0


def print_outcome(code: int, build: Path, seconds: float) -> None:
    if code:
        print(f"\nbuild FAILED in {seconds:.1f} s")
        return
    print(
        f"\nbuild succeeded in {seconds:.1f} s; open {build / 'html' / 'index.html'} "
        f"or run `{serve_command(build)}`"
    )


def serve_command(build: Path) -> str:
    """The make command that serves this build's site."""
    if build == FULL_BUILD.resolve():
        return "make serve"
    try:
        return f"make serve SITE={(build / 'html').relative_to(ROOT)}"
    except ValueError:
        return f"make serve SITE={build / 'html'}"


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


def parse_args(argv=None) -> argparse.Namespace:
    assert __doc__ is not None  # the module's docstring (absent only under -OO)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--clean", action="store_true", help="remove the build dir first")
    add("--docs", type=Path, default=ROOT / "docs", help="source dir with zh/ and en/")
    add(
        "--build-dir",
        type=Path,
        help=f"output dir (default {FULL_BUILD.name}/, or "
        f"{PARTIAL_BUILD.relative_to(ROOT)}/ with --pages)",
    )
    add("--langs", nargs="+", choices=LANGS, default=list(LANGS))
    add(
        "--pages",
        nargs="+",
        metavar="PAGE",
        help="execute only these pages (e.g. 05-verification glossary); every "
        "page is read, so links and references are checked as in the full build; "
        f"output in {PARTIAL_BUILD.relative_to(ROOT)}/ unless --build-dir",
    )
    add(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help=f"wall-clock limit per edition (default: ${editions.EDITION_TIMEOUT_ENV} "
        f"or {editions.DEFAULT_EDITION_TIMEOUT})",
    )
    add(
        "--pdf",
        choices=("no", "auto", "yes"),
        default="no",
        help="also print each edition to a PDF (tools/build_pdf.py) into "
        "<build>/pdf/ and the site: 'auto' where Chromium and the test tools "
        "are installed (else says it skipped), 'yes' or fail (default: no)",
    )
    return parser.parse_args(argv)


def main(argv=None) -> int:
    options = parse_args(argv)
    default = PARTIAL_BUILD if options.pages else FULL_BUILD
    docs = options.docs.resolve()
    build = (options.build_dir or default).resolve()
    if options.pages:
        options.pages = check_pages(docs, options.pages)
    problem = cache.clean(build, check_only=True) if options.clean else None
    defaults = (FULL_BUILD.resolve(), PARTIAL_BUILD.resolve())
    problem = problem or cache.foreign(build, own_defaults=defaults)
    if problem:
        print(f"build FAILED: {problem}")
        return 1
    try:
        with cache.build_lock(build) as lock_fd:
            return build_book(options, docs, build, lock_fd)
    except cache.BuildBusy as busy:
        print(
            f"build FAILED: another build (pid {busy}) is using {build}; "
            "wait for it to finish, or build elsewhere with --build-dir"
        )
        return 1
    except PermissionError as denied:  # a read-only build folder, or a file in it
        print(
            f"build FAILED: cannot write {denied.filename or build}: permission "
            "denied; make the build folder writable, or build elsewhere with --build-dir"
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
