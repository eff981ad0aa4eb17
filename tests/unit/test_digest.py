"""The code digest (mha_book._digest): a change to code a result runs always
changes it; a comment, a docstring or a module the result never imports does not."""

import ast
import shutil

import pytest

from mha_book._digest import ROOT, closure, code_digest, module_files, resolve

MASKS = "mha_book.attention.masks"


@pytest.fixture
def package(tmp_path):
    """A copy of the package to edit: tmp/mha_book."""
    root = tmp_path / "mha_book"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def edit(root, module, old, new):
    path = module_files(root)[module]
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_comment_or_a_docstring_changes_nothing(package):
    before = code_digest([MASKS], root=package)
    edit(package, MASKS, '"""', '"""An edited docstring. ')
    edit(package, MASKS, "\nimport torch\n", "\n# a new comment\nimport torch\n\n\n")
    assert code_digest([MASKS], root=package) == before
    assert code_digest([MASKS], root=package, docstrings=True) != code_digest(
        [MASKS], root=ROOT, docstrings=True
    )


def test_a_change_to_the_code_or_to_what_it_imports_changes_it(package):
    before = code_digest([MASKS], root=package)
    edit(
        package,
        "mha_book._checks",
        "def ",
        "def _an_added_helper():\n    return 1\n\n\ndef ",
    )
    assert "mha_book._checks" in closure([MASKS], package)
    assert code_digest([MASKS], root=package) != before


def test_a_module_that_is_not_imported_changes_nothing(package):
    before = code_digest([MASKS], root=package)
    assert "mha_book.viz.heatmap" not in closure([MASKS], package)
    edit(
        package,
        "mha_book.viz.heatmap",
        "def ",
        "def _an_added_helper():\n    return 1\n\n\ndef ",
    )
    assert code_digest([MASKS], root=package) == before
    assert code_digest(None, root=package) != code_digest(None, root=ROOT)


def test_a_data_file_changes_the_digest_of_code_that_reads_the_files(package):
    corpus = "mha_book.lm.corpus"  # reads the plays through importlib.resources
    before = code_digest([corpus], root=package), code_digest([MASKS], root=package)
    (package / "data" / "plays" / "extra.txt").write_text("new", encoding="utf-8")
    assert code_digest([corpus], root=package) != before[0]
    assert code_digest([MASKS], root=package) == before[1]


def test_a_new_lazy_name_or_an_annotation_for_the_type_checker_changes_nothing(
    package,
):
    before = code_digest([MASKS], root=package)
    edit(
        package,
        "mha_book",
        "_EXPORTS = {",
        '_EXPORTS = {\n    "a_new_name": "attention.heads",',
    )
    edit(package, "mha_book", "if TYPE_CHECKING:", "if TYPE_CHECKING:\n    import os")
    assert code_digest([MASKS], root=package) == before


def test_lazy_names_resolve_to_their_modules_and_packages_to_their_parents():
    assert resolve(["mha_book.MultiHeadAttention"]) == {"mha_book.attention.mha"}
    assert resolve(["mha_book.viz.diagrams.kernel_choice"]) == {
        "mha_book.viz.diagrams.registry"
    }
    assert {"mha_book", "mha_book.attention"} <= closure([MASKS])
    # the root package imports its names lazily: importing it runs nothing else
    assert closure(["mha_book"]) == {"mha_book", "mha_book._lazy"}


def test_imports_inside_functions_count_and_type_checking_imports_do_not(package):
    edit(
        package,
        MASKS,
        "\nimport torch\n",
        "\nimport torch\nfrom typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n    from mha_book.viz import heatmap\n\n\n"
        "def _late():\n    from mha_book.lm import corpus\n\n    return corpus\n",
    )
    found = closure([MASKS], package)
    assert "mha_book.lm.corpus" in found and "mha_book.viz.heatmap" not in found


def test_every_package_import_is_read():
    """Each module's imports of mha_book, as the interpreter would resolve them,
    are in the graph: nothing the package runs is missed."""
    files = module_files()
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for block in ast.walk(tree):  # what a type checker reads, the program does not
            if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING":
                block.body = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "mha_book"
            ):
                assert node.module in closure([name]), (name, node.module)
