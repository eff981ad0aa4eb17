"""The Pages workflow runs with least privilege and pinned actions."""

import re
from pathlib import Path

import yaml

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "pages.yml"


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def test_only_the_deploy_job_may_write():
    w = workflow()
    assert w["permissions"] == {"contents": "read"}
    assert w["jobs"]["build"]["permissions"] == {"contents": "read"}
    assert w["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}


def test_every_action_is_pinned_by_commit_sha():
    uses = [
        s["uses"]
        for job in workflow()["jobs"].values()
        for s in job["steps"]
        if "uses" in s
    ]
    assert len(uses) == 5
    assert all(re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", u) for u in uses), uses


def test_a_deployment_in_progress_is_not_cancelled():
    assert workflow()["concurrency"]["cancel-in-progress"] is False


def test_the_build_caches_wheels_by_the_locks_and_the_execution_caches():
    steps = workflow()["jobs"]["build"]["steps"]
    setup = next(
        s for s in steps if s.get("uses", "").startswith("actions/setup-python")
    )
    assert setup["with"]["cache"] == "pip"
    assert setup["with"]["cache-dependency-path"] == "requirements/*.txt"
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache"))
    # The folders tools/build_book.py writes its caches to.
    assert cache["with"]["path"].split() == ["_build/jupyter_cache", "_build/artifacts"]
    assert "hashFiles('mha_book/**', 'requirements/*.txt'" in cache["with"]["key"]
    assert steps.index(cache) < next(
        i for i, s in enumerate(steps) if s.get("run") == "make html"
    )
