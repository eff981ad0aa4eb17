"""The API page shows every public docstring's examples as code blocks: a
line longer than the code cells' limit scrolls sideways there, so none is."""

import doctest
import importlib

from tools.check_api import public_modules
from tools.format_cells import LINE_LENGTH


def example_lines(module_name: str) -> list[tuple[str, str]]:
    """``(object name, line)`` for every source and output line of the
    examples in the docstrings of ``module_name`` and its members."""
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    lines = []
    for test in finder.find(module, module_name):
        for example in test.examples:
            shown = [">>> " + s for s in example.source.splitlines()]
            shown += example.want.splitlines()
            lines += [(test.name, line) for line in shown]
    return lines


def test_a_long_line_is_found():
    found = [line for _, line in example_lines("mha_book.attention.masks")]
    assert found and all(isinstance(line, str) for line in found)
    assert max(map(len, found)) > 20  # the finder reads real examples


def test_every_example_line_fits_the_code_width():
    too_long = [
        f"{name}: {len(line)} characters: {line}"
        for module in public_modules()
        for name, line in example_lines(module)
        if len(line) > LINE_LENGTH
    ]
    assert too_long == []
