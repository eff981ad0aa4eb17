"""Sphinx extension: every Python reference of the book resolves, offline.

``conf.py`` sets ``nitpicky`` for Python references, so a ``{py:func}`` in a
page or a type in a docstring that links nowhere fails the build. Three
things make the book's references resolve:

* **Other projects' objects** (torch, the standard library, numpy,
  matplotlib, tokenizers) come through ``sphinx.ext.intersphinx``, from
  inventories written here from :data:`EXTERNAL` (:func:`write_inventories`)
  rather than downloaded: the build reads no network. Each entry names the
  object and its page in that project's documentation; a test checks that
  every name exists in the installed package. A type hint that autodoc
  reads as the class's defining module (``torch.nn.modules.module.Module``)
  is listed under that name too.
* **The package's short names**: ``mha_book.MultiHeadAttention`` (a name the
  package exports lazily, :mod:`mha_book._lazy`) is read as the object in
  the module that defines it, and a bare name in a docstring
  (``MultiHeadAttention``, ``Figure``) as what the docstring's module
  imports under that name (:func:`qualified`).
* **Type variables** (``TypeVar``) in signatures are shown as text: there
  is nothing to link.
"""

from __future__ import annotations

import ast
import functools
import importlib
import os
import zlib
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("MHA_BOOK_BUILD_DIR", ROOT / "_build"))

# project -> (its documentation's address, {name: (role, page#anchor or "")}).
# An empty page means the object's own generated page: <name>.html#<name>.
EXTERNAL: dict[str, tuple[str, dict[str, tuple[str, str]]]] = {
    "torch": (
        "https://docs.pytorch.org/docs/stable/",
        {
            "torch.Tensor": ("class", "tensors.html#torch.Tensor"),
            "torch.dtype": ("class", "tensor_attributes.html#torch.dtype"),
            "torch.device": ("class", "tensor_attributes.html#torch.device"),
            "torch.Generator": ("class", "generated/torch.Generator.html"),
            "torch._C.Generator": ("class", "generated/torch.Generator.html"),
            "torch.broadcast_to": ("function", ""),
            "torch.broadcast_shapes": ("function", ""),
            "torch.nn.Module": ("class", ""),
            "torch.nn.modules.module.Module": (
                "class",
                "generated/torch.nn.Module.html",
            ),
            "torch.nn.Linear": ("class", ""),
            "torch.nn.modules.linear.Linear": (
                "class",
                "generated/torch.nn.Linear.html",
            ),
            "torch.nn.MultiheadAttention": ("class", ""),
            "torch.nn.modules.activation.MultiheadAttention": (
                "class",
                "generated/torch.nn.MultiheadAttention.html",
            ),
            "torch.nn.TransformerEncoderLayer": ("class", ""),
            "torch.nn.TransformerDecoderLayer": ("class", ""),
            "torch.nn.functional.scaled_dot_product_attention": ("function", ""),
            "torch.nn.attention.flex_attention": (
                "module",
                "nn.attention.flex_attention.html",
            ),
            "torch.utils.benchmark.Timer": ("class", "benchmark_utils.html"),
        },
    ),
    "python": (
        "https://docs.python.org/3/",
        {
            "collections.abc.Callable": ("class", "library/collections.abc.html"),
            "collections.abc.Iterable": ("class", "library/collections.abc.html"),
            "collections.abc.Iterator": ("class", "library/collections.abc.html"),
            "collections.abc.Mapping": ("class", "library/collections.abc.html"),
            "collections.abc.Sequence": ("class", "library/collections.abc.html"),
            "datetime.date": ("class", "library/datetime.html"),
            "importlib.resources": ("module", "library/importlib.resources.html"),
            "pathlib.Path": ("class", "library/pathlib.html"),
            "random.Random": ("class", "library/random.html"),
            "types.TracebackType": ("class", "library/types.html"),
        },
    ),
    "matplotlib": (
        "https://matplotlib.org/stable/",
        {
            "matplotlib.figure.Figure": (
                "class",
                "api/_as_gen/matplotlib.figure.Figure.html",
            ),
            "matplotlib.axes.Axes": ("class", "api/_as_gen/matplotlib.axes.Axes.html"),
        },
    ),
    "numpy": (
        "https://numpy.org/doc/stable/",
        {
            "numpy.ndarray": ("class", "reference/generated/numpy.ndarray.html"),
        },
    ),
    "tokenizers": (
        "https://huggingface.co/docs/tokenizers/",
        {"tokenizers.Tokenizer": ("class", "api/tokenizer")},
    ),
}


def _uri(name: str, page: str) -> str:
    page = page or f"generated/{name}.html"
    return page if "#" in page else f"{page}#{name}"


def inventory_bytes(project: str, objects: dict[str, tuple[str, str]]) -> bytes:
    """A Sphinx inventory (``objects.inv``, version 2) of these objects.

    >>> data = inventory_bytes("p", {"p.f": ("function", "api.html")})
    >>> data.splitlines()[0]
    b'# Sphinx inventory version 2'
    >>> zlib.decompress(data.split(b"zlib.\\n", 1)[1])
    b'p.f py:function 1 api.html#p.f -\\n'
    """
    head = (
        "# Sphinx inventory version 2\n"
        f"# Project: {project}\n# Version: \n"
        "# The remainder of this file is compressed using zlib.\n"
    ).encode()
    body = "".join(
        f"{name} py:{role} 1 {_uri(name, page)} -\n"
        for name, (role, page) in sorted(objects.items())
    )
    return head + zlib.compress(body.encode())


def write_inventories(folder: Path | None = None) -> dict[str, tuple[str, str]]:
    """Write each project's inventory into ``folder``; return the
    ``intersphinx_mapping`` that reads them (no network)."""
    folder = folder or BUILD / "inventories"
    folder.mkdir(parents=True, exist_ok=True)
    mapping = {}
    for project, (url, objects) in EXTERNAL.items():
        path = folder / f"{project}.inv"
        data = inventory_bytes(project, objects)
        if not path.exists() or path.read_bytes() != data:
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        mapping[project] = (url, str(path))
    return mapping


# --- the package's own names ----------------------------------------------------
@functools.cache
def _module_imports(module: str) -> dict[str, str]:
    """Name -> dotted target, for every ``import`` and ``from ... import`` in
    a package module (including those only a type checker reads)."""
    from mha_book._digest import module_files

    path = module_files().get(module)
    if path is None:
        return {}
    found = {}
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found[alias.asname] = alias.name
    return found


def _defining(name: str) -> str:
    """``mha_book.X`` (a lazy name of a package) -> ``mha_book.module.X``;
    other names unchanged.

    >>> _defining("mha_book.MultiHeadAttention.to_torch")
    'mha_book.attention.mha.MultiHeadAttention.to_torch'
    >>> _defining("mha_book.bench.kernel_times")
    'mha_book.bench.compare.kernel_times'
    """
    from mha_book._digest import exports_of, module_files

    files, parts = module_files(), name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        package = ".".join(parts[:i])
        if package in files and files[package].name == "__init__.py":
            module = exports_of(files[package]).get(parts[i])
            if module is not None:
                return ".".join([package, module, *parts[i:]])
    return name


def qualified(target: str, module: str | None) -> list[str]:
    """The full names a reference may mean, most likely first: as written,
    inside the docstring's module, as that module imports it, as the
    package's top level exports it; each lazy name read where it is defined.

    >>> names = qualified("MultiHeadAttention", "mha_book.models.bert")
    >>> names[:2], names[-1]
    (['MultiHeadAttention', 'mha_book.models.bert.MultiHeadAttention'], 'mha_book.MultiHeadAttention')
    >>> "mha_book.attention.mha.MultiHeadAttention" in names
    True
    """
    head, _, rest = target.partition(".")
    names = [target]
    if module:
        names.append(f"{module}.{target}")
        imported = _module_imports(module).get(head)
        if imported:
            names.append(".".join([imported, rest]) if rest else imported)
    names.append(f"mha_book.{target}")
    out = []
    for name in names:
        for candidate in (name, _defining(name)):
            if candidate not in out:
                out.append(candidate)
    return out


def _is_type_variable(name: str) -> bool:
    module, _, attribute = name.rpartition(".")
    try:
        return isinstance(getattr(importlib.import_module(module), attribute), TypeVar)
    except (ImportError, AttributeError, ValueError):
        return False


def _resolve(app, env, node, contnode):
    """``missing-reference``: try the names :func:`qualified` gives, in the
    book's objects and then in the other projects' inventories."""
    if node.get("refdomain") != "py":
        return None
    from sphinx.ext import intersphinx

    target, domain = node["reftarget"], env.get_domain("py")
    names = qualified(target, node.get("py:module"))
    if any(_is_type_variable(name) for name in names):
        return contnode
    for name in names:
        if name == target:
            continue
        found = domain.resolve_xref(
            env, node["refdoc"], app.builder, node["reftype"], name, node, contnode
        )
        if found is None:
            found = domain.resolve_any_xref(
                env, node["refdoc"], app.builder, name, node, contnode
            )
            found = found[0][1] if found else None
        if found is None:
            copy = node.deepcopy()
            copy["reftarget"] = name
            found = intersphinx.missing_reference(app, env, copy, contnode)
        if found is not None:
            return found
    return None


def setup(app):
    # After intersphinx's own handler (priority 500), which takes names as written.
    app.connect("missing-reference", _resolve, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
