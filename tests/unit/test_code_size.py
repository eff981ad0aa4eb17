"""The house rules a newcomer relies on: small modules, short functions, and
imports that need no ``sys.path`` edits."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAX_MODULE_LINES = 300  # a module of the package, docstrings included
MAX_FUNCTION_LINES = (
    40  # a function's body in tools/ and docs/_ext/, docstring excluded
)


def python_files(*folders: str) -> list[Path]:
    return sorted(
        path
        for folder in folders
        for path in (ROOT / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    )


def body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from a function's first statement after its docstring to its last."""
    body = function.body
    first = body[0]
    if (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    ):
        body = body[1:]
    if not body:
        return 0
    return body[-1].end_lineno - body[0].lineno + 1


def long_functions(source: str, name: str = "<source>") -> list[str]:
    """``name:line function (N lines)`` for each function over the limit."""
    return [
        f"{name}:{node.lineno} {node.name} ({body_lines(node)} lines)"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and body_lines(node) > MAX_FUNCTION_LINES
    ]


def test_no_module_of_the_package_is_over_300_lines():
    long = {
        path.relative_to(ROOT).as_posix(): n
        for path in python_files("mha_book")
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert long == {}


def test_no_function_of_the_tools_or_extensions_is_over_40_lines():
    found = [
        problem
        for path in python_files("tools", "docs/_ext")
        for problem in long_functions(
            path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix()
        )
    ]
    assert found == []


def test_the_length_check_sees_a_long_function_and_skips_the_docstring():
    assert long_functions("def f():\n" + "    x = 1\n" * 41) == [
        "<source>:1 f (41 lines)"
    ]
    docstring = '    """One line.\n\n    More.\n    """\n'
    assert long_functions("def f():\n" + docstring + "    x = 1\n" * 40) == []


def test_tools_and_tests_import_without_editing_sys_path():
    edits = [
        path.relative_to(ROOT).as_posix()
        for path in python_files("tools", "tests")
        if any(
            edit in path.read_text(encoding="utf-8")
            for edit in ("sys.path.insert", "sys.path.append", "syspath_prepend")
        )
        and path != Path(__file__).resolve()
    ]
    assert edits == []
