"""Sphinx extension: the pages on disk are the pages the build wrote.

Sphinx writes a page again only when its source is newer than the HTML file,
so a page damaged after a build (cut short by a full disk or a killed copy,
edited by hand) used to stay as it was, and the next build said it succeeded.
After each successful build, the SHA-256 of every page as written (after every
other extension's rewriting: this runs last) is kept in
``_build/reports/<lang>/written.json``; the next build reads again, and so
writes again, each page whose file is missing or differs, or that shows an
image of ``_images`` that does, and says so in one line. A damaged record heals the same way: every page is written again.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path


def _say(text: str) -> None:
    print(text, flush=True)  # shown under sphinx -q, as book_progress's lines


def written_record(app) -> Path:
    import book_build

    lang = app.config.language.split("_")[0]  # zh_CN -> zh
    return book_build.BUILD / "reports" / lang / "written.json"


def _page_file(app, docname: str) -> Path:
    return Path(app.outdir) / app.builder.get_target_uri(docname)


def _written_files(app, env) -> dict[str, tuple[Path, set[str]]]:
    """What the build writes for the pages: key -> (file, the pages that write
    it): each page's HTML, and each image in ``_images`` (copied when a page
    that shows it is written)."""
    files = {d: (_page_file(app, d), {d}) for d in env.all_docs}
    for docnames, name in env.images.values():
        files[f"_images/{name}"] = (Path(app.outdir) / "_images" / name, set(docnames))
    return files


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:  # missing, or unreadable
        return None


def _damaged_pages(app, env, added, changed, removed) -> list[str]:
    """Sphinx's ``env-get-outdated``: the pages whose HTML is not what the last
    build wrote; read again, they are written again."""
    from tools.build.common import read_record

    if app.builder.format != "html":
        return []
    kept = sorted(set(env.all_docs) - set(added) - set(changed) - set(removed))
    if not kept:  # a first build: every page is written anyway
        return []
    path = written_record(app)
    if not path.exists():
        _say(f"no record of the pages written ({path}): every page is written again")
        return kept
    everything = dict.fromkeys(env.all_docs, "")
    recorded = read_record(
        path, {}, dict, damaged=everything, healing="every page is written again"
    )
    damaged = set()
    for key, (path, docnames) in _written_files(app, env).items():
        if recorded.get(key) != _digest(path):
            damaged |= docnames
    damaged = sorted(damaged & set(kept))
    if damaged and recorded is not everything:
        shown = ", ".join(damaged[:5]) + (" ..." if len(damaged) > 5 else "")
        _say(
            f"{len(damaged)} page(s) on disk differ from what the last build "
            f"wrote ({shown}): written again"
        )
    return damaged


def _record_written(app, exception) -> None:
    """After a successful build: every page's digest, as it is on disk now."""
    if exception is not None or app.builder.format != "html":
        return
    record = {
        key: digest
        for key, (path, _) in sorted(_written_files(app, app.env).items())
        if (digest := _digest(path)) is not None
    }
    path = written_record(app)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def setup(app):
    app.connect("env-get-outdated", _damaged_pages)
    # After every other build-finished handler (book_assets rewrites the
    # pages' stylesheet links at 900): the record is of the final pages.
    app.connect("build-finished", _record_written, priority=990)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
