"""Package names that load their module on first use (PEP 562).

``import mha_book`` then imports nothing but the package itself: a page or a
program loads the modules it uses and no others, so it starts sooner, and
the book's build knows a page depends on those modules alone
(:mod:`mha_book._digest`). Each package lists its names in ``_EXPORTS``,
name -> submodule; its ``if TYPE_CHECKING:`` imports say the same for type
checkers (tests/unit/test_lazy_exports.py checks that the two agree).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, exports: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``.

    A name of ``exports`` (name -> submodule, relative to the package) is
    imported from its submodule when first read, then kept on the package;
    any other name is tried as a submodule (``mha_book.attention`` after a
    plain ``import mha_book``).

    Example:
        >>> getattr_, dir_ = lazy_exports("mha_book", {"causal_mask": "attention.masks"})
        >>> getattr_("causal_mask").__module__
        'mha_book.attention.masks'
        >>> "causal_mask" in dir_()
        True
    """

    def __getattr__(name: str) -> Any:
        module = sys.modules[package]
        if name in exports:
            value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
            setattr(module, name, value)  # the next read finds it directly
            return value
        if not name.startswith("__"):
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as error:
                if error.name != f"{package}.{name}":
                    raise  # the submodule exists and failed to import
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(exports) | set(vars(sys.modules[package])))

    return __getattr__, __dir__
