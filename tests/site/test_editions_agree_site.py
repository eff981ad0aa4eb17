"""The built site: both editions' executed notebooks print the same numbers
(tools/check_numbers.py), and a broken copy of them is caught."""

import json
import shutil
from pathlib import Path

import pytest

from tools.check_numbers import EDITIONS, number_problems


def executed(site: Path) -> list[Path]:
    """The executed notebooks of both editions, beside the site (tools/build_book.py)."""
    folders = [site.parent / "jupyter_execute" / lang for lang in EDITIONS]
    for folder in folders:
        if not list(folder.glob("*.ipynb")):
            pytest.fail(f"no executed notebooks in {folder}: build the book first")
    return folders


def test_both_editions_print_the_same_numbers(site):
    assert number_problems(*executed(site)) == []


def test_a_broken_copy_of_the_built_notebooks_is_caught(site, tmp_path):
    # Both copies start as the zh edition's chapter 5, then en's time-ratio
    # is changed, as if that edition had timed the code again.
    zh, _ = executed(site)
    page = "05-verification"
    copies = []
    for lang in EDITIONS:
        copy = tmp_path / lang
        copy.mkdir()
        for suffix in (".ipynb", ".glue.json"):
            shutil.copy(zh / f"{page}{suffix}", copy / f"{page}{suffix}")
        copies.append(copy)
    assert number_problems(*copies) == []
    glue_file = copies[1] / f"{page}.glue.json"
    glue = json.loads(glue_file.read_text(encoding="utf-8"))
    shown = glue["time-ratio"]["data"]["text/plain"]  # e.g. "'3.9'"
    glue["time-ratio"]["data"]["text/plain"] = "'16.3'"
    glue_file.write_text(json.dumps(glue), encoding="utf-8")
    assert number_problems(*copies) == [
        f"{page}: glue time-ratio: the editions print different numbers "
        f"(number 1: zh {shown.strip(chr(39))}, en 16.3)"
    ]
