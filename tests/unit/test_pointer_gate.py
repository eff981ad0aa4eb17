"""The chapter-pointer gate (tools/check_pointers.py): the chapters a module's
docstring points to are the chapters whose code uses it. It passes on the real
package and fails on a copy with a stale pointer."""

import shutil
from pathlib import Path

from tools.check_pointers import pointer_problems, users

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HEADER = "---\nfile_format: mystnb\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n\n"


def package_copy(tmp_path: Path, module: str, old: str, new: str) -> Path:
    root = tmp_path / "mha_book"
    shutil.copytree(
        ROOT / "mha_book", root, ignore=shutil.ignore_patterns("__pycache__", "data")
    )
    path = root / module
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1
    path.write_text(text.replace(old, new), encoding="utf-8")
    return root


def test_the_package_passes():
    assert pointer_problems(DOCS) == []


def test_the_uses_come_from_the_pages():
    direct, runs = users(DOCS)
    assert direct["mha_book.viz.explorer"] == {11, 15, 16}
    assert 9 not in direct["mha_book.viz.explorer"]  # chapter 09 only prints it
    # chapter 14 trains decoders through mha_book.lm.extrapolation
    assert 14 in runs["mha_book.models.decoder"] - direct["mha_book.models.decoder"]


def test_a_list_that_leaves_out_a_chapter_fails(tmp_path):
    root = package_copy(
        tmp_path, "viz/explorer.py", "(chapters 11, 15, 16)", "(chapters 11 and 15)"
    )
    assert pointer_problems(DOCS, root) == [
        "mha_book/viz/explorer.py: '(chapters 11 and 15)' leaves out chapter 16, "
        "whose code imports mha_book.viz.explorer; the chapters that import it: "
        "11, 15 and 16"
    ]


def test_a_package_list_belongs_to_the_module_it_follows(tmp_path):
    root = package_copy(
        tmp_path, "viz/__init__.py", "(chapters 11, 15 and 16)", "(chapter 11)"
    )
    [problem] = pointer_problems(DOCS, root)
    assert problem.startswith("mha_book/viz/__init__.py: '(chapter 11)' leaves out")
    assert "mha_book.viz.explorer" in problem


def test_a_chapter_that_does_not_use_the_module_fails(tmp_path):
    root = package_copy(
        tmp_path,
        "attention/trace.py",
        "Taught in chapter 04-implementation",
        "Taught in chapter 12-flash-attention",
    )
    assert pointer_problems(DOCS, root) == [
        "mha_book/attention/trace.py: 'Taught in chapter 12-flash-attention' names "
        "chapter 12, whose code never runs mha_book.attention.trace"
    ]


def test_the_build_gate_checks_the_book_not_a_scratch_book(tmp_path):
    from tools.check_pointers import book_pointer_problems

    for lang in ("zh", "en"):
        (tmp_path / lang).mkdir()
        page = "# A\n\n```{code-cell}\nimport mha_book.viz.heatmap\n```\n"
        (tmp_path / lang / "10-a.md").write_text(HEADER + page)
    assert pointer_problems(tmp_path) != []  # its chapter 10 is not the book's
    assert book_pointer_problems(tmp_path) == []  # its index is not the map's
    assert book_pointer_problems(DOCS) == pointer_problems(DOCS) == []
