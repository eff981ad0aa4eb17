"""The layers of mha_book, as ``pyproject.toml``'s ``[tool.importlinter]`` states them.

attention <- models <- lm <- (viz | bench), with the shared checks
(``mha_book._checks``, ``mha_book.book``) below all: a module imports only
from its own layer or the layers below it. import-linter reads the imports
of the sources (grimp), so an import inside a function counts too. The second
test shows the contract fails on a copy of the package with one upward import.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(project: Path) -> subprocess.CompletedProcess:
    """Run import-linter on the ``mha_book`` found in ``project``, with its pyproject."""
    env = {**os.environ, "PYTHONPATH": str(project)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_every_module_imports_only_its_own_layer_or_below():
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


def test_an_upward_import_breaks_the_contract(tmp_path):
    shutil.copytree(
        ROOT / "mha_book",
        tmp_path / "mha_book",
        ignore=shutil.ignore_patterns("__pycache__", "data"),
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    heads = tmp_path / "mha_book" / "attention" / "heads.py"
    heads.write_text(
        heads.read_text(encoding="utf-8")
        + "\n\ndef _upward():\n    from mha_book.viz.plot import new_figure  # viz\n",
        encoding="utf-8",
    )
    done = lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "0 kept, 1 broken" in done.stdout
    assert "mha_book.attention.heads -> mha_book.viz.plot" in done.stdout
