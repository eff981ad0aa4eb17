"""Cases for the artifact cache and its digest (mha_book.lm.artifacts)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from mha_book.lm import artifacts
from tools.fault_review.outcomes import Api


def _cached_in(folder: Path):
    def call(name, key, value):
        os.environ[artifacts.ARTIFACTS_ENV] = str(folder)
        try:
            return artifacts.cached(
                name,
                key,
                lambda: value,
                save=lambda v, p: Path(p).write_text(json.dumps(v), encoding="utf-8"),
                load=lambda p: json.loads(Path(p).read_text(encoding="utf-8")),
                kind=list,
            )
        finally:
            del os.environ[artifacts.ARTIFACTS_ENV]

    return call


def artifact_apis() -> list[Api]:
    """``cached`` in a folder of its own (``digest`` takes any value: its
    contract is tested in tests/unit/test_artifacts.py)."""
    folder = Path(tempfile.mkdtemp(prefix="mha_book_faults_artifacts_"))
    return [
        Api(
            "cached",
            _cached_in(folder),
            lambda: {"name": "poems", "key": 1, "value": ["春风"]},
            {"value": ("value", "list")},
        ),
    ]
