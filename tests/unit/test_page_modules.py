"""What a page's code runs (docs/_ext/book_cache.py): every way a cell reaches
mha_book counts, and a page that cannot be read for it depends on everything."""

from book_cache import page_digest

from mha_book._cell_imports import cell_imports as page_modules
from mha_book._digest import code_digest


def modules(*cells):
    return page_modules(list(cells))[0]


def test_imports_and_names_read_through_them_count():
    assert "mha_book.attention.heads" in modules("from mha_book.attention import heads")
    assert "mha_book.causal_mask" in modules("from mha_book import causal_mask")
    found = modules("import mha_book as mb\nmb.attention.rope.apply_rotary")
    assert {"mha_book.attention.rope", "mha_book.attention.rope.apply_rotary"} <= set(
        found
    )
    assert "mha_book.bench.shared" in modules(
        "def f():\n    from mha_book.bench import shared\n    return shared"
    )


def test_magics_are_skipped_and_what_cannot_be_read_means_every_module():
    assert modules("%timeit 1\nfrom mha_book import split_heads") == [
        "mha_book",
        "mha_book.split_heads",
    ]
    assert modules("def (") is None
    assert modules("importlib.import_module(name)") is None
    assert "mha_book.viz.plot" in modules(
        "importlib.import_module('mha_book.viz.plot')"
    )


def test_a_page_that_reads_docstrings_is_keyed_on_them():
    assert page_modules(["import mha_book\nprint(mha_book.__doc__)"])[1] is True
    assert page_modules(["import mha_book"])[1] is False


def test_the_digest_is_the_code_of_what_the_page_imports():
    page = ["from mha_book.attention.masks import causal_mask"]
    assert page_digest(page) == code_digest(
        ["mha_book.attention.masks", "mha_book.book"]
    )
    assert page_digest(["x = 1"]) == code_digest(["mha_book.book"])
    assert page_digest(["def ("]) == code_digest(None, docstrings=True)
