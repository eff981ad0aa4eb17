"""Build both language trees of the book and report per-page execution time.

Usage: python tools/build_book.py [--clean]

Runs the zh and en Sphinx builds side by side (one process each, so the two
cores are both used), in strict mode (-W: any warning, including stderr from
a code cell, is an error). Output: _build/html/{zh,en}/ and a language chooser
at _build/html/index.html.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LANGS = ("zh", "en")
sys.path.insert(0, str(ROOT / "tools"))

from check_parity import parity_problems  # noqa: E402


def sphinx_command(lang: str, srcdir: Path, outdir: Path, doctrees: Path) -> list[str]:
    return [
        sys.executable, "-m", "sphinx", "-b", "html", "-c", str(ROOT),
        "-W", "--keep-going", "-q",
        "-d", str(doctrees), str(srcdir), str(outdir),
    ]


def build_env(lang: str, build: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["MHA_BOOK_LANG"] = lang
    env["MHA_BOOK_BUILD_DIR"] = str(build)
    # Two builds run at once on two cores: one thread each for torch/BLAS.
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("MKL_NUM_THREADS", "1")
    env["PYTHONHASHSEED"] = "0"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    return env


def run_builds(docs: Path, build: Path, langs=LANGS) -> int:
    """Run one Sphinx build per language in parallel; stream prefixed output."""
    procs = {}
    for lang in langs:
        cmd = sphinx_command(lang, docs / lang, build / "html" / lang, build / "doctrees" / lang)
        procs[lang] = subprocess.Popen(
            cmd, cwd=ROOT, env=build_env(lang, build), text=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )

    def pump(lang, proc):
        for line in proc.stdout:
            if "Kernel is running over TCP without encryption" in line:
                continue  # jupyter's note about its local socket, not about the book
            sys.stdout.write(f"[{lang}] {line}")
            sys.stdout.flush()

    threads = [threading.Thread(target=pump, args=item) for item in procs.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = {lang: proc.wait() for lang, proc in procs.items()}
    for lang, code in codes.items():
        if code != 0:
            print(f"[{lang}] build FAILED (exit {code})")
    return max(codes.values())


def print_exec_table(build: Path, langs=LANGS) -> None:
    rows = []
    for lang in langs:
        path = build / "exec" / f"{lang}.json"
        if not path.exists():
            continue
        for doc, d in json.loads(path.read_text(encoding="utf-8")).items():
            runtime = d.get("runtime")
            status = ("executed" if d["executed_this_build"]
                      else "from cache" if d["read_this_build"] else "unchanged")
            rows.append((lang, doc, runtime, status))
    if not rows:
        return
    print("\nPer-page execution time (seconds of the last execution; status in this build):")
    print(f"{'lang':4}  {'page':34}  {'seconds':>8}  status")
    for lang, doc, runtime, status in rows:
        secs = f"{runtime:8.2f}" if runtime is not None else f"{'-':>8}"
        print(f"{lang:4}  {doc:34}  {secs}  {status}")
    ran = [r for r in rows if r[3] == "executed"]
    total = sum(r[2] or 0 for r in ran)
    print(f"executed in this build: {len(ran)} page(s), {total:.1f} s of kernel time")


def partial_docs(docs: Path, build: Path, pages: list[str]) -> Path:
    """Copy index, api, glossary and the chosen pages into build/partial_docs.

    Pages include package sources as ``../../mha_book/...``; a link from
    build/mha_book keeps that path valid. Copies get a fresh mtime, so Sphinx
    always re-reads them (execution still comes from the cache).
    """
    os.environ["MHA_BOOK_PARTIAL"] = "1"
    part = build / "partial_docs"
    shutil.rmtree(part, ignore_errors=True)
    wanted = {"index", "api", "glossary", *(p.removesuffix(".md") for p in pages)}
    for lang in LANGS:
        for name in sorted(wanted):
            src = docs / lang / f"{name}.md"
            if not src.exists():
                raise SystemExit(f"no such page: {src}")
            (part / lang).mkdir(parents=True, exist_ok=True)
            shutil.copy(src, part / lang / src.name)
    shutil.copy(docs / "landing.html", part / "landing.html")
    package = build / "mha_book"
    if not package.exists():
        package.symlink_to(ROOT / "mha_book", target_is_directory=True)
    return part


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clean", action="store_true", help="remove the build dir first")
    parser.add_argument("--docs", type=Path, default=ROOT / "docs", help="source dir with zh/ and en/")
    parser.add_argument("--build-dir", type=Path, default=ROOT / "_build", help="output dir")
    parser.add_argument("--langs", nargs="+", choices=LANGS, default=list(LANGS))
    parser.add_argument("--pages", nargs="+", metavar="PAGE",
                        help="build only these pages (plus index and api) while writing "
                             "them; links to other chapters are not checked")
    args = parser.parse_args(argv)
    docs, build = args.docs.resolve(), args.build_dir.resolve()
    if args.pages:
        docs = partial_docs(docs, build, args.pages)
    if args.clean:
        shutil.rmtree(build, ignore_errors=True)
    start = time.perf_counter()
    problems = parity_problems(docs)
    if problems:
        for p in problems:
            print(f"parity: {p}")
        print("build FAILED: the zh and en books must have the same pages and code cells")
        return 1
    out = build / "html"
    code = run_builds(docs, build, args.langs)
    if code == 0 and (docs / "landing.html").exists():
        shutil.copy2(docs / "landing.html", out / "index.html")
        (out / ".nojekyll").touch()
    print_exec_table(build, args.langs)
    print(f"\nbuild {'succeeded' if code == 0 else 'FAILED'} in {time.perf_counter() - start:.1f} s"
          + (f"; open {out / 'index.html'} or run `make serve`" if code == 0 else ""))
    return code


if __name__ == "__main__":
    sys.exit(main())
