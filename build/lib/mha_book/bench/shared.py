"""Measurements shown in the book: taken once per build, shared by both editions.

The zh and en editions execute the same code cells, each in its own kernel.
A timing taken by each would differ between them (a shared machine is never
equally busy twice), and a reader of both would see two "measurements" of
the same code. So the pages of chapters 05-verification, 12-flash-attention
and 13-mqa-gqa-kv-cache call their measurements through
:func:`measured_once`: the first edition to get there measures and stores
the result in the artifact cache (:mod:`mha_book.lm.artifacts`), the other
waits for it and loads it.
"""

from __future__ import annotations

import inspect
import json
import random
import re
from collections.abc import Callable
from typing import Any

import torch

from mha_book._digest import module_files
from mha_book.lm.artifacts import cached

__all__ = ["measured_once"]


def _names(code) -> set[str]:
    """The global names a code object and the functions nested in it use."""
    names = set(code.co_names)
    for const in code.co_consts:
        if inspect.iscode(const):
            names |= _names(const)
    return names


def _own_inputs(measure: Callable[..., Any]) -> dict[str, Any]:
    """The sources of the functions of ``measure``'s own module that it calls by
    name (and that they call), and the plain values (numbers, strings, tuples)
    of the module-level names they read: in a notebook, the cell's helpers and
    constants, which a change to the page can change."""
    found: dict[str, Any] = {}
    todo = [measure]
    while todo:
        fn = todo.pop()
        code, module = getattr(fn, "__code__", None), getattr(fn, "__module__", None)
        if code is None:
            continue
        for name in sorted(_names(code)):
            value = getattr(fn, "__globals__", {}).get(name)
            if name in found or value is None:
                continue
            if inspect.isfunction(value) and value.__module__ == module:
                found[name] = inspect.getsource(value)
                todo.append(value)
            elif isinstance(value, (bool, int, float, str, tuple, list)):
                found[name] = value
    return found


def measured_once(measure: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``measure(*args, **kwargs)``, measured once and shared by both editions.

    The result is stored in the artifact cache (the folder named by
    ``MHA_BOOK_ARTIFACTS``, which the book's build sets; without it, this is
    a plain call). Its key is every input of the measurement: the function's
    module, name and source, its arguments with their defaults filled in,
    the sources of the functions of its own module that it calls and the
    plain values of the module-level names it reads (a notebook cell's
    helpers and constants), the code of the package modules it runs (its
    module's imports, or the whole package for a notebook cell's function),
    and what :func:`~mha_book.lm.artifacts.cached` adds (torch and numpy
    versions, the number of torch threads). Any change
    measures again. While one edition measures, the other waits without
    using the CPU, which leaves the measurement a quieter machine.

    The result goes through JSON, so the edition that measured and the one
    that loaded see the same values (a tuple comes back as a list). The
    measurement runs with a copy of torch's and Python's random state: whether it ran or
    was loaded, the caller's next random numbers are the same.

    Args:
        measure: A function (``def`` in a module or a notebook cell, so that
            its source can be read) whose result JSON can hold.
        *args: Its positional arguments.
        **kwargs: Its keyword arguments.

    Returns:
        The result, as JSON gives it back.

    Raises:
        TypeError: If ``measure`` has no readable source (a ``functools.partial``,
            a builtin) or the arguments do not fit its signature.

    Example:
        >>> def squares(n, step=1):
        ...     return {"n": n, "squares": [i * i for i in range(0, n, step)]}
        >>> measured_once(squares, 4)
        {'n': 4, 'squares': [0, 1, 4, 9]}
    """
    try:
        source = inspect.getsource(measure)
        signature = inspect.signature(measure)
    except (OSError, TypeError, ValueError):
        raise TypeError(
            "measure must be a function whose source can be read (a def in a "
            f"module or notebook cell), got {measure!r}"
        ) from None
    bound = signature.bind(*args, **kwargs)  # TypeError if they do not fit
    bound.apply_defaults()
    name = getattr(measure, "__qualname__", "measure")
    key = (
        getattr(measure, "__module__", None),
        name,
        source,
        dict(bound.arguments),
        _own_inputs(measure),
    )

    def compute() -> Any:
        state = random.getstate()
        try:
            with torch.random.fork_rng(devices=[]):  # the caller's random state stays
                return json.loads(json.dumps(measure(*args, **kwargs)))
        finally:
            random.setstate(state)

    result, _ = cached(
        "measured-" + re.sub(r"\W+", "_", name),
        key,
        compute,
        save=lambda value, path: path.write_text(json.dumps(value), encoding="utf-8"),
        load=lambda path: json.loads(path.read_text(encoding="utf-8")),
        code=_code_of(measure),
    )
    return result


def _code_of(measure: Callable[..., Any]) -> list[str]:
    """The package modules a measurement runs: its own module, if it is one of
    mha_book's (with its imports); else (a notebook cell's function) every one."""
    module = getattr(measure, "__module__", "") or ""
    return [module] if module.split(".")[0] == "mha_book" else list(module_files())
