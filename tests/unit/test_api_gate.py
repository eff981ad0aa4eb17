"""The API page's gates: every public module of mha_book is documented
(tools/check_api.py, computed from the package), and every Python reference
resolves, torch's included, without the network (docs/_ext/book_refs.py and
conf.py's nitpicky mode). Each passes on the real book and fails on a broken
copy."""

import importlib
import re
from pathlib import Path

from tools.check_api import api_problems, documented, page_modules, public_modules

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def copy_docs(tmp_path: Path, edit=lambda text: text) -> Path:
    """The two editions' API pages, each edited by ``edit``."""
    for lang in ("zh", "en"):
        (tmp_path / lang).mkdir(parents=True)
        for page in ("api.md", "api-experiments.md"):
            text = (DOCS / lang / page).read_text(encoding="utf-8")
            (tmp_path / lang / page).write_text(edit(text), encoding="utf-8")
    return tmp_path


def test_the_book_passes():
    assert (DOCS / "en" / "api.md").exists() and (DOCS / "zh" / "api.md").exists()
    assert api_problems(DOCS) == []


def test_a_book_without_an_api_page_has_nothing_to_check(tmp_path):
    for lang in ("zh", "en"):
        (tmp_path / lang).mkdir()
    assert api_problems(tmp_path) == []
    (tmp_path / "en" / "api.md").write_text("# API\n")
    assert "zh/api.md: missing" in api_problems(tmp_path)


def test_the_modules_come_from_the_package():
    modules = public_modules()
    assert {
        "mha_book.seeds",
        "mha_book.serving.streaming",
        "mha_book.lm.poetry",
    } <= set(modules)
    assert not [m for m in modules if "._" in m]
    first, second = (
        page_modules((DOCS / "en" / page).read_text(encoding="utf-8"))
        for page in ("api.md", "api-experiments.md")
    )
    assert first | second == set(modules) and not first & second
    assert "mha_book.attention.masks" in first and "mha_book.lm.poetry" in second


def test_an_object_is_documented_once():
    # Packages show their docstrings; only plain modules list members.
    for package in ("mha_book.attention", "mha_book.bench", "mha_book.viz"):
        for name, members in documented(package):
            is_package = (ROOT / name.replace(".", "/") / "__init__.py").exists()
            assert members != is_package, name


def test_a_module_left_off_the_page_fails(tmp_path):
    def drop_serving(text):
        section = "## `mha_book.serving`\n\n```{eval-rst}\n.. book-api:: mha_book.serving\n```\n\n"
        return text.replace(section, "")

    docs = copy_docs(tmp_path, drop_serving)
    problems = api_problems(docs)
    assert (
        "en/api*.md: mha_book.serving.streaming is not documented (add a "
        "section with '.. book-api:: mha_book.serving')" in problems
    )
    assert any(p.startswith("zh/api*.md: mha_book.serving ") for p in problems)


def test_a_name_that_is_no_module_fails(tmp_path):
    docs = copy_docs(
        tmp_path,
        lambda t: t + "\n```{eval-rst}\n.. automodule:: mha_book.nothing\n```\n",
    )
    assert "en/api.md: mha_book.nothing is not a public module of mha_book" in (
        api_problems(docs)
    )


def test_conf_fails_the_build_on_an_unresolved_python_reference():
    conf = (ROOT / "conf.py").read_text(encoding="utf-8")
    assert re.search(r"^nitpicky = True$", conf, re.M)
    assert '"book_refs"' in conf and '"sphinx.ext.intersphinx"' in conf


def build(tmp_path: Path, body: str) -> str:
    """Build one reST page with the book's reference settings; its warnings."""
    from io import StringIO

    import book_refs
    from sphinx.application import Sphinx

    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        "extensions = ['sphinx.ext.autodoc', 'sphinx.ext.intersphinx', 'book_refs']\n"
        "nitpicky = True\n"
        "nitpick_ignore_regex = [(r'(?!py:).*', r'.*')]\n"
        f"intersphinx_mapping = {book_refs.write_inventories(tmp_path / 'inv')!r}\n"
    )
    (src / "index.rst").write_text(body)
    warnings = StringIO()
    app = Sphinx(
        str(src),
        str(src),
        str(tmp_path / "out"),
        str(tmp_path / "doctrees"),
        "html",
        status=None,
        warning=warnings,
        freshenv=True,
    )
    app.build()
    return warnings.getvalue()


REFERENCES = [
    ":func:`torch.nn.functional.scaled_dot_product_attention`",
    ":class:`torch.Tensor`",
    ":func:`mha_book.causal_mask`",  # a lazy name, read where it is defined
    ":func:`mha_book.bench.kernel_times`",
]


def test_references_resolve_offline_and_an_unresolved_one_warns(tmp_path):
    body = (
        "T\n=\n\n.. automodule:: mha_book.attention.masks\n   :members:\n\n"
        ".. automodule:: mha_book.bench.compare\n   :members:\n\n"
        + "\n\n".join(REFERENCES)
        + "\n\n:func:`mha_book.attention.masks.no_such_mask`\n"
    )
    warnings = build(tmp_path, body)
    for reference in REFERENCES:
        assert f"not found: {reference.split('`')[1]} " not in warnings, warnings
    assert (
        "py:func reference target not found: mha_book.attention.masks.no_such_mask"
        in (warnings)
    )


def test_every_external_name_exists():
    import book_refs

    for _, objects in book_refs.EXTERNAL.values():
        for name in objects:
            module, _, attribute = name.rpartition(".")
            try:
                importlib.import_module(name)  # a module
                continue
            except ImportError:
                pass
            assert hasattr(importlib.import_module(module), attribute), name
