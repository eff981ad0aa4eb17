"""The PDF editions: whether this build prints them, and printing them."""

from __future__ import annotations

import time
from pathlib import Path

from .. import build_pdf
from .common import ROOT, BuildFailed, read_record


def pdf_wanted(choice: str, partial: bool) -> bool:
    """Whether this build prints the PDF editions (``choice``: no, auto or yes).

    Raises BuildFailed when it must (``yes``) and cannot.
    """
    if choice == "no":
        return False
    if partial:
        print("PDF skipped: a partial build (--pages) prints no PDF")
        return False
    problem = build_pdf.missing_tools()
    if problem and choice == "yes":
        raise BuildFailed(f"cannot print the PDF editions: {problem}")
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
        chapters = read_record(record, {}, healing="printing the PDFs again").get(
            "chapters"
        )
        if not isinstance(chapters, list):  # damaged: print again
            return False
        sources = [ROOT / "docs/_static/book.css", Path(build_pdf.__file__)]
        sources += [build / "html" / lang / f"{c['doc']}.html" for c in chapters]
        if any(not p.exists() or p.stat().st_mtime > made for p in sources):
            return False
    return True


def pdf_offered(build: Path, langs, printing: bool) -> bool:
    """Whether the pages' download menus link the PDF: only where this build
    prints it or every edition's PDF is already there."""
    site = build / "html"
    return printing or all(
        (site / lang / build_pdf.pdf_name(lang)).exists() for lang in langs
    )


def make_pdfs(build: Path, langs) -> None:
    """Print the PDF editions of the built site (unless they are up to date)."""
    if pdfs_up_to_date(build, langs):
        print(f"PDF editions up to date in {build / 'pdf'}")
        return
    start = time.perf_counter()
    try:
        records = build_pdf.build_pdfs(build / "html", build / "pdf", langs)
    except Exception as error:  # noqa: BLE001 - reported, and the build fails
        raise BuildFailed(f"printing the PDF editions: {error}") from error
    for r in records:
        size = (build / "pdf" / r["pdf"]).stat().st_size / 1e6
        print(
            f"[{r['lang']}] PDF: {build / 'pdf' / r['pdf']}: {r['pages']} pages, "
            f"{len(r['chapters'])} chapters, {size:.1f} MB"
        )
    print(f"PDF editions printed in {time.perf_counter() - start:.1f} s")
