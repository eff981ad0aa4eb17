"""The build folder: its lock, the mark that makes it the build's own, clean
and prune.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

from .common import LANGS

# Execution caches kept per language (one per package digest), most recently
# used first; older ones, and the stored results none of the kept ones can
# use, are pruned after a successful build.
CACHES_KEPT = 3


def prune_caches(
    build: Path, langs=LANGS, keep: int = CACHES_KEPT, used_since: float | None = None
) -> list[Path]:
    """Delete all but the ``keep`` most recently used execution caches of each
    language, then the stored results (mha_book.lm.artifacts names them
    ``<kind>-<digest>.pt``) that no kept cache can use.

    A page's execution touches every result it loads or makes, so a result
    that a kept cache's pages used was touched after that cache began. A
    result is kept when it was touched at or after the start of the oldest
    kept cache, or of this build (``used_since``): never one a page of the
    book still uses, however many of its kind there are (chapter 14 uses
    five runs)."""
    removed, kept_since = [], used_since
    for lang in langs:
        caches = sorted(
            (build / "jupyter_cache").glob(f"{lang}-*"),
            key=lambda p: p.stat().st_mtime,
            reverse=True,
        )
        for old in caches[keep:]:
            shutil.rmtree(old, ignore_errors=True)
            removed.append(old)
        for cache in caches[:keep]:
            began = began_at(cache)
            kept_since = began if kept_since is None else min(kept_since, began)
    if kept_since is None:
        return removed  # nothing says what is in use: keep every result
    for old in (build / "artifacts").glob("*.pt"):
        if old.stat().st_mtime < kept_since:
            for path in (old, old.with_suffix(".lock"), old.with_suffix(".sha256")):
                path.unlink(missing_ok=True)
            removed.append(old)
    return removed


def began_at(folder: Path) -> float:
    """When ``folder`` was begun: the time of its oldest file (or its own)."""
    times = [p.stat().st_mtime for p in folder.rglob("*") if p.is_file()]
    return min(times, default=folder.stat().st_mtime)


@contextlib.contextmanager
def build_lock(build: Path):
    """Hold the build folder's lock; raise BuildBusy if another build holds it.

    Yields the lock's file descriptor, for the processes that share the lock."""
    import fcntl

    build.mkdir(parents=True, exist_ok=True)
    with open(build / ".lock", "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            raise BuildBusy(lock.read().strip() or "?") from None
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        # The editions inherit this descriptor (editions.start_edition): the
        # lock is held until the last of them has ended, so after a SIGKILL of
        # this process no new build starts beside editions still running.
        yield lock.fileno()


class BuildBusy(Exception):
    """Another build holds the build folder (the argument is its pid)."""


# The build marks the folders it creates; --clean deletes nothing else.
BUILD_MARKER = ".mha_book_build"


def claim(build: Path) -> None:
    """Create the build folder (if needed) and mark it as the build's own
    (:func:`foreign` has said it may)."""
    build.mkdir(parents=True, exist_ok=True)
    (build / BUILD_MARKER).touch()


def foreign(build: Path, own_defaults=()) -> str | None:
    """Why the build must not write into ``build``, or None: a folder that holds
    files and carries no mark is someone else's, and the build neither writes
    into it nor marks it (a later --clean would delete the files). The
    default build folders (``own_defaults``: ``_build``, ``_build/partial``)
    are the build's by name, marked or not (older builds left no mark)."""
    if not build.exists():
        return None
    if not build.is_dir():
        return f"refusing to build into {build}: not a folder"
    if build in own_defaults or (build / BUILD_MARKER).exists():
        return None
    if any(p.name != ".lock" for p in build.iterdir()):
        return (
            f"refusing to build into {build}: it holds files and was not made by "
            f"tools/build_book.py (no {BUILD_MARKER} in it); name a new or empty "
            "folder with --build-dir"
        )
    return None


def clean(build: Path, check_only: bool = False) -> str | None:
    """Empty a build folder this script made; return why not, if it refuses.

    The folder itself and its lock stay (a waiting build may hold the lock).
    """
    if not build.exists():
        return None
    if not build.is_dir():
        return f"refusing to clean {build}: not a folder"
    owned = (build / BUILD_MARKER).exists()
    if not owned and any(p.name != ".lock" for p in build.iterdir()):
        return (
            f"refusing to clean {build}: it holds files and was not made by "
            f"tools/build_book.py (no {BUILD_MARKER} in it)"
        )
    if not check_only:
        for item in build.iterdir():
            if item.name == ".lock":
                continue
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item)
            else:
                item.unlink()
    return None
