"""Print the built site into one PDF per edition, with the browser the tests drive.

Usage: python -m tools.build_pdf [--site _build/html] [--out _build/pdf] [--langs zh en]

Writes _build/pdf/mha-book-zh.pdf and _build/pdf/mha-book-en.pdf (and a copy
of each into its edition, _build/html/<lang>/, where every page's download
menu links it), plus _build/pdf/<lang>.json: the chapters, their titles and
first pages. `make pdf` runs it through tools/build_book.py --pdf yes;
`make html` runs it when Chromium and the test tools are installed.

The route is Jupyter Book's HTML-to-PDF one: no LaTeX. Playwright drives
Debian's Chromium (/usr/bin/chromium) over the site served on 127.0.0.1.
Each chapter, in the order of the book's table of contents (the sidebar of
index.html: the introduction, then the chapters part by part under the parts'
captions, which mha_book.book_map sets, then the API reference, the glossary
and the references), is printed on its own, once its fonts (KaTeX's
among them: the math is HTML written by the build) have loaded, every image
has decoded and every collapsed cell and solution is open;
the site's print CSS (docs/_static/book.css) hides the page chrome and wraps
long code lines. The running header (book and chapter title) and the page
number are CSS page-margin boxes; each chapter's numbering starts where the
previous one ended, so the page numbers run through the whole book. Then a
title page and a table of contents with those page numbers, grouped under the
parts' titles, are printed, and pypdf merges everything, with one bookmark per
part and, under it, one per chapter.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import io
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from datetime import date
from html import escape
from pathlib import Path

from .compressed import CompressedHandler

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"
OUT = ROOT / "_build" / "pdf"
LANGS = ("zh", "en")
CHROMIUM = Path(os.environ.get("MHA_BOOK_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# A4, with room above and below for the running header and the page number.
PAGE_MARGINS = "18mm 16mm 18mm 16mm"
# The chapter whose first page becomes a PNG (pdftoppm), in each edition.
SCREENSHOT_CHAPTER = "05-verification"
LABELS = {
    "zh": {"edition": "PDF 版", "contents": "目录", "built": "构建于"},
    "en": {"edition": "PDF edition", "contents": "Contents", "built": "Built on"},
}


def pdf_name(lang: str) -> str:
    """The file name of an edition's PDF (the site links it by this name)."""
    return f"mha-book-{lang}.pdf"


def missing_tools() -> str | None:
    """Why the PDF cannot be printed here, or None when it can."""
    if not CHROMIUM.exists():
        return f"no {CHROMIUM} (apt-get install chromium; .ci/run installs it)"
    for module in ("playwright", "pypdf"):
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (make setup-test installs it)"
    return None


class _QuietHandler(CompressedHandler):  # sends what a host sends: compressed copies
    def log_message(self, *args):
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        """A browser that leaves a page mid-download closes its connection:
        not an error of the site. Anything else is printed, as by default."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextmanager
def serve(directory: Path):
    """Serve ``directory`` on 127.0.0.1 at a free port; yield the base URL."""
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = _QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# The book's order: the home link, then the table of contents of the sidebar,
# each page with the caption of its part (null for the home link).
CHAPTERS_JS = """() => {
  const nav = document.querySelector("nav.bd-docs-nav");
  const links = [...nav.querySelectorAll(".bd-sidenav__home-link a, ul.bd-sidenav > li.toctree-l1 > a")];
  const part = (a) => {
    const list = a.closest("ul.bd-sidenav");
    if (list.classList.contains("bd-sidenav__home-link")) return null;
    const caption = list.previousElementSibling;
    return caption && caption.matches("p.caption") ? caption.textContent.trim() : null;
  };
  return {book: document.querySelector(".logo__title").textContent.trim(),
          pages: links.map((a) => new URL(a.getAttribute("href"), location.href).pathname),
          titles: links.map((a) => a.textContent.trim()),
          parts: links.map(part)};
}"""

# Ready to print: collapsed cells and solutions open, images decoded, math typeset.
PREPARE_JS = """async () => {
  for (const d of document.querySelectorAll("details")) d.open = true;
  for (const el of document.querySelectorAll(".toggle-hidden")) el.classList.remove("toggle-hidden");
  for (const img of document.images) {
    img.loading = "eager";
    try { await img.decode(); } catch (e) {}
  }
  await document.fonts.ready;
  const h1 = document.querySelector("article.bd-article h1");
  const title = h1.cloneNode(true);
  title.querySelectorAll(".headerlink").forEach((a) => a.remove());
  return {title: title.textContent.trim(),
          typeset: document.querySelectorAll(".math .katex").length,
          math: document.querySelectorAll(".math").length,
          images: [...document.querySelectorAll("article.bd-article img")].filter((i) => i.naturalWidth > 0).length};
}"""


def css_string(text: str) -> str:
    """``text`` as a CSS string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def page_css(book: str, chapter: str, first_page: int) -> str:
    """The @page rules of a chapter: running header, page number from ``first_page``."""
    box = "font: 8.5pt sans-serif; color: #555;"
    return f"""@page {{ size: A4; margin: {PAGE_MARGINS};
  @top-left {{ content: {css_string(book)}; {box} }}
  @top-right {{ content: {css_string(chapter)}; {box} }}
  @bottom-center {{ content: counter(page); {box} }} }}
@page :first {{ counter-increment: page {first_page}; }}"""


def print_chapter(page, url: str, book: str, first_page: int) -> tuple[bytes, dict]:
    """Print one page of the site; return the PDF and what the page held."""
    page.goto(url, wait_until="networkidle")
    facts = page.evaluate(PREPARE_JS)
    if facts["typeset"] < facts["math"]:
        raise RuntimeError(
            f"{url}: {facts['math'] - facts['typeset']} of {facts['math']} formulas "
            "lack KaTeX's markup (the math is rendered by the build: docs/_ext/book_math.py)"
        )
    page.add_style_tag(content=page_css(book, facts["title"], first_page))
    pdf = page.pdf(prefer_css_page_size=True, print_background=True)
    return pdf, facts


def toc_rows(toc) -> str:
    """The table of contents' lines: a part's title before its first chapter.

    ``toc``: ``(title, first page, part or None)`` per chapter, in order.

    >>> print(toc_rows([("Intro", 3, None), ("One", 5, "Part I"), ("Two", 9, "Part I")]))
    <li><a href="#p3"><span class="t">Intro</span><span class="n">3</span></a></li>
    <li class="part">Part I</li>
    <li class="in-part"><a href="#p5"><span class="t">One</span><span class="n">5</span></a></li>
    <li class="in-part"><a href="#p9"><span class="t">Two</span><span class="n">9</span></a></li>
    """
    rows, current = [], None
    for title, number, part in toc:
        if part and part != current:
            rows.append(f'<li class="part">{escape(part)}</li>')
        current = part
        css = ' class="in-part"' if part else ""
        rows.append(
            f'<li{css}><a href="#p{number}"><span class="t">{escape(title)}</span>'
            f'<span class="n">{number}</span></a></li>'
        )
    return "\n".join(rows)


def front_matter_html(lang: str, book: str, toc) -> str:
    """The title page and the table of contents, with page numbers and links.

    ``toc``: ``(title, first page, part or None)`` per chapter, in order.
    """
    words = LABELS[lang]
    rows = toc_rows(toc)
    hreflang = {"zh": "zh-CN", "en": "en"}[lang]
    return f"""<!DOCTYPE html><html lang="{hreflang}"><head><meta charset="utf-8">
<title>{escape(book)}</title><style>
@page {{ size: A4; margin: 25mm 22mm; }}
body {{ font-family: "DejaVu Sans", "Noto Sans CJK SC", sans-serif; color: #222; }}
.title {{ height: 230mm; display: flex; flex-direction: column; justify-content: center; }}
.title h1 {{ font-size: 28pt; line-height: 1.3; margin: 0 0 8mm; }}
.title p {{ font-size: 13pt; color: #555; margin: 2mm 0; }}
.toc {{ break-before: page; }}
.toc h2 {{ font-size: 18pt; margin: 0 0 8mm; }}
.toc ol {{ list-style: none; padding: 0; margin: 0; }}
.toc li {{ font-size: 11.5pt; margin: 0 0 3.2mm; }}
.toc a {{ display: flex; color: inherit; text-decoration: none; }}
.toc .t {{ flex: 1; border-bottom: 1px dotted #999; margin-right: 3mm; }}
.toc .n {{ font-variant-numeric: tabular-nums; }}
.toc li.part {{ font-weight: bold; margin: 5mm 0 3.2mm; break-after: avoid; }}
.toc li.in-part {{ padding-left: 5mm; }}
</style></head><body>
<section class="title"><h1>{escape(book)}</h1>
<p>{words["edition"]}</p><p>{words["built"]} {date.today().isoformat()}</p></section>
<section class="toc"><h2>{words["contents"]}</h2><ol>
{rows}
</ol></section></body></html>"""


def print_front_matter(page, lang: str, book: str, toc) -> bytes:
    page.set_content(front_matter_html(lang, book, toc), wait_until="load")
    page.evaluate("document.fonts.ready.then(() => true)")
    return page.pdf(prefer_css_page_size=True)


def build_edition(browser, base: str, site: Path, lang: str, out: Path) -> dict:
    """Print one edition; write its PDF and its record; return the record."""
    page = browser.new_page(locale={"zh": "zh-CN", "en": "en-US"}[lang])
    page.goto(f"{base}/{lang}/index.html", wait_until="load")
    order = page.evaluate(CHAPTERS_JS)
    book = order["book"]
    # The front matter's length depends on its entries (a long title wraps, a
    # part adds a row): print it once with the sidebar's titles and placeholder
    # page numbers to learn where the first chapter starts.
    placeholder = [
        (title, 999, part) for title, part in zip(order["titles"], order["parts"])
    ]
    front_pages = pdf_pages(print_front_matter(page, lang, book, placeholder))
    chapters, pdfs = print_chapters(page, base, order["pages"], book, front_pages + 1)
    for chapter, part in zip(chapters, order["parts"]):
        chapter["part"] = part
    front = print_front_matter(
        page,
        lang,
        book,
        [(c["title"], c["first_page"], c["part"]) for c in chapters],
    )
    page.close()
    if pdf_pages(front) != front_pages:
        raise RuntimeError(f"[{lang}] the table of contents changed length")
    target = out / pdf_name(lang)
    write_book_pdf(target, book, front, front_pages, chapters, pdfs)
    record = {
        "lang": lang,
        "book": book,
        "pdf": target.name,
        "pages": front_pages + sum(c["pages"] for c in chapters),
        "front_pages": front_pages,
        "chapters": chapters,
    }
    (out / f"{lang}.json").write_text(
        json.dumps(record, ensure_ascii=False, indent=1), encoding="utf-8"
    )
    shutil.copy2(target, site / lang / target.name)
    return record


def pdf_pages(pdf: bytes) -> int:
    """How many pages a printed PDF has."""
    from pypdf import PdfReader

    return len(PdfReader(io.BytesIO(pdf)).pages)


def print_chapters(page, base: str, paths, book: str, first_page: int):
    """Print each chapter, numbering its pages on from ``first_page``.

    Returns the chapters' records and their PDFs.
    """
    chapters, pdfs, next_page = [], [], first_page
    for path in paths:
        pdf, facts = print_chapter(page, base + path, book, next_page)
        pages = pdf_pages(pdf)
        chapters.append(
            {
                "doc": Path(path).stem,
                "title": facts["title"],
                "first_page": next_page,
                "pages": pages,
                "images": facts["images"],
            }
        )
        pdfs.append(pdf)
        next_page += pages
    return chapters, pdfs


def write_book_pdf(
    target: Path, book: str, front: bytes, front_pages: int, chapters, pdfs
):
    """Join the front matter and the chapters into one PDF with an outline."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.append(io.BytesIO(front))
    for pdf in pdfs:
        writer.append(io.BytesIO(pdf))
    add_outline(writer, chapters)
    writer.add_metadata({"/Title": book, "/Creator": "mha_book tools/build_pdf.py"})
    link_contents(writer, front_pages, chapters)
    unradical_fonts(writer)
    writer.page_mode = "/UseOutlines"
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "wb") as f:
        writer.write(f)


def add_outline(writer, chapters: list[dict]) -> None:
    """One bookmark per part (at its first chapter) holding one per chapter;
    a chapter outside the parts (the introduction) gets one at the top level."""
    current, parent = None, None
    for chapter in chapters:
        part, index = chapter.get("part"), chapter["first_page"] - 1
        if part != current:
            current = part
            parent = (
                writer.add_outline_item(title=part, page_number=index) if part else None
            )
        writer.add_outline_item(
            title=chapter["title"], page_number=index, parent=parent
        )


# --- the text layer: one code point per glyph ------------------------------------
# Noto Sans CJK draws some ideographs with the glyph of a CJK radical (页 and the
# radical ⻚, U+2EDA, are one glyph), and Chromium's PDF writes the radical's code
# point into the font's ToUnicode map: copied, pasted or searched, 页 becomes ⻚.
# Every such entry is rewritten to the ideograph that the font's own cmap gives
# the same glyph; the book's text holds no radicals (the tests check both).
NOTO_CJK = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
RADICALS = range(0x2E80, 0x2FE0)  # CJK Radicals Supplement and Kangxi Radicals
CMAP_CHAR = re.compile(r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>")  # code, text
CMAP_RANGE = re.compile(  # first code, last code, text of the first (or a list)
    r"<([0-9A-Fa-f]+)>\s*<([0-9A-Fa-f]+)>\s*(<[0-9A-Fa-f]+>|\[[^\]]*\])"
)


@functools.cache
def radical_ideographs(font: Path = NOTO_CJK) -> dict[int, int]:
    """CJK radical -> the ideograph drawn with the same glyph in Noto Sans CJK.

    Each face of the collection is asked (SC first): a page in English draws
    its Chinese with another face (⻄ and 西 are one glyph in the JP face only).
    """
    if not font.exists():
        return {}
    from fontTools.ttLib import TTCollection

    faces = TTCollection(str(font), lazy=True).fonts
    table: dict[int, int] = {}
    for face in [faces[2], *faces[:2], *faces[3:]]:  # face 2 is SC
        cmap = face.getBestCmap()
        ideograph: dict[str, int] = {}
        for cp, glyph in sorted(cmap.items()):
            if 0x4E00 <= cp <= 0x9FFF:
                ideograph.setdefault(glyph, cp)
        for cp, glyph in cmap.items():
            if cp in RADICALS and glyph in ideograph:
                table.setdefault(cp, ideograph[glyph])
    return table


def _cmap_entries(body: str, ranges: bool) -> list[tuple[int, str]]:
    """(code, UTF-16BE hex) pairs of a bfchar or bfrange block's text."""
    if not ranges:
        return [(int(code, 16), target) for code, target in CMAP_CHAR.findall(body)]
    entries = []
    for first, last, target in CMAP_RANGE.findall(body):
        start = int(first, 16)
        if target.startswith("["):
            for i, item in enumerate(re.findall(r"<([0-9A-Fa-f]+)>", target)):
                entries.append((start + i, item))
        else:
            base = int(target.strip("<>"), 16)
            width = len(target) - 2
            for i in range(int(last, 16) - start + 1):
                entries.append((start + i, f"{base + i:0{width}X}"))
    return entries


def unradical_cmap(cmap: str, table: dict[int, int]) -> str:
    r"""A ToUnicode CMap with every radical code point replaced by ``table``'s
    ideograph; unchanged (same text) where it maps no radical.

    Example:
        >>> cmap = ("2 beginbfchar\n<0001> <2EDA>\n<0004> <0020>\nendbfchar\n"
        ...         "1 beginbfrange\n<0002> <0003> <0041>\nendbfrange\nendcmap")
        >>> print(unradical_cmap(cmap, {0x2EDA: 0x9875}))
        4 beginbfchar
        <0001> <9875>
        <0004> <0020>
        <0002> <0041>
        <0003> <0042>
        endbfchar
        endcmap
        >>> unradical_cmap(cmap.replace("2EDA", "4E00"), {0x2EDA: 0x9875}) == cmap.replace("2EDA", "4E00")
        True
    """
    blocks = list(re.finditer(r"\d+\s+begin(bfchar|bfrange)(.*?)end\1\s*", cmap, re.S))
    if not blocks:
        return cmap
    entries = []
    for block in blocks:
        entries += _cmap_entries(block.group(2), block.group(1) == "bfrange")
    fixed = []
    for code, target in entries:
        point = int(target, 16) if len(target) == 4 else None
        if point in table:
            target = f"{table[point]:04X}"
        fixed.append((code, target))
    if fixed == entries:
        return cmap
    first = CMAP_CHAR.search(blocks[0].group(2))
    if first is None:
        raise ValueError(
            "ToUnicode CMap: its first block has no entry to size codes by"
        )
    width = len(first.group(1))
    lines = []
    for i in range(0, len(fixed), 100):  # at most 100 entries a block (PDF spec)
        chunk = fixed[i : i + 100]
        lines.append(f"{len(chunk)} beginbfchar")
        lines += [f"<{code:0{width}X}> <{target}>" for code, target in chunk]
        lines.append("endbfchar")
    return (
        cmap[: blocks[0].start()] + "\n".join(lines) + "\n" + cmap[blocks[-1].end() :]
    )


def unradical_fonts(writer) -> int:
    """Fix the ToUnicode map of every font of ``writer``'s pages; return how many."""
    table, done, fixed = radical_ideographs(), set(), 0
    for page in writer.pages:
        fonts = page.get("/Resources", {}).get("/Font", {})
        for ref in fonts.values():
            to_unicode = ref.get_object().get("/ToUnicode")
            if to_unicode is None or to_unicode.indirect_reference in done:
                continue
            done.add(to_unicode.indirect_reference)
            stream = to_unicode.get_object()
            text = stream.get_data().decode("latin-1")
            new = unradical_cmap(text, table)
            if new != text:
                stream.set_data(new.encode("latin-1"))
                fixed += 1
    return fixed


def link_contents(writer, front_pages: int, chapters: list[dict]) -> None:
    """Make each line of the table of contents a link to its chapter's first page.

    The front matter's entries were printed as links to ``#p<page>``;
    Chromium writes them as link annotations on the table-of-contents pages
    (internal targets without a destination it could resolve), and here they
    become links to the page.
    """
    from pypdf.generic import (
        ArrayObject,
        DictionaryObject,
        NameObject,
        NullObject,
        NumberObject,
    )

    wanted = {c["first_page"] for c in chapters}
    for index in range(front_pages):
        page = writer.pages[index]
        for ref in page.get("/Annots", []) or []:
            annot = ref.get_object()
            action = annot.get("/A")
            uri = str(action.get_object().get("/URI", "")) if action else ""
            if "#p" not in uri:
                continue
            number = int(uri.rsplit("#p", 1)[1])
            if number not in wanted:
                continue
            del annot[NameObject("/A")]
            annot[NameObject("/Dest")] = ArrayObject(
                [
                    writer.pages[number - 1].indirect_reference,
                    NameObject("/XYZ"),
                    NullObject(),
                    NullObject(),
                    NumberObject(0),
                ]
            )
            annot.setdefault(NameObject("/Border"), DictionaryObject())


def screenshot(pdf: Path, page_number: int, png: Path) -> bool:
    """Render one page of ``pdf`` to ``png`` with pdftoppm; False if it is missing."""
    if not shutil.which("pdftoppm"):
        return False
    png.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["pdftoppm", "-png", "-r", "100", "-singlefile", "-f", str(page_number)]
        + ["-l", str(page_number), str(pdf), str(png.with_suffix(""))],
        check=True,
    )
    return True


def shoot_first_page(out: Path, record: dict, folder: Path) -> Path | None:
    """A PNG of the first page of SCREENSHOT_CHAPTER, rendered from the PDF."""
    chapter = next(
        (c for c in record["chapters"] if c["doc"] == SCREENSHOT_CHAPTER), None
    )
    png = folder / f"pdf-{record['lang']}-{SCREENSHOT_CHAPTER}.png"
    if chapter and screenshot(out / record["pdf"], chapter["first_page"], png):
        return png
    return None


def build_pdfs(site: Path = SITE, out: Path = OUT, langs=LANGS) -> list[dict]:
    """Print every edition in ``langs``; return their records."""
    from playwright.sync_api import sync_playwright

    for lang in langs:
        if not (site / lang / "index.html").exists():
            raise SystemExit(f"PDF FAILED: no built site in {site / lang}")
    records = []
    with serve(site) as base, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            for lang in langs:
                records.append(build_edition(browser, base, site, lang, out))
                shoot_first_page(out, records[-1], out.parent / "screenshots")
        finally:
            browser.close()
    return records


def main(argv=None) -> int:
    assert __doc__ is not None  # the module's docstring (absent only under -OO)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=SITE)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--langs", nargs="+", choices=LANGS, default=list(LANGS))
    args = parser.parse_args(argv)
    problem = missing_tools()
    if problem:
        print(f"PDF FAILED: {problem}")
        return 1
    start = time.perf_counter()
    for record in build_pdfs(args.site.resolve(), args.out.resolve(), args.langs):
        pdf = args.out / record["pdf"]
        print(
            f"[{record['lang']}] {pdf}: {record['pages']} pages, "
            f"{len(record['chapters'])} chapters, {pdf.stat().st_size / 1e6:.1f} MB"
        )
    print(f"PDF editions printed in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
