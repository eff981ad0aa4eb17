"""The book-map directive (docs/_ext/book_toc.py): the sidebar's parts and the
lists of chapters are written from mha_book.book_map, in the page's language,
and a downloaded notebook gets them written out."""

from pathlib import Path

import pytest
from book_pages import for_download
from book_toc import contents_markdown, expand, next_markdown, parts_markdown
from myst_nb.core.read import read_myst_markdown_notebook

from mha_book import book_map

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_sidebar_has_one_captioned_toctree_per_part_then_the_back_matter(lang):
    lines = contents_markdown(lang)
    captions = [
        line.removeprefix(":caption: ")
        for line in lines
        if line.startswith(":caption:")
    ]
    assert captions == [
        *(book_map.text(p.title, lang) for p in book_map.PARTS),
        book_map.text(book_map.BACK_MATTER_CAPTION, lang),
    ]
    entries = [line for line in lines if line and not line.startswith((":", "```"))]
    assert entries == [
        *(c.slug for p in book_map.PARTS for c in book_map.chapters_in(p.key)),
        *book_map.BACK_MATTER,
    ]
    assert lines.count(":hidden:") == len(captions)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_every_chapter_after_nine_is_in_the_next_steps_and_each_part_says_what_it_gives(
    lang,
):
    text = "\n".join(next_markdown(lang, 9))
    for c in book_map.CHAPTERS:
        assert (f"({c.slug}.md)" in text) == (c.number > 9), c.slug
    parts = "\n".join(parts_markdown(lang))
    for p in book_map.PARTS:
        assert book_map.text(p.after, lang) in parts
    assert all(f"({c.slug}.md)" in parts for c in book_map.CHAPTERS)


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_a_downloaded_index_lists_the_parts_instead_of_the_directive(lang):
    text = (DOCS / lang / "index.md").read_text(encoding="utf-8")
    notebook = for_download(read_myst_markdown_notebook(text), lang)
    markdown = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert "{book-map}" not in markdown and "{toctree}" not in markdown
    for p in book_map.PARTS:
        assert book_map.text(p.title, lang) in markdown


def test_a_directive_of_another_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"):
        expand("```{book-map} chapters\n```\n", "en")
