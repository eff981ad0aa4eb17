"""Exercises end every chapter; their code solutions run and assert at build time.

The scratch-book tests build a one-page book (see test_build_strict.py) with
sphinx-exercise's directives: a solution's code cells sit between
``solution-start`` and ``solution-end`` and execute like any other cell, so a
wrong solution fails the build. The page tests read the real chapters.
"""

import re

import pytest
from scratch_book import ROOT, build, cell

from tools.page_model import read_page

EXERCISE = """## Exercises

:::{exercise}
:label: ex-demo

Compute $2 + 2$.
:::

````{solution-start} ex-demo
:class: dropdown
````

One line does it:

"""
END = "````{solution-end}\n````\n"


def test_a_correct_solution_builds_numbered_and_collapsed(scratch):
    result = build(scratch, EXERCISE + cell("answer = 2 + 2\nassert answer == 4") + END)
    assert result.returncode == 0, result.stdout
    html = (scratch / "_build/html/zh/index.html").read_text(encoding="utf-8")
    assert '<div class="exercise admonition" id="ex-demo">' in html
    assert "练习 1" in html  # numbered, in the page's language
    assert re.search(r'<div class="solution dropdown admonition"', html)
    assert 'answer</span> <span class="o">=</span>' in html  # the cell is inside


def test_a_wrong_solution_fails_the_build(scratch):
    result = build(scratch, EXERCISE + cell("answer = 2 + 3\nassert answer == 4") + END)
    assert result.returncode != 0
    assert "docs/zh/index.md: code cell 1" in result.stdout
    assert "raised AssertionError" in result.stdout


# --- the real chapters ----------------------------------------------------------
# every chapter after the overview, as the toctree's glob finds them
CHAPTERS = sorted(
    path.name[:2] for path in (ROOT / "docs" / "en").glob("[0-9][0-9]-*.md")
)[1:]


def chapter_page(lang: str, number: str):
    [path] = (ROOT / "docs" / lang).glob(f"{number}-*.md")
    return read_page(path)


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("number", CHAPTERS)
def test_every_chapter_ends_with_three_solved_exercises(lang, number):
    items = chapter_page(lang, number).structure
    exercises = [
        next(i.detail for i in items[k:] if i.kind == "label")
        for k, i in enumerate(items)
        if i.kind == "directive" and i.detail == "exercise"
    ]
    solved = [
        i.detail.split()[1]
        for i in items
        if i.kind == "directive"
        and i.detail.split()[0] in ("solution", "solution-start")
    ]
    assert len(exercises) >= 3, exercises
    assert all(label.startswith(f"ex-{number}-") for label in exercises), exercises
    assert sorted(solved) == sorted(exercises)  # one solution each
    assert any(
        i.kind == "directive" and i.detail.startswith("solution-start ") for i in items
    )  # at least one solution runs code
    classes = [i.detail for i in items if i.kind == "class"]
    assert classes.count("dropdown") >= len(solved)  # every solution collapsed


@pytest.mark.parametrize("lang", ["zh", "en"])
@pytest.mark.parametrize("number", CHAPTERS)
def test_every_chapter_has_a_figure(lang, number):
    items = chapter_page(lang, number).structure
    assert any(
        i.kind == "directive" and i.detail.split()[0] in ("glue:figure", "figure")
        for i in items
    )
