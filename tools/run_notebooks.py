"""Run every downloaded notebook as a reader does: ``make notebooks``.

Usage: python -m tools.run_notebooks [--site _build/html] [--pages 02 13]
       [--langs zh en] [--out _build/notebooks]

1. Builds the sdist and, from it, the wheel (``python -m build``) into ``OUT/dist``.
2. Makes a clean virtual environment, ``OUT/venv``, with nothing but torch
   (``requirements/torch.txt``), the wheel with its ``notebook`` extra (at the
   versions ``requirements/test.txt`` locks) and a Jupyter kernel. It is made
   again when the wheel's files change.
3. Executes the notebooks the built site offers for download
   (``SITE/{zh,en}/_sources/NN-*.ipynb``), one at a time, in that environment
   (``nbclient``, run by the environment's own Python), each in an empty
   folder, with neither ``MHA_BOOK_LANG`` nor ``MHA_BOOK_ARTIFACTS`` set: the
   notebook's first cell sets its language, and nothing is loaded from the
   book's stored results.

Prints one row per notebook (edition, notebook, result, seconds), writes them
to ``OUT/report.json`` and exits 1 if any notebook failed. ``--pages`` takes
chapter numbers or names; ``make test`` runs a sample this way.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run by the clean environment's Python: one notebook, its result on stdout.
RUNNER = """\
import json, sys, time, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
start = time.perf_counter()
try:
    NotebookClient(nb, timeout=1800, kernel_name="python3",
                   resources={"metadata": {"path": sys.argv[2]}}).execute()
    result = "passed"
except Exception as err:  # the first failing cell's error, shortened
    result = f"failed: {type(err).__name__}: {str(err).strip().splitlines()[-1][:200]}"
print(json.dumps({"result": result, "seconds": time.perf_counter() - start}))
"""


def build_wheel(out: Path) -> Path:
    dist = out / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    # sdist, then the wheel from the unpacked sdist in a temporary folder, as
    # a release does: nothing (no build/) is written into the checkout
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), "."],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    return next(dist.glob("*.whl"))


def _wheel_digest(wheel: Path) -> str:
    """SHA-256 of the wheel's files (names and bytes), not of its zip: the zip
    records when it was built, so every build's bytes differ."""
    import zipfile

    h = hashlib.sha256()
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(z.namelist()):
            h.update(name.encode() + b"\0" + hashlib.sha256(z.read(name)).digest())
    return h.hexdigest()


def clean_env(out: Path, wheel: Path) -> Path:
    """The environment's Python, made again when the wheel's files change."""
    venv = out / "venv"
    stamp = venv / ".wheel-sha256"
    digest = _wheel_digest(wheel)
    python = venv / "bin" / "python"
    if stamp.exists() and stamp.read_text() == digest and python.exists():
        return python
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "-r", str(ROOT / "requirements" / "torch.txt")], check=True)
    lock = ["-c", str(ROOT / "requirements" / "test.txt")]
    subprocess.run(
        [*pip, *lock, f"{wheel}[notebook]", "ipykernel", "nbclient"], check=True
    )
    stamp.write_text(digest)
    return python


def notebooks(site: Path, langs: list[str], pages: list[str] | None) -> list[Path]:
    found = []
    for lang in langs:
        for nb in sorted((site / lang / "_sources").glob("[0-9][0-9]-*.ipynb")):
            if pages is None or any(nb.stem.startswith(p) for p in pages):
                found.append(nb)
    if not found:
        raise SystemExit(f"no notebooks under {site}/{{{','.join(langs)}}}/_sources: "
                         "build the site first (make html)")  # fmt: skip
    return found


def run(python: Path, notebook: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MHA_BOOK_")}
    env["MPLBACKEND"] = "Agg"
    with tempfile.TemporaryDirectory(prefix="mha-book-notebook-") as work:
        done = subprocess.run(
            [str(python), "-c", RUNNER, str(notebook.resolve()), work],
            capture_output=True, text=True, env=env, cwd=work,
        )  # fmt: skip
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [""])[-1][:200]
        return {
            "result": f"failed: runner exited {done.returncode}: {last}",
            "seconds": 0.0,
        }
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.run_notebooks")
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "notebooks")
    parser.add_argument(
        "--langs", nargs="+", default=["zh", "en"], choices=["zh", "en"]
    )
    parser.add_argument("--pages", nargs="+", default=None, help="e.g. 02 13")
    args = parser.parse_args(argv)
    selected = notebooks(args.site, args.langs, args.pages)
    args.out.mkdir(parents=True, exist_ok=True)
    python = clean_env(args.out, build_wheel(args.out))
    rows = []
    print(f"{'edition':<8} {'notebook':<28} {'seconds':>8}  result", flush=True)
    for nb in selected:
        row = {"edition": nb.parents[1].name, "notebook": nb.name, **run(python, nb)}
        rows.append(row)
        print(f"{row['edition']:<8} {row['notebook']:<28} {row['seconds']:>8.1f}  "
              f"{row['result']}", flush=True)  # fmt: skip
    (args.out / "report.json").write_text(json.dumps(rows, indent=1), encoding="utf-8")
    failed = [r for r in rows if r["result"] != "passed"]
    print(f"{len(rows) - len(failed)} of {len(rows)} notebooks passed")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
