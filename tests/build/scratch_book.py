"""Scratch books: a one-page book built exactly like `make html`, in a
scratch copy of the build machinery (conf.py, the extensions, the tools and
the package)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


# What a scratch copy of the repository needs to build a book exactly like `make html`.
BUILD_MACHINERY = [
    "conf.py",
    "pyproject.toml",
    "requirements",
    "tools",
    "mha_book",
    "docs/_ext",
    "docs/_templates",
    "docs/_static",
    "docs/landing.html",
    "docs/references.bib",
    "docs/locale",
]


def copy_build_machinery(dest: Path) -> Path:
    """Copy the real conf.py, extension, templates, build script and package to ``dest``."""
    for name in BUILD_MACHINERY:
        src, dst = ROOT / name, dest / name
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(
                src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.mo")
            )
        else:
            shutil.copy2(src, dst)
    return dest


# --- scratch books: a one-page book built exactly like `make html` --------------
HEADER = "---\nfile_format: mystnb\nkernelspec:\n  name: python3\n  display_name: Python 3\n---\n\n# Page\n\n"


def cell(source: str, tags: str = "") -> str:
    opts = f":tags: [{tags}]\n" if tags else ""
    return f"```{{code-cell}} ipython3\n{opts}{source}\n```\n\n"


def write_book(repo: Path, *cells: str) -> None:
    """Write the same one-page book in every language."""
    for lang in ("zh", "en"):
        page = repo / "docs" / lang / "index.md"
        page.parent.mkdir(parents=True, exist_ok=True)
        page.write_text(HEADER + "".join(cells), encoding="utf-8")


def run_build(repo: Path, *args: str, langs=("zh",), own_package=False, env=None):
    """Run ``python -m tools.build_book`` in ``repo`` as `make html` does; return
    the result. With ``own_package``, the kernels import the copy's mha_book;
    ``env``: variables set for the build."""
    env = dict(os.environ, **(env or {}))
    if own_package:
        env["PYTHONPATH"] = str(repo)
    return subprocess.run(
        [sys.executable, "-m", "tools.build_book", "--langs", *langs, *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def build(repo: Path, *cells: str, langs=("zh",)):
    """Write the one-page book in every language, build it, return the result."""
    write_book(repo, *cells)
    return run_build(repo, langs=langs)


def executed(repo: Path, lang="zh") -> bool:
    report = json.loads(
        (repo / "_build/exec" / f"{lang}.json").read_text(encoding="utf-8")
    )
    return report["index"]["executed_this_build"]
