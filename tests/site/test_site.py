"""Checks on the built site (`make html` output): languages, switcher, offline, search."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import mha_book

LANG_ATTR = {"zh": "zh-CN", "en": "en"}
SKIP = {"genindex.html", "search.html", "py-modindex.html"}


def pages(site: Path, lang: str) -> list[Path]:
    root = site / lang
    return sorted(
        p
        for p in root.rglob("*.html")
        if p.name not in SKIP and not p.relative_to(root).parts[0].startswith("_")
    )


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def search_index(site: Path, lang: str) -> dict:
    text = read(site / lang / "searchindex.js")
    return json.loads(text[text.index("(") + 1 : text.rindex(")")])


def test_the_site_holds_the_landing_page_the_two_editions_and_the_report(site):
    # Nothing else: no executed notebooks (myst-nb's jupyter_execute), no caches
    # (the compressed copies of the files are checked below).
    names = [p.name for p in site.iterdir() if p.suffix not in (".gz", ".br")]
    assert sorted(names) == [
        ".nojekyll",
        "build-report.html",
        "en",
        "index.html",
        "zh",
    ]


def test_every_text_file_has_compressed_copies_of_its_own_bytes(site):
    """tools/compressed.py: what a host sends compressed is the file as built."""
    import gzip

    import brotli

    texts = [
        p
        for p in site.rglob("*")
        if p.suffix in (".html", ".css", ".js", ".json") and p.stat().st_size >= 1024
    ]
    assert len(texts) > 60
    for path in texts:
        data = path.read_bytes()
        assert gzip.decompress(Path(f"{path}.gz").read_bytes()) == data, path
        assert brotli.decompress(Path(f"{path}.br").read_bytes()) == data, path
    orphans = [p for p in site.rglob("*.gz") if not p.with_suffix("").exists()]
    assert orphans == []


def test_both_trees_have_the_same_pages(site):
    zh = [p.relative_to(site / "zh") for p in pages(site, "zh")]
    en = [p.relative_to(site / "en") for p in pages(site, "en")]
    assert zh == en
    assert Path("index.html") in zh and Path("01-overview.html") in zh


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_page_declares_its_language(site, lang):
    for page in pages(site, lang):
        assert f'<html lang="{LANG_ATTR[lang]}"' in read(page), page


@pytest.mark.parametrize("lang,other", [("zh", "en"), ("en", "zh")])
def test_switcher_leads_to_the_same_page_in_the_other_language(site, lang, other):
    for page in pages(site, lang):
        html = read(page)
        links = re.findall(
            r'class="btn btn-sm book-lang-switch"[^>]*href="([^"]+)"', html, re.S
        )
        assert len(links) == 1, (
            f"{page}: expected one language switch, found {len(links)}"
        )
        target = (page.parent / links[0]).resolve()
        expected = (site / other / page.relative_to(site / lang)).resolve()
        assert target == expected, f"{page}: switch leads to {target}, not {expected}"
        assert target.exists()
        hreflangs = dict(
            (code, href)
            for code, href in re.findall(
                r'<link rel="alternate" hreflang="([^"]+)" href="([^"]+)"', html
            )
        )
        assert set(hreflangs) == {"zh-CN", "en"}, page
        assert (page.parent / hreflangs[LANG_ATTR[other]]).resolve() == expected


def test_landing_page_offers_both_languages(site):
    html = read(site / "index.html")
    assert 'href="zh/index.html"' in html and 'href="en/index.html"' in html
    assert "navigator.languages" in html


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_theme_labels_are_translated(site, lang):
    html = read(site / lang / "01-overview.html")
    label = {"zh": "搜索", "en": "Search"}[lang]
    assert label in html


def test_no_missing_glyph_message_anywhere(site):
    for html in site.rglob("*.html"):
        text = read(html)
        assert "missing from font" not in text and not re.search(r"Glyph \d+", text), (
            html
        )


def test_nothing_is_fetched_from_another_host(site):
    remote = re.compile(
        r'<(script|img|iframe)[^>]+src="(https?:)?//|<link[^>]+rel="(stylesheet|preload|icon)"[^>]+href="(https?:)?//'
    )
    for html in site.rglob("*.html"):
        assert not remote.search(read(html)), html
    for css in site.rglob("*.css"):
        assert not re.search(r"url\(\s*['\"]?(https?:)?//", read(css)), css


def test_math_is_html_from_the_build_styled_from_the_site(site):
    """Formulas are KaTeX's HTML in the page; its stylesheet and fonts come from
    the site; no page loads a script to typeset math."""
    for lang in ("zh", "en"):
        html = read(site / lang / "02-scaled-dot-product.html")
        assert html.count('class="katex"') > 20
        assert "katex-error" not in html
        # in the page's one stylesheet (docs/_ext/book_assets.py, bundle_stylesheets)
        assert re.search(
            r"<!-- book-css-sources: [^>]*_static/katex/katex\.min\.css", html
        )
        href = re.search(r'<link[^>]+href="([^"?]*book-katex-[0-9a-f]+\.css)"', html)
        assert href, "KaTeX's stylesheet is not linked"
        css_path = site / lang / href.group(1)
        fonts = re.findall(r'url\("?([^")]*KaTeX[^")]*)"?\)', read(css_path))
        assert fonts and all(f.endswith(".woff2") for f in fonts)
        assert all((css_path.parent / f).is_file() for f in fonts)
        for page in (site / lang).glob("*.html"):
            scripts = re.findall(r'<script[^>]+src="([^"]+)"', read(page))
            assert not [s for s in scripts if re.search(r"(?i)mathjax|katex", s)], page


def test_chinese_search_index_holds_chinese_words(site):
    index = search_index(site, "zh")
    for word in ("注意力", "多头注意力", "张量"):
        assert word in index["terms"] or word in index["titleterms"], word


QUERY_JS = r"""
const fs = require("fs");
const [indexFile, langFile, query] = process.argv.slice(2);
const text = fs.readFileSync(indexFile, "utf8");
global.Search = { _index: JSON.parse(text.slice(text.indexOf("(") + 1, text.lastIndexOf(")"))) };
global.window = global;
// The whole file, as the browser loads it: stop words, stemmer, splitQuery.
(0, eval)(fs.readFileSync(langFile, "utf8"));
const idx = Search._index;
const stemmer = new Stemmer();  // searchtools.js stems every query word
const words = splitQuery(query).map((w) => stemmer.stemWord(w.toLowerCase()));
let docs = null;
for (const w of words) {
  const found = new Set();
  for (const table of [idx.terms, idx.titleterms]) {
    const hit = table[w];
    if (hit === undefined) continue;
    (Array.isArray(hit) ? hit : [hit]).forEach((d) => found.add(idx.docnames[d]));
  }
  docs = docs === null ? found : new Set([...docs].filter((d) => found.has(d)));
}
console.log(JSON.stringify({ words, docs: docs ? [...docs].sort() : [] }));
"""


@pytest.mark.parametrize("query", ["多头注意力", "缩放点积注意力", "注意力"])
def test_chinese_query_without_spaces_finds_pages(site, tmp_path, query):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed; the browser tests cover search")
    script = tmp_path / "query.js"
    script.write_text(QUERY_JS, encoding="utf-8")
    out = subprocess.run(
        [
            node,
            str(script),
            str(site / "zh/searchindex.js"),
            str(site / "zh/_static/language_data.js"),
            query,
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["words"], result
    assert "index" in result["docs"], result


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_footer_names_the_versions_the_page_ran_with(site, lang):
    from importlib import metadata

    html = read(site / lang / "01-overview.html")
    footer = re.search(r'class="book-build-info">([^<]+)<', html)
    assert footer, "no build footer"
    assert metadata.version("torch") in footer.group(1)
    assert metadata.version("mha-book") in footer.group(1)
    assert re.search(r"\d{4}-\d{2}-\d{2}", footer.group(1))


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_chapters_download_as_notebook_and_as_source(site, lang):
    import nbformat

    root = site / lang
    chapters = [p for p in pages(site, lang) if re.match(r"\d\d-", p.name)]
    assert chapters
    for page in chapters:
        html = read(page)
        links = re.findall(r'href="([^"]+\.(ipynb|md))"', html)
        kinds = {kind for _, kind in links}
        assert kinds == {"ipynb", "md"}, f"{page}: download links {links}"
        for href, _kind in links:
            target = (page.parent / href).resolve()
            assert target.is_file() and target.is_relative_to(root), href
        nb = nbformat.read(str(root / "_sources" / f"{page.stem}.ipynb"), as_version=4)
        nbformat.validate(nb)
        assert any(cell.cell_type == "code" for cell in nb.cells)
        # the first cell installs the package that built it and sets the language
        setup = nb.cells[0]
        assert setup.metadata["tags"] == ["mha-book-setup"]
        assert f'"mha-book[notebook]=={mha_book.__version__}"' in setup.source
        assert f'os.environ["MHA_BOOK_LANG"] = "{lang}"' in setup.source
        assert nb.metadata["mha_book"] == {
            "language": lang,
            "version": mha_book.__version__,
        }


def test_a_zh_notebook_prints_chinese_outside_the_build(site, monkeypatch):
    """Run the downloaded zh notebook of chapter 13 up to its first printed
    labels in a plain kernel, without the build's MHA_BOOK_LANG."""
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.delenv("MHA_BOOK_LANG", raising=False)
    nb = nbformat.read(str(site / "zh" / "_sources" / "13-mqa-gqa-kv-cache.ipynb"), 4)
    first_label = next(
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and "pick(" in c.source
    )
    nb.cells = nb.cells[: first_label + 1]
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    printed = "".join(
        out.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for out in c.outputs
    )
    assert "最后一步：输出" in printed and "last step" not in printed


def test_build_report_lists_every_executed_page(site):
    report = read(site / "build-report.html")
    for lang in ("zh", "en"):
        data = json.loads(
            (site.parent / "exec" / f"{lang}.json").read_text(encoding="utf-8")
        )
        assert data
        for doc in data:
            assert f'href="{lang}/{doc}.html"' in report, (lang, doc)
            assert (site / lang / f"{doc}.html").exists()
    assert re.search(r"this build · 本次</td><td>\d+\.\d s", report)
    for lang in ("zh", "en"):
        assert 'href="../build-report.html"' in read(site / lang / "index.html")


def machine_paths_in(site: Path) -> list[str]:
    """Files of the published site that name a path of the build machine."""
    import sys

    root = str(Path(__file__).resolve().parents[2])
    needles = {root, sys.prefix, str(Path.home()) + "/"}
    found = []
    for path in site.rglob("*"):
        if path.is_file() and path.suffix in {
            ".html",
            ".txt",
            ".js",
            ".ipynb",
            ".json",
            ".md",
        }:
            text = path.read_text(encoding="utf-8", errors="replace")
            found += [f"{path.relative_to(site)}: {n}" for n in needles if n in text]
    return found


def test_no_machine_paths_are_published(site):
    assert machine_paths_in(site) == []


def test_the_path_check_sees_an_absolute_path(site, tmp_path):
    copy = tmp_path / "html"
    (copy / "en").mkdir(parents=True)
    (copy / "en" / "page.html").write_text(
        f"File {Path(__file__).resolve().parents[2]}/mha_book/attention/mha.py:105",
        encoding="utf-8",
    )
    assert len(machine_paths_in(copy)) == 1


@pytest.mark.parametrize(
    "lang, title", [("zh", "解答 练习"), ("en", "Solution to Exercise")]
)
def test_exercises_and_solutions_speak_the_page_language(site, lang, title):
    """sphinx-exercise's titles come from its catalogue: none may stay in English on zh pages."""
    exercise_word = {"zh": "练习", "en": "Exercise"}[lang]
    pages = sorted((site / lang).glob("[0-9][0-9]-*.html"))
    titles = []
    for page in pages:
        html = page.read_text(encoding="utf-8")
        titles += re.findall(
            r'<div class="solution dropdown admonition"[^>]*>\s*<p class="admonition-title">(.*?)</p>',
            html,
            re.S,
        )
        assert html.count('class="exercise admonition"') == len(
            re.findall(
                rf'<span class="caption-number">{exercise_word} \d+ </span>', html
            )
        ), page.name
    words = [re.sub(r"<[^>]+>", "", t) for t in titles]
    assert len(words) >= 36
    assert all(re.fullmatch(rf"{title} \d+", " ".join(w.split())) for w in words), (
        words[:3]
    )


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_chapter_links_the_book_pdf_only_when_it_is_there(site, lang):
    """The download menu offers the edition's PDF (tools/build_pdf.py) on every
    page that has the menu, and only when the PDF is in the site."""
    pdf = site / lang / f"mha-book-{lang}.pdf"
    label = {"zh": "整本书 PDF", "en": "Book PDF"}[lang]
    for page in sorted((site / lang).glob("*.html")):
        html = read(page)
        if "dropdown-download-buttons" not in html:
            continue  # the index and search pages have no download menu
        links = re.findall(r'href="([^"]*mha-book-[a-z]+\.pdf)"', html)
        if pdf.exists():
            assert links == [pdf.name] and label in html, page.name
        else:
            assert links == [], f"{page.name} links a PDF that was not printed"


LIBRARY_FRAME = re.compile(r"(?:site-packages|dist-packages|/mha_book/)[^\s<\"']*\.py")


def library_frames(html: str) -> list[str]:
    """Files of library frames that a page's error outputs show (none wanted)."""
    return LIBRARY_FRAME.findall(html)


def test_tracebacks_show_the_cell_and_the_error_only(site):
    shown = 0
    for lang in ("zh", "en"):
        for page in sorted((site / lang).glob("[0-9]*.html")):
            html = page.read_text(encoding="utf-8")
            assert library_frames(html) == [], f"{lang}/{page.name}"
            shown += html.count("Traceback (most recent call last)")
    assert shown >= 14  # chapters 7 and 14 show errors in both editions
    # A traceback through torch.nn.Module, as IPython prints it by default, is caught.
    frame = "File /x/.venv/lib/python3.11/site-packages/torch/nn/modules/module.py:1778"
    assert library_frames(f"<pre>{frame}, in Module._call_impl</pre>") != []
