"""A page's assertions fail the build when mha_book stops doing what the page says.

The real chapter is built in a scratch copy of the repository whose mha_book
has one deliberate bug; the notebook kernels import that copy (PYTHONPATH).
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from scratch_book import ROOT, copy_build_machinery

# (page, file, correct code, broken code, what the page must then report)
BUGS = {
    "softmax-not-normalised": (
        "01-overview",
        "mha_book/attention/scaled_dot_product.py",
        "weights = torch.softmax(scores, dim=-1)  # (..., T, S)\n",
        "weights = torch.exp(scores)  # (..., T, S)\n",
        "AssertionError",
    ),
    "split-heads-without-transpose": (
        "03-multi-head",
        "mha_book/attention/heads.py",
        "    x = x.view(B, T, H, E // H)  # (B, T, H, D)\n    return x.transpose(1, 2)  # (B, H, T, D)\n",
        "    return x.view(B, H, T, E // H)  # plain view: mixes tokens into heads\n",
        "AssertionError",
    ),
}


def scratch_repo(tmp_path: Path) -> Path:
    copy_build_machinery(tmp_path)
    for lang in ("zh", "en"):
        shutil.copytree(ROOT / "docs" / lang, tmp_path / "docs" / lang)
    return tmp_path


def build(repo: Path, *pages: str) -> subprocess.CompletedProcess:
    # Kernels import the scratch mha_book. A partial build: every page is
    # read, only `pages` execute.
    env = dict(os.environ, PYTHONPATH=str(repo))
    return subprocess.run(
        [sys.executable, "-m", "tools.build_book", "--langs", "en", "--pages", *pages],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_a_broken_package_fails_the_page_that_relies_on_it(tmp_path, bug):
    page, file, good, bad, expected = BUGS[bug]
    repo = scratch_repo(tmp_path)
    source = (repo / file).read_text(encoding="utf-8")
    assert source.count(good) == 1, (
        f"{file} no longer contains the line this test breaks"
    )

    (repo / file).write_text(source.replace(good, bad), encoding="utf-8")
    result = build(repo, page)
    assert result.returncode != 0, "the page did not notice the broken package"
    assert expected in result.stdout
    assert f"docs/en/{page}.md" in result.stdout


def test_the_same_pages_build_with_the_real_package(tmp_path):
    pages = sorted({bug[0] for bug in BUGS.values()})
    result = build(scratch_repo(tmp_path), *pages)  # one build executes them all
    assert result.returncode == 0, result.stdout[-3000:]
    assert all(f"[en]   done  {page}:" in result.stdout for page in pages)
