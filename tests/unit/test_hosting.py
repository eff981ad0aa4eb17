"""The Pages workflow runs with least privilege and pinned actions."""

import re
from pathlib import Path

import yaml

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "pages.yml"


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def test_only_the_deploy_and_notebooks_jobs_may_write_and_each_only_its_own():
    w = workflow()
    assert w["permissions"] == {"contents": "read"}
    assert w["jobs"]["build"]["permissions"] == {"contents": "read"}
    assert w["jobs"]["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert w["jobs"]["notebooks"]["permissions"] == {"contents": "write"}
    assert set(w["jobs"]) == {"build", "deploy", "notebooks"}


def test_every_action_is_pinned_by_commit_sha():
    uses = [
        s["uses"]
        for job in workflow()["jobs"].values()
        for s in job["steps"]
        if "uses" in s
    ]
    assert len(uses) == 7
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


def test_the_notebooks_branch_is_published_only_with_the_repository_address():
    jobs = workflow()["jobs"]
    build = jobs["build"]["steps"]
    make = next(s for s in build if s.get("run") == "make html")
    # The build reads them (conf.py): with the address, the Colab buttons.
    assert make["env"]["MHA_BOOK_REPO_URL"] == "${{ vars.MHA_BOOK_REPO_URL }}"
    assert make["env"]["MHA_BOOK_BINDER_URL"] == "${{ vars.MHA_BOOK_BINDER_URL }}"
    # with the address, and from main only
    only_with_it = "vars.MHA_BOOK_REPO_URL != '' && github.ref == 'refs/heads/main'"
    lay_out = next(s for s in build if "tools.notebooks_branch" in s.get("run", ""))
    upload = next(
        s for s in build if s.get("uses", "").startswith("actions/upload-artifact")
    )
    assert lay_out["if"] == upload["if"] == jobs["notebooks"]["if"] == only_with_it
    assert build.index(make) < build.index(lay_out) < build.index(upload)
    # What the build lays out is what the notebooks job pushes.
    assert "--out _build/notebooks-branch" in lay_out["run"]
    assert upload["with"]["path"] == "_build/notebooks-branch"
    steps = jobs["notebooks"]["steps"]
    download = steps[0]
    assert download["uses"].startswith("actions/download-artifact@")
    assert download["with"]["name"] == upload["with"]["name"]
    push = steps[1]
    assert push["working-directory"] == download["with"]["path"]
    assert "HEAD:notebooks" in push["run"]
    # after the site is deployed, to the repository the pages link
    assert jobs["notebooks"]["needs"] == ["build", "deploy"]
    assert 'test "$named" = "$THIS_REPO"' in push["run"]
    assert (
        push["env"]["THIS_REPO"] == "${{ github.server_url }}/${{ github.repository }}"
    )
