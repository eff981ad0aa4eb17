"""The chapter-frame gate (tools/check_frame.py): every chapter from 10 on has
an introduction, a Summary and Exercises, in both editions. It passes on the
real book and fails on a broken copy."""

from pathlib import Path

from tools.check_frame import book_frame_problems, frame_problems

DOCS = Path(__file__).resolve().parents[2] / "docs"

GOOD = {
    "en": "# Title\n\nWhy this chapter.\n\n## Body\n\nText.\n\n"
    "## Summary\n\n- One point.\n\n## Exercises\n\n:::{exercise}\n:::\n",
    "zh": "# 标题\n\n本章讲什么。\n\n## 正文\n\n文字。\n\n"
    "## 小结\n\n- 一点。\n\n## 练习\n\n:::{exercise}\n:::\n",
}


def book(tmp_path: Path, texts: dict[str, str], name="10-x.md") -> Path:
    for lang, text in texts.items():
        (tmp_path / lang).mkdir(parents=True, exist_ok=True)
        (tmp_path / lang / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_the_book_passes():
    assert frame_problems(DOCS) == []


def test_a_complete_frame_passes(tmp_path):
    assert frame_problems(book(tmp_path, GOOD)) == []


def test_a_missing_summary_fails_in_either_edition(tmp_path):
    en = GOOD["en"].replace("## Summary\n\n- One point.\n\n", "")
    assert frame_problems(book(tmp_path, {**GOOD, "en": en})) == [
        "en/10-x.md: the section before '## Exercises' is '## Body', not '## Summary'"
    ]
    zh = GOOD["zh"].replace("## 小结", "## 总结")
    assert frame_problems(book(tmp_path, {**GOOD, "en": GOOD["en"], "zh": zh})) == [
        "zh/10-x.md: the section before '## 练习' is '## 总结', not '## 小结'"
    ]


def test_missing_exercises_introduction_or_an_empty_summary_fail(tmp_path):
    no_exercises = GOOD["en"].split("## Exercises")[0]
    assert frame_problems(book(tmp_path, {"en": no_exercises})) == [
        "en/10-x.md: the last section is '## Summary', not '## Exercises'"
    ]
    no_intro = GOOD["en"].replace("Why this chapter.\n\n", "")
    assert frame_problems(book(tmp_path, {"en": no_intro})) == [
        "en/10-x.md: no introduction (prose before the first section)"
    ]
    empty = GOOD["en"].replace("- One point.\n\n", "```python\nx = 1\n```\n\n")
    assert frame_problems(book(tmp_path, {"en": empty})) == [
        "en/10-x.md: '## Summary' (line 9) is empty"
    ]


def test_a_heading_in_a_code_cell_is_no_section(tmp_path):
    cell = "```{code-cell} ipython3\n## Exercises\n```\n"
    text = GOOD["en"].replace("## Summary", cell + "\n## Summary")
    assert frame_problems(book(tmp_path, {"en": text})) == []


def test_the_article_chapters_keep_their_own_outline(tmp_path):
    bare = "# Title\n\n## Body\n\nText.\n"
    assert frame_problems(book(tmp_path, {"en": bare}, "09-summary.md")) == []
    assert frame_problems(book(tmp_path, {"en": bare}, "18-new.md")) != []


def test_the_build_gate_frames_the_book_not_a_scratch_book(tmp_path):
    no_intro = GOOD["en"].replace("Why this chapter.\n\n", "")
    scratch = book(tmp_path, {"en": no_intro})
    assert frame_problems(scratch) != []
    assert book_frame_problems(scratch) == []  # no index written from the map
    (scratch / "en" / "index.md").write_text("```{book-map} contents\n```\n")
    assert book_frame_problems(scratch) == frame_problems(scratch) != []
    assert book_frame_problems(DOCS) == []
