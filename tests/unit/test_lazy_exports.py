"""The lazy names of mha_book (mha_book._lazy): ``_EXPORTS`` says what the
``if TYPE_CHECKING:`` imports say, every name loads, and ``import mha_book``
loads nothing else."""

import ast
import importlib
import subprocess
import sys

import pytest

from mha_book._digest import module_files

PACKAGES = ["mha_book", "mha_book.bench", "mha_book.viz.diagrams"]


def type_checking_imports(package: str) -> dict[str, str]:
    tree = ast.parse(module_files()[package].read_text(encoding="utf-8"))
    found = {}
    for block in tree.body:
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING":
            for node in block.body:
                assert isinstance(node, ast.ImportFrom), ast.unparse(node)
                for alias in node.names:
                    found[alias.asname or alias.name] = node.module.removeprefix(
                        package + "."
                    )
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_the_lazy_names_are_the_type_checkers_names(package):
    module = importlib.import_module(package)
    assert module._EXPORTS == type_checking_imports(package)
    assert set(module.__all__) <= set(module._EXPORTS) | {"__version__"}
    for name, submodule in module._EXPORTS.items():
        defining = importlib.import_module(f"{package}.{submodule}")
        assert getattr(module, name) is getattr(defining, name), name
        assert name in dir(module)


def test_importing_the_package_imports_only_the_package():
    code = (
        "import sys, mha_book; "
        "print(sorted(m for m in sys.modules if m.startswith('mha_book')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['mha_book', 'mha_book._lazy']"


def test_an_unknown_name_is_an_attribute_error():
    import mha_book

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        mha_book.nope  # noqa: B018
    with pytest.raises(AttributeError, match="'mha_book.attention' has no attribute"):
        mha_book.attention.nope  # noqa: B018
