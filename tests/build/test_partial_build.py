"""A partial build (`tools/build_book.py --pages`, `make page P=...`).

It goes to its own folder, reads every page so that links and references are
checked as in the full build, and executes only the pages it names.
"""

import re

from scratch_book import HEADER, cell
from scratch_book import run_build as build

PAGES = {
    "index": "```{toctree}\na\nb\nglossary\n```\n",
    "a": "See [the other page](b.md) and {ref}`the label <b-label>`.\n\n"
    + cell("print('a ran')"),
    "b": "(b-label)=\n## B\n\n"
    + cell("from myst_nb import glue\nglue('n', 7)", "remove-cell")
    + "Seven: {glue:text}`n`.\n",
    "glossary": "```{glossary}\nhead\n  One of H attention maps.\n```\n",
}


def write_pages(repo, pages):
    for lang in ("zh", "en"):
        folder = repo / "docs" / lang
        folder.mkdir(parents=True, exist_ok=True)
        for name, body in pages.items():
            (folder / f"{name}.md").write_text(
                HEADER.replace("# Page", f"# {name}") + body, encoding="utf-8"
            )


def test_a_partial_build_has_its_own_folder_and_executes_only_its_pages(scratch):
    write_pages(scratch, PAGES)
    result = build(scratch, "--pages", "a")
    assert result.returncode == 0, result.stdout
    site = scratch / "_build/partial/html/zh"
    assert "cell_output" in (site / "a.html").read_text(encoding="utf-8")
    # b is read (its label resolves from a) but not executed: no glue output.
    assert (site / "b.html").exists()
    # (the seconds are however long Sphinx took to read it: not asserted)
    assert re.search(
        r"done  b: [\d.]+ s, not executed \(partial build\)", result.stdout
    )
    assert not (scratch / "_build/html").exists(), "wrote over the full build"
    assert "make serve SITE=_build/partial/html" in result.stdout


def test_a_partial_build_reports_a_broken_link_and_reference(scratch):
    pages = dict(PAGES, a="[gone](missing-page.md) and {ref}`x <no-such-label>`.\n")
    write_pages(scratch, pages)
    result = build(scratch, "--pages", "a")
    assert result.returncode != 0
    assert "missing-page" in result.stdout
    assert "no-such-label" in result.stdout


def test_a_partial_build_of_the_glossary_with_clean(scratch):
    write_pages(scratch, PAGES)
    assert build(scratch, "--pages", "a").returncode == 0
    result = build(scratch, "--clean", "--pages", "glossary.md")
    assert result.returncode == 0, result.stdout
    assert (scratch / "_build/partial/html/zh/glossary.html").exists()
    a = (scratch / "_build/partial/html/zh/a.html").read_text(encoding="utf-8")
    assert "cell_output" not in a, "--clean kept the last partial build's output"


def test_an_unknown_page_is_named(scratch):
    write_pages(scratch, PAGES)
    result = build(scratch, "--pages", "no-such-page")
    assert result.returncode != 0
    assert "no such page: docs/zh/no-such-page.md" in result.stdout + result.stderr
