"""An on-disk cache for expensive deterministic results, such as a trained model.

Used by :func:`mha_book.lm.training.train` (``cache=True``) in chapter
10-decoder-char-lm: both editions of the book train the same model with the
same seed, so the first to get there trains and the other loads the result.

A result is stored under a digest of everything that can change it: the
package code the computation runs (``mha_book._digest.code_digest`` of
the modules it names, followed through their imports, read without comments
and docstrings), the versions of torch and numpy, the number of torch
threads, and the inputs of the call (tensors and arrays by dtype, shape and
bytes). Any change gives a new digest, so a stale result is never served; it
is simply not found. Each stored file has the SHA-256 of its bytes beside it
(``.sha256``), and a result must be of the type the caller names: a file
changed on disk, or of the wrong type, is computed again, never used. An edit elsewhere in the package, or to a docstring, keeps it. The folder is named by the environment variable
``MHA_BOOK_ARTIFACTS`` (the book's build sets it); without it nothing is cached.
Concurrent callers with the same digest wait for each other (a file lock), so
the work is done once; a caller with other work to do can pass ``wait=False``
and be told (:class:`ArtifactBusy`) instead of waiting.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import numpy
import torch

from mha_book._digest import code_digest, module_files
from mha_book.lm.keying import digest

__all__ = [
    "ARTIFACTS_ENV",
    "ArtifactBusy",
    "package_digest",
    "digest",
    "cached",
    "shared_out",
]

ARTIFACTS_ENV = "MHA_BOOK_ARTIFACTS"
NAME_LIMIT = 200  # + "-" + 24 digits of the digest + ".sha256" fits in 255
Result = TypeVar("Result")


class ArtifactBusy(Exception):
    """Another process is computing this result now (``cached(..., wait=False)``)."""


def package_digest(modules: Sequence[str] | None = None) -> str:
    """SHA-256 of the package code that ``modules`` run (every module: None) and
    the versions it runs on.

    Example:
        >>> len(package_digest(["mha_book.lm.training"]))
        64
    """
    versions = f"torch {torch.__version__} numpy {numpy.__version__}"
    return digest(code_digest(modules), versions)


@contextlib.contextmanager
def _locked(path: Path, wait: bool = True) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (POSIX); elsewhere, no lock.

    With ``wait=False`` a lock held by another process raises :class:`ArtifactBusy`.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover: Windows; results stay correct
        yield
        return
    with open(path, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise ArtifactBusy(path.name) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cached(
    name: str,
    key: object,
    compute: Callable[[], Result],
    *,
    save: Callable[[Result, Path], object],
    load: Callable[[Path], Result],
    wait: bool = True,
    code: Sequence[str] | None = None,
    kind: type | tuple[type, ...] = object,
) -> tuple[Result, bool]:
    """``compute()``, or the stored result of an identical earlier call.

    Args:
        name: What is stored, for the file name (e.g. ``"train"``): letters,
            digits, ``_``, ``-`` and ``.``, no path.
        key: Every input of the computation besides the package itself.
        compute: Makes the result.
        save: Writes a result to a path.
        load: Reads it back.
        wait: If another process is computing the same result, wait for it
            (True) or raise :class:`ArtifactBusy` at once (False).
        code: The package modules whose code makes the result (a model's
            passed in: its class's module too); their imports are followed.
            Default: the module that defines ``compute``.
        kind: The type of a result; a stored one of another type is computed
            again.

    Returns:
        ``(result, True)`` if it was loaded, ``(result, False)`` if computed.

    Raises:
        ValueError: If ``name`` is not a plain file name, or ``code`` names a
            module the package does not have.
        TypeError: If ``code`` is not a list of names, or ``key`` holds a
            value with no faithful digest (:func:`~mha_book.lm.keying.digest`).
        NotADirectoryError: If ``MHA_BOOK_ARTIFACTS`` names something that is
            not a folder.
    """
    if (
        not isinstance(name, str)
        or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name)
        or ".." in name
    ):
        raise ValueError(
            f"name must be a plain file name (letters, digits, '_', '-', '.'), got {name!r}"
        )
    if len(name) > NAME_LIMIT:
        raise ValueError(
            f"name must be at most {NAME_LIMIT} characters (a file name holds 255 "
            f"with the digest and suffix), got {len(name)}"
        )
    # Checked with or without a folder, so a key refused in the book's build
    # is refused everywhere.
    threads = torch.get_num_threads()  # results of float sums depend on it
    stamp = digest(package_digest(_code_modules(code, compute)), name, threads, key)
    folder = os.environ.get(ARTIFACTS_ENV)
    if not folder:
        return compute(), False
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(
            f"{ARTIFACTS_ENV} must name a folder; {folder} is not one"
        )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{stamp[:24]}.pt"
    for part in (path, path.with_suffix(".lock"), path.with_suffix(".sha256")):
        if part.is_dir():
            raise IsADirectoryError(
                f"{part} is a folder where a stored result's file belongs; remove it"
            )
    with _locked(path.with_suffix(".lock"), wait):
        if path.exists():
            result = _load_checked(path, load, kind)
            if result is not _DAMAGED:
                os.utime(path)  # "used now": the build prunes what no build uses
                return result, True  # type: ignore[return-value]
        result = compute()
        _store(path, result, save)
        return result, False


def _code_modules(code: object, compute: Callable) -> list[str]:
    """``code`` checked: package modules that exist, in a list (a str is refused,
    since its letters would be read as module names). Without it,
    ``compute``'s module if it is the package's; else (a function of a
    notebook or a test) every module, so that no code change is missed."""
    known = module_files()
    if code is None:
        module = getattr(compute, "__module__", "") or ""
        return [module] if module in known else list(known)
    if isinstance(code, (str, bytes)) or not isinstance(code, Sequence) or not code:
        raise TypeError(f"code must be a non-empty list of module names, got {code!r}")
    unknown = [name for name in code if name not in known]
    if unknown:
        raise ValueError(
            f"code must name modules of the package, got {unknown} (no such module)"
        )
    return list(code)


def shared_out(
    names: Sequence[str], fetch: Callable[[str, bool], Result]
) -> dict[str, Result]:
    """``fetch(name, wait)`` for every name, shared out between processes that
    need the same results (the book's two editions): first every result no
    other process is busy with (``wait=False``; ``fetch`` lets
    :class:`ArtifactBusy` through), then, waiting, the rest. Returns them in
    the order of ``names``.

    Example:
        >>> def fetch(name, wait):
        ...     if name == "b" and not wait:
        ...         raise ArtifactBusy(name)  # another process is making it
        ...     return name.upper()
        >>> shared_out(["a", "b", "c"], fetch)
        {'a': 'A', 'b': 'B', 'c': 'C'}
    """
    # Written by hand because it is ten lines.
    results: dict[str, Result] = {}
    for name in names:
        try:
            results[name] = fetch(name, False)
        except ArtifactBusy:
            pass
    for name in names:
        if name not in results:
            results[name] = fetch(name, True)
    return {name: results[name] for name in names}


_DAMAGED = object()


def _file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load_checked(path: Path, load: Callable[[Path], Result], kind) -> object:
    """The stored result, or ``_DAMAGED`` (removed) if its bytes are not the
    ones stored, it does not load, or it is not a ``kind``."""
    sidecar = path.with_suffix(".sha256")
    try:
        if sidecar.read_text(encoding="ascii").strip() == _file_sha256(path):
            result = load(path)
            if isinstance(result, kind):
                return result
    except Exception:  # noqa: BLE001  (a damaged file is recomputed)
        pass
    path.unlink(missing_ok=True)
    sidecar.unlink(missing_ok=True)
    return _DAMAGED


def _store(path: Path, result: Result, save: Callable[[Result, Path], object]) -> None:
    """Write the result and the SHA-256 of its bytes beside it; readers see the
    old pair or the whole new one (they hold the lock while they read)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        save(result, Path(tmp))
        sidecar = path.with_suffix(".sha256")
        sidecar.write_text(_file_sha256(Path(tmp)) + "\n", encoding="ascii")
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
