"""glue outside the book's build: a downloaded notebook has no myst-nb."""

import sys

import pytest

from mha_book.book import glue


@pytest.fixture
def without_myst_nb(monkeypatch):
    monkeypatch.setitem(sys.modules, "myst_nb", None)  # import myst_nb raises


def test_glue_shows_the_value_without_myst_nb(without_myst_nb, capsys):
    glue("answer", 42)  # no IPython kernel here: printed
    assert capsys.readouterr().out == "42\n"


def test_glue_shows_nothing_when_asked_not_to(without_myst_nb, capsys):
    glue("answer", 42, display=False)
    assert capsys.readouterr().out == ""


def test_glue_names_a_bad_name():
    with pytest.raises(TypeError, match="name must be a non-empty str"):
        glue("", 1)
