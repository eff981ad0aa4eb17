"""Exercises end every chapter; their code solutions run and assert at build time.

The scratch-book tests build a one-page book (see test_build_strict.py) with
sphinx-exercise's directives: a solution's code cells sit between
``solution-start`` and ``solution-end`` and execute like any other cell, so a
wrong solution fails the build. The page tests read the real chapters.
"""

import re

from conftest import build, cell

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
