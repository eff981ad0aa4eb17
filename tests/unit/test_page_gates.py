"""The page gates (tools/check_pages.py): no glue in a visible cell, every
list of chapters links every chapter it claims, and the map of the book
(mha_book.book_map) agrees with the pages. Each passes on the real book
and fails on a broken copy. Also: the build report shows no empty section."""

from pathlib import Path

from tools.check_pages import (
    chapter_list_problems,
    glue_problems,
    map_problems,
    page_problems,
)

ROOT = Path(__file__).resolve().parents[2]

DOCS = ROOT / "docs"


def write(tmp_path: Path, pages: dict[str, str]) -> Path:
    for lang in ("zh", "en"):
        (tmp_path / lang).mkdir(parents=True, exist_ok=True)
        for name, text in pages.items():
            (tmp_path / lang / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_the_book_passes():
    assert page_problems(DOCS) == []


def test_the_book_has_no_visible_glue_and_marks_its_chapter_lists():
    # The gates have something to check in the real book.
    for lang in ("zh", "en"):
        text = {
            p.name: p.read_text(encoding="utf-8") for p in (DOCS / lang).glob("*.md")
        }
        assert sum(t.count("glue(") for t in text.values()) > 100
        assert "% chapters: 01-08" in text["09-summary.md"], lang
        # the lists of later chapters are written from the map, not typed
        assert "```{book-map} contents" in text["index.md"], lang
        assert "```{book-map} parts" in text["index.md"], lang
        assert "```{book-map} path" in text["08-best-practices.md"], lang
        assert "```{book-map} next" in text["09-summary.md"], lang


def _mapped_copy(tmp_path: Path) -> Path:
    """A copy of the book's pages, whose index writes its contents from the map."""
    import shutil

    for lang in ("zh", "en"):
        shutil.copytree(DOCS / lang, tmp_path / lang)
    return tmp_path


def test_a_chapter_page_the_map_does_not_list_is_caught(tmp_path):
    docs = _mapped_copy(tmp_path)
    assert page_problems(docs) == []
    for lang in ("zh", "en"):
        (docs / lang / "18-next.md").write_text("# Next\n", encoding="utf-8")
    problems = page_problems(docs)
    assert problems == [
        f"{lang}/18-next.md: a chapter page that mha_book/data/book_map.toml does not "
        "list: add a [[chapter]]"
        for lang in ("zh", "en")
    ]


def test_a_chapter_of_the_map_without_its_page_or_title_is_caught(tmp_path):
    docs = _mapped_copy(tmp_path)
    (docs / "en" / "14-positions.md").unlink()
    zh = docs / "zh" / "13-mqa-gqa-kv-cache.md"
    zh.write_text(
        zh.read_text(encoding="utf-8").replace("# MQA、GQA 与 KV 缓存", "# 另一个标题"),
        encoding="utf-8",
    )
    problems = map_problems(docs)
    assert "en/14-positions.md: chapter 14 of the map has no page" in problems
    assert any(
        p.startswith("zh/13-mqa-gqa-kv-cache.md: the first heading") for p in problems
    )
    assert len(problems) == 2


def test_needs_that_are_not_earlier_chapters_are_caught():
    from dataclasses import replace

    from mha_book.book_map import CHAPTERS

    broken = [replace(c, needs=(17,)) if c.number == 12 else c for c in CHAPTERS]
    problems = map_problems(DOCS, broken)
    assert problems == [
        "mha_book/data/book_map.toml: chapter 12 needs chapter(s) 17, which are not "
        "earlier chapters of the map"
    ]


def test_a_scratch_book_without_the_map_is_not_checked_against_it(tmp_path):
    docs = write(tmp_path, {"index.md": "# Book\n", "10-a.md": "# A\n"})
    assert page_problems(docs) == []


def test_visible_glue_is_caught(tmp_path):
    visible = "```{code-cell} ipython3\nx = 2\nglue('x', x, display=False)\n```\n"
    collapsed = "```{code-cell} ipython3\n:tags: [hide-input]\nglue('x', 2)\n```\n"
    removed = "```{code-cell} ipython3\n:tags: [remove-cell]\nglue('x', 2)\n```\n"
    docs = write(tmp_path, {"a.md": visible + collapsed + removed})
    problems = glue_problems(docs)
    assert len(problems) == 4  # two cells in each edition
    assert all("a visible code cell calls glue(" in p for p in problems)
    assert ":1:" in problems[0] and ":5:" in problems[1]


def test_a_chapter_list_missing_a_chapter_is_caught(tmp_path):
    pages = {f"{n}-c.md": "# C\n" for n in ("01", "02", "03", "04")}
    pages["index.md"] = "% chapters: 02-\n- [b](02-c.md)\n- [c](03-c.md)\n"
    problems = chapter_list_problems(write(tmp_path, pages))
    assert problems == [
        f"{lang}/index.md:2: the list marked 'chapters: 02-' does not link chapter(s) 04"
        for lang in ("zh", "en")
    ]
    pages["index.md"] = (
        "% chapters: 02-\n- [b](02-c.md)\n- [c](03-c.md)\n- [d](04-c.md)\n"
    )
    assert chapter_list_problems(write(tmp_path, pages)) == []


def test_a_closed_range_and_an_unmarked_list(tmp_path):
    pages = {f"{n}-c.md": "# C\n" for n in ("01", "02", "03", "04", "05")}
    four = "".join(f"- [x]({n}-c.md)\n" for n in ("01", "02", "03", "04"))
    pages["index.md"] = "% chapters: 01-03\n- [a](01-c.md)\n- [c](03-c.md)\n\n" + four
    problems = chapter_list_problems(write(tmp_path, pages))
    assert problems[0] == (
        "zh/index.md:2: the list marked 'chapters: 01-03' does not link chapter(s) 02"
    )
    assert "zh/index.md:5: this block links 4 chapters: mark it" in problems[1]
    assert len(problems) == 4


def test_a_chapter_list_inside_a_code_fence_is_not_prose(tmp_path):
    pages = {f"{n}-c.md": "# C\n" for n in ("01", "02", "03", "04")}
    four = "".join(f"[x]({n}-c.md)\n" for n in ("01", "02", "03", "04"))
    pages["index.md"] = "```text\n" + four + "```\n\n:::{note}\n" + four + ":::\n"
    problems = chapter_list_problems(write(tmp_path, pages))
    # the code block is not a list; the note's body is prose and is checked
    assert [p.split(":")[1] for p in problems] == ["8", "8"]


def test_the_build_report_shows_no_empty_page_weight_section(tmp_path):
    from tools.build.page_weight import PAGE_WEIGHT, page_weight_section

    unmeasured = page_weight_section(tmp_path)
    assert "Page weight" not in unmeasured and "<p>" not in unmeasured
    for damaged in ("{not json", "[]", "null", "[1, 2]", '{"site": 1, "budget": []}'):
        (tmp_path / PAGE_WEIGHT).write_text(damaged, encoding="utf-8")
        assert "<p>" not in page_weight_section(tmp_path)  # heals: measure again


def test_the_page_weight_table_is_shown_only_for_the_build_it_measured(tmp_path):
    import json

    from tools.build.page_weight import (
        PAGE_WEIGHT,
        page_weight_section,
        site_fingerprint,
    )

    site = tmp_path / "html"
    site.mkdir()
    (site / "index.html").write_text("<p>one</p>", encoding="utf-8")
    row = {
        "bytes": 2048,
        "by_kind": {"image": 0},
        "requests": 3,
        "blocking_ms": 7,
        "lcp_ms": 900,
        "load_ms": 1200,
        "math_css": False,
    }
    data = {
        "budget": {
            "bytes": 1024,
            "image_bytes": 1024,
            "blocking_ms": 300,
            "load_ms": 1,
            "lcp_ms": 1,
        },
        "measured": "2026-12-04T20:00:00",
        "site": site_fingerprint(site),
        "summary": {},
        "pages": {"en/index.html": row},
    }
    (tmp_path / PAGE_WEIGHT).write_text(json.dumps(data), encoding="utf-8")
    fresh = page_weight_section(tmp_path)
    assert "en/index.html" in fresh and "on this build" in fresh
    assert "2026-12-04T20:00:00" in fresh
    (site / "index.html").write_text("<p>two</p>", encoding="utf-8")  # a new build
    stale = page_weight_section(tmp_path)
    assert "en/index.html" not in stale
    assert "another build" in stale and "2026-12-04T20:00:00" in stale
