"""The PDF editions (tools/build_pdf.py; `make pdf`): read back with pypdf.

Skipped without Chromium (nothing could have printed them); with Chromium,
`make test` runs `make pdf` before the browser tests.
"""

import json
import os
import re
from pathlib import Path

import pytest
from browser import CHROMIUM, site_pages
from conftest import ROOT, SITE
from pdf_checks import (
    CJK,
    RADICAL,
    canonical,
    chapter_body,
    image_count,
    missing_code_lines,
    page_edges,
    page_texts,
    radical_problems,
)

from mha_book import book_map

if not CHROMIUM.exists():
    pytest.skip(
        f"no {CHROMIUM}: the PDF editions are not printed", allow_module_level=True
    )
pytest.importorskip("pypdf")

PDF = SITE.parent / "pdf"  # beside the site the tests read (MHA_BOOK_SITE)
LANGS = ("zh", "en")


@pytest.fixture(scope="module")
def editions():
    """Per language: the record, the PDF's path and its text page by page.

    Each PDF's text is read once and kept (pdf_checks.read_pdf); two test
    processes start with different editions, so each reads one.
    """
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    out = {}
    for lang in LANGS if int(worker or 0) % 2 == 0 else LANGS[::-1]:
        pdf, record = PDF / f"mha-book-{lang}.pdf", PDF / f"{lang}.json"
        if not (pdf.exists() and record.exists()):
            pytest.fail(f"{pdf} is not printed: run `make pdf`")
        out[lang] = (
            json.loads(record.read_text(encoding="utf-8")),
            pdf,
            page_texts(pdf),
        )
    return out


def site_title(page: Path) -> str:
    h1 = re.search(r"<h1>(.*?)</h1>", page.read_text(encoding="utf-8"), re.S).group(1)
    return re.sub(r"<[^>]+>", "", h1.replace("#</a>", "</a>")).strip()


@pytest.mark.parametrize("lang", LANGS)
def test_the_pdf_holds_every_page_of_the_site_in_order(editions, lang):
    from pypdf import PdfReader

    record, pdf, texts = editions[lang]
    pages = [Path(p).stem for p in site_pages(SITE, lang)]
    docs = [c["doc"] for c in record["chapters"]]
    assert sorted(docs) == sorted(pages)
    assert docs[0] == "index"
    assert docs[-len(book_map.BACK_MATTER) :] == list(book_map.BACK_MATTER)
    numbered = [d for d in docs if d[:2].isdigit()]
    assert numbered == [  # part by part, as the sidebar (mha_book.book_map)
        c.slug for p in book_map.PARTS for c in book_map.chapters_in(p.key)
    ]
    reader = PdfReader(pdf)
    # one bookmark per part, holding its chapters'; the introduction on its own
    parts = [book_map.text(p.title, lang) for p in book_map.PARTS]
    parts.append(book_map.text(book_map.BACK_MATTER_CAPTION, lang))
    top = [item.title for item in reader.outline if not isinstance(item, list)]
    assert top == [record["chapters"][0]["title"], *parts]
    nested = [
        i.title for item in reader.outline if isinstance(item, list) for i in item
    ]
    assert nested == [c["title"] for c in record["chapters"][1:]]
    assert len(reader.pages) == record["pages"] == len(texts)
    # The table of contents gives each chapter's first page, which is where it starts.
    toc = canonical("".join(texts[: record["front_pages"]]))
    for c in record["chapters"]:
        assert canonical(f"{c['title']}{c['first_page']}") in toc, c["title"]


@pytest.mark.parametrize("lang", LANGS)
def test_each_chapter_starts_with_its_title_in_the_page_language(editions, lang):
    record, _, texts = editions[lang]
    for c in record["chapters"]:
        assert c["title"] == site_title(SITE / lang / f"{c['doc']}.html")
        first = canonical(texts[c["first_page"] - 1])
        assert canonical(c["title"]) in first, c["title"]
        if lang == "zh":
            assert CJK.search(c["title"]) or c["doc"] == "api", c["title"]
        else:
            assert not CJK.search(c["title"]), c["title"]
    # The zh prose is Chinese (the en edition has some too: the Tang poems).
    chinese = sum(len(CJK.findall(t)) for t in texts)
    if lang == "zh":
        assert chinese > 50_000, f"only {chinese} Chinese characters in the zh PDF"


@pytest.mark.parametrize("lang", LANGS)
def test_every_page_has_its_running_header_and_number(editions, lang):
    record, _, texts = editions[lang]
    problems = []
    for c in record["chapters"]:
        problems += chapter_body(texts, record["book"], c)[1]
    assert not problems, problems[:10]


@pytest.mark.parametrize("lang", LANGS)
def test_every_figure_of_the_site_is_in_the_pdf(editions, lang):
    record, pdf, _ = editions[lang]
    for c in record["chapters"]:
        html = (SITE / lang / f"{c['doc']}.html").read_text(encoding="utf-8")
        article = html[html.index('<article class="bd-article"') :]
        figures = len(re.findall(r"<img\b", article[: article.index("</article>")]))
        drawn = image_count(pdf, c["first_page"], c["pages"])
        assert drawn >= figures, (
            f"{c['doc']}: {drawn} images in the PDF, {figures} on the page"
        )


@pytest.mark.parametrize("lang", LANGS)
def test_no_code_line_is_cut_at_the_page_margin(editions, lang):
    """Every line of every code cell is printed (a cut line loses its tail)."""
    record, pdf, texts = editions[lang]
    problems = []
    for c in record["chapters"]:
        body, _ = chapter_body(texts, record["book"], c)
        edges = page_edges(pdf, c["first_page"], c["pages"])
        source = ROOT / "docs" / lang / f"{c['doc']}.md"
        problems += missing_code_lines(body, source, edges)
    assert not problems, problems[:10]


BROKEN_PRINT_CSS = """@media print { html body article.bd-article div.highlight pre {
  white-space: pre !important; overflow: hidden !important; font-size: 15px !important; } }"""


def test_the_code_check_catches_lines_cut_by_a_broken_print_css(chromium, site_url):
    """The same page printed with code that does not wrap: lines are cut."""
    from tools import build_pdf

    chapter = "10-decoder-char-lm"
    page = chromium.new_page()
    pdf, facts = build_pdf.print_chapter(page, f"{site_url}/en/{chapter}.html", "B", 1)
    page.close()
    source = ROOT / "docs" / "en" / f"{chapter}.md"
    # Printed as the book prints it: every line is there.
    assert not missing_code_lines(page_texts(pdf), source, page_edges(pdf))
    page = chromium.new_page()
    page.goto(f"{site_url}/en/{chapter}.html", wait_until="networkidle")
    page.evaluate(build_pdf.PREPARE_JS)
    page.add_style_tag(content=BROKEN_PRINT_CSS + build_pdf.page_css("B", "T", 1))
    broken = page.pdf(prefer_css_page_size=True)
    page.close()
    cut = missing_code_lines(page_texts(broken), source, page_edges(broken))
    assert len(cut) >= 5, cut


@pytest.mark.parametrize("lang", LANGS)
def test_the_text_layer_has_no_radical_for_an_ideograph(editions, lang):
    """Copied, pasted or searched, 页 stays 页: no CJK radical code point in the
    text layer (Noto CJK draws 页 and ⻚ with one glyph), and the site's own text
    has none either."""
    _, _, texts = editions[lang]
    assert radical_problems(texts) == []
    for page in site_pages(SITE, lang):
        html = (SITE / lang / page).read_text(encoding="utf-8")
        assert not RADICAL.search(html), page


def test_a_radical_in_the_text_layer_is_caught():
    assert radical_problems(["页码", "第 3 ⻚"]) == ["page 2: ⻚"]
