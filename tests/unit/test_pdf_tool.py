"""tools/build_book.py --pdf: the PDF step is optional, and says when it skips."""

import json
import os
from pathlib import Path

import pytest

from tools import build_pdf
from tools.build.cache import prune_caches
from tools.build.common import BuildFailed
from tools.build.pdf import pdf_wanted, pdfs_up_to_date


def test_without_chromium_auto_skips_saying_so_and_yes_fails(monkeypatch, capsys):
    monkeypatch.setattr(build_pdf, "CHROMIUM", Path("/nonexistent/chromium"))
    assert pdf_wanted("auto", partial=False) is False
    out = capsys.readouterr().out
    assert out.startswith("PDF skipped: no /nonexistent/chromium")
    with pytest.raises(BuildFailed, match="cannot print the PDF editions"):
        pdf_wanted("yes", partial=False)
    assert pdf_wanted("no", partial=False) is False
    assert capsys.readouterr().out == ""


def test_a_partial_build_prints_no_pdf(capsys):
    assert pdf_wanted("yes", partial=True) is False
    assert "PDF skipped: a partial build" in capsys.readouterr().out


def test_the_running_header_is_a_css_string():
    css = build_pdf.page_css('a "b" \\c', "第 5 章", 12)
    assert 'content: "a \\"b\\" \\\\c"' in css
    assert "counter-increment: page 12" in css


def stored(tmp_path, ages: dict[str, float]):
    store = tmp_path / "artifacts"
    store.mkdir(exist_ok=True)
    for name, when in ages.items():
        (store / f"{name}.pt").write_text(name)
        (store / f"{name}.lock").touch()
        os.utime(store / f"{name}.pt", (when, when))
    return store


def cache_begun(tmp_path, name: str, began: float, used: float):
    cache = tmp_path / "jupyter_cache" / name
    cache.mkdir(parents=True)
    for file, when in (("global.db", began), ("executed.ipynb", used)):
        (cache / file).touch()
        os.utime(cache / file, (when, when))
    os.utime(cache, (used, used))


def test_pruning_keeps_every_result_a_kept_cache_may_use(tmp_path):
    """Chapter 14 uses five runs of one kind: a no-change build that pruned
    to three of each kind deleted two that its pages still used."""
    runs = {f"extrapolation-{i}": 1000 + i for i in range(5)}
    store = stored(tmp_path, {**runs, "train-older": 500})
    cache_begun(tmp_path, "zh-aaaa", began=900, used=2000)
    cache_begun(tmp_path, "zh-bbbb", began=100, used=50)  # least recently used
    removed = prune_caches(tmp_path, langs=("zh",), keep=1)
    assert sorted(p.name for p in removed) == ["train-older.pt", "zh-bbbb"]
    assert sorted(p.stem for p in store.glob("*.pt")) == sorted(runs)
    assert not (store / "train-older.lock").exists()


def test_pruning_without_any_cache_keeps_every_result(tmp_path):
    store = stored(tmp_path, {"train-a": 10, "train-b": 20})
    assert prune_caches(tmp_path, langs=(), keep=2) == []
    assert len(list(store.glob("*.pt"))) == 2


def test_pruning_never_removes_what_this_build_used(tmp_path):
    """One build stores more results of a kind than are kept (chapter 14 makes
    five runs): a build that pruned by count alone deleted its own models."""
    store = tmp_path / "artifacts"
    store.mkdir()
    for age, name in enumerate(
        ["train-new1", "train-new2", "train-new3", "train-old1"]
    ):
        (store / f"{name}.pt").write_text(name)
        (store / f"{name}.sha256").write_text("digest")
        os.utime(store / f"{name}.pt", (1000 - age, 1000 - age))
    os.utime(store / "train-old1.pt", (10, 10))  # used by an old build only
    removed = prune_caches(tmp_path, langs=(), keep=0, used_since=500)
    assert [p.name for p in removed] == ["train-old1.pt"]
    assert sorted(p.name for p in store.glob("*.pt")) == [
        "train-new1.pt",
        "train-new2.pt",
        "train-new3.pt",
    ]
    assert not (store / "train-old1.sha256").exists()


def test_the_pdfs_are_printed_again_only_when_a_page_they_print_changed(tmp_path):
    """`make test` prints the PDF editions only when their inputs changed: each
    edition's PDF must be newer than every page it prints (and the print
    stylesheet and the printer); `make pdf` on an unchanged site prints nothing."""
    for lang in ("zh", "en"):
        page = tmp_path / "html" / lang / "01-overview.html"
        page.parent.mkdir(parents=True)
        page.write_text("<p>page</p>", encoding="utf-8")
        os.utime(page, (1, 1))  # long ago
    assert not pdfs_up_to_date(tmp_path, ("zh", "en"))  # none printed yet
    (tmp_path / "pdf").mkdir()
    for lang in ("zh", "en"):
        (tmp_path / "pdf" / build_pdf.pdf_name(lang)).write_bytes(b"%PDF")
        record = {"chapters": [{"doc": "01-overview"}]}
        (tmp_path / "pdf" / f"{lang}.json").write_text(json.dumps(record))
    assert pdfs_up_to_date(tmp_path, ("zh", "en"))
    (tmp_path / "html" / "en" / "01-overview.html").touch()  # rebuilt after printing
    assert not pdfs_up_to_date(tmp_path, ("zh", "en"))
    assert pdfs_up_to_date(tmp_path, ("zh",))
    (tmp_path / "pdf" / "zh.json").write_text("{garbage")  # damaged: print again
    assert not pdfs_up_to_date(tmp_path, ("zh",))
    (tmp_path / "pdf" / "zh.json").unlink()
    assert not pdfs_up_to_date(tmp_path, ("zh",))


def _blank_pdf(pages: int) -> bytes:
    import io

    from pypdf import PdfWriter

    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(100, 100)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_the_outline_holds_each_chapter_under_its_part(tmp_path):
    from pypdf import PdfReader

    from tools.build_pdf import write_book_pdf

    chapters = [  # first pages after one page of front matter
        {"title": "Intro", "first_page": 2, "part": None},
        {"title": "One", "first_page": 3, "part": "Part I"},
        {"title": "Two", "first_page": 5, "part": "Part I"},
        {"title": "Three", "first_page": 6, "part": "Part II"},
        {"title": "API", "first_page": 7, "part": "Reference"},
    ]
    pdfs = [_blank_pdf(n) for n in (1, 2, 1, 1, 1)]
    target = tmp_path / "book.pdf"
    write_book_pdf(target, "Book", _blank_pdf(1), 1, chapters, pdfs)
    reader = PdfReader(target)
    outline = reader.outline
    top = [item.title for item in outline if not isinstance(item, list)]
    assert top == ["Intro", "Part I", "Part II", "Reference"]
    nested = [[i.title for i in item] for item in outline if isinstance(item, list)]
    assert nested == [["One", "Two"], ["Three"], ["API"]]
    pages = {
        item.title: reader.get_destination_page_number(item) + 1
        for item in (
            x
            for entry in outline
            for x in (entry if isinstance(entry, list) else [entry])
        )
    }
    assert pages == {
        "Intro": 2, "Part I": 3, "One": 3, "Two": 5, "Part II": 6, "Three": 6,
        "Reference": 7, "API": 7,
    }  # fmt: skip


def test_the_table_of_contents_names_each_part_once_before_its_chapters():
    from tools.build_pdf import front_matter_html

    toc = [
        ("Intro", 3, None),
        ("One", 5, "Part I"),
        ("Two", 9, "Part I"),
        ("API", 12, "Reference"),
    ]
    html = front_matter_html("en", "Book", toc)
    assert html.count('<li class="part">Part I</li>') == 1
    assert html.index("Part I") < html.index("One") < html.index("Two")
    assert html.index("Intro") < html.index("Part I")
    assert html.count('class="in-part"') == 3


def test_a_build_folder_it_cannot_write_is_one_line(tmp_path, monkeypatch, capsys):
    """Read-only for a user (root writes anyway, so the refusal is simulated)."""
    import contextlib

    import tools.build_book as build_book

    @contextlib.contextmanager
    def denied(build):
        raise PermissionError(13, "Permission denied", str(build / ".lock"))
        yield

    monkeypatch.setattr(build_book.cache, "build_lock", denied)
    code = build_book.main(["--build-dir", str(tmp_path / "_build")])
    out = capsys.readouterr().out
    assert code == 1 and "Traceback" not in out
    assert out.strip().splitlines() == [
        f"build FAILED: cannot write {tmp_path / '_build' / '.lock'}: permission "
        "denied; make the build folder writable, or build elsewhere with --build-dir"
    ]
