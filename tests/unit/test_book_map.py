"""The map of the book (mha_book.book_map): one entry per chapter, parts that
hold them all, needs that point back, and errors that name the argument."""

from dataclasses import replace

import pytest

from mha_book import book_map


def test_every_chapter_is_in_exactly_one_part_and_no_part_is_empty():
    keys = [p.key for p in book_map.PARTS]
    assert len(set(keys)) == len(keys)
    held = [c.number for key in keys for c in book_map.chapters_in(key)]
    assert sorted(held) == [c.number for c in book_map.CHAPTERS]
    assert all(book_map.chapters_in(key) for key in keys)


def test_every_text_has_both_languages():
    for p in book_map.PARTS:
        for pair in (p.title, p.short, p.after):
            assert len(pair) == 2 and all(pair), p.key
    for c in book_map.CHAPTERS:
        assert all(c.title) and all(c.summary), c.number
        assert c.slug.startswith(f"{c.number:02d}-")


def test_the_reading_order_reads_each_chapter_after_its_needs():
    for after in (0, 9, 13):
        order = [c.number for c in book_map.reading_order(after)]
        assert sorted(order) == [
            c.number for c in book_map.CHAPTERS if c.number > after
        ]
        for i, n in enumerate(order):
            needs = book_map.chapter(n).needs
            assert all(m <= after or m in order[:i] for m in needs)


def test_a_cycle_of_needs_is_refused(monkeypatch):
    cyclic = [
        replace(c, needs=(13,)) if c.number == 12 else c for c in book_map.CHAPTERS
    ]
    cyclic = [replace(c, needs=(12,)) if c.number == 13 else c for c in cyclic]
    monkeypatch.setattr(book_map, "CHAPTERS", tuple(cyclic))
    with pytest.raises(ValueError, match="form a cycle"):
        book_map.reading_order(9)


def test_bad_arguments_name_themselves():
    with pytest.raises(ValueError, match="number must be a chapter of the book"):
        book_map.chapter(99)
    with pytest.raises(ValueError, match="lang must be one of"):
        book_map.text(("甲", "A"), "fr")
    with pytest.raises(ValueError, match="part must be one of"):
        book_map.chapters_in("nowhere")


def test_the_label_is_in_the_page_language(monkeypatch):
    monkeypatch.setenv("MHA_BOOK_LANG", "zh")
    assert book_map.chapter_label(14) == "第 14 章　我在哪里？注意力中的位置"
    monkeypatch.setenv("MHA_BOOK_LANG", "en")
    assert (
        book_map.chapter_label(14) == "Chapter 14. Where Am I? Positions in Attention"
    )
