"""The package as a reader installs it: a wheel and an sdist that pass
twine's check, carry the data and licences, and import with torch and numpy
alone. (make notebooks installs the wheel in a clean environment and runs
every downloaded notebook there.)"""

import email
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import mha_book

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--no-isolation",
            "--outdir",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
    )
    return out


def test_the_wheel_and_sdist_pass_twine_check(dist):
    files = sorted(dist.iterdir())
    names = [f.name for f in files]
    version = mha_book.__version__
    assert names == [
        f"mha_book-{version}-py3-none-any.whl",
        f"mha_book-{version}.tar.gz",
    ]
    check = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, files)],
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_wheel_carries_the_data_licences_and_extras(dist):
    wheel = zipfile.ZipFile(next(dist.glob("*.whl")))
    names = set(wheel.namelist())
    for needed in (
        "mha_book/data/plays/hamlet.txt",
        "mha_book/data/tang5/poems.txt.xz",
        "mha_book/data/tang5/LICENSE",
        "mha_book/data/book_map.toml",
        "mha_book/viz/static/explorer.js",
        "mha_book/viz/static/explorer.css",
    ):
        assert needed in names, needed
    info = f"mha_book-{mha_book.__version__}.dist-info"
    assert f"{info}/licenses/LICENSE" in names
    meta = email.message_from_bytes(wheel.read(f"{info}/METADATA"))
    assert meta["Version"] == mha_book.__version__  # one place: mha_book.__version__
    requires = meta.get_all("Requires-Dist")
    assert {
        r.split(">")[0].split(";")[0].strip() for r in requires if "extra" not in r
    } == {
        "torch",
        "numpy",
    }
    assert "notebook" in meta.get_all("Provides-Extra")


def test_the_unpacked_wheel_imports_with_torch_and_numpy_alone(dist, tmp_path):
    zipfile.ZipFile(next(dist.glob("*.whl"))).extractall(tmp_path)
    code = (
        "import sys, torch, mha_book\n"
        "from mha_book import MultiHeadAttention\n"
        "out, _ = MultiHeadAttention(8, 2)(*[torch.randn(1, 3, 8)] * 3)\n"
        "assert mha_book.__file__.startswith(sys.argv[1]), mha_book.__file__\n"
        "extra = {'matplotlib', 'myst_nb', 'IPython', 'tokenizers'} & set(sys.modules)\n"
        "assert not extra, extra\n"
        "print(tuple(out.shape))\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "(1, 3, 8)"


def test_the_release_workflow_checks_and_publishes_the_tagged_version():
    import re

    import yaml

    path = ROOT / ".github" / "workflows" / "release.yml"
    flow = yaml.safe_load(path.read_text(encoding="utf-8"))
    job = flow["jobs"]["publish"]
    assert flow[True]["push"]["tags"] == ["v*"]  # YAML reads the key "on" as True
    assert job["permissions"] == {"contents": "read", "id-token": "write"}
    steps = job["steps"]
    for step in steps:  # every action pinned by commit SHA
        if "uses" in step:
            assert re.fullmatch(r"[\w./-]+@[0-9a-f]{40}", step["uses"]), step["uses"]
    assert steps[-1]["uses"].startswith("pypa/gh-action-pypi-publish@")
    scripts = "\n".join(step.get("run", "") for step in steps)
    assert "python -m build" in scripts and "twine check --strict" in scripts
    # the step that compares the tag with the version reads mha_book.__version__
    read_version = re.search(r"python -c '([^']+)'", scripts).group(1)
    run = subprocess.run(
        [sys.executable, "-c", read_version], capture_output=True, text=True, cwd=ROOT
    )
    assert run.stdout.strip() == mha_book.__version__
