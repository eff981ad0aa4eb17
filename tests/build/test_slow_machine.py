"""A slow machine makes the build slower, never failed: no limit per cell
measures the machine (conf.py), so a cell that runs while every core is busy
with other work still finishes; a hang is the edition's wall-clock limit's
(tests/build/test_build_faults.py)."""

import multiprocessing
import os

from scratch_book import build, cell, executed

# About 2 s of arithmetic on a quiet core; with every core shared, several times that.
WORK = cell("total = sum(i * i for i in range(12_000_000))\nprint(total > 0)")


def burn() -> None:
    while True:
        pass


def test_a_cpu_starved_build_passes_only_slower(scratch):
    neighbours = [
        multiprocessing.Process(target=burn, daemon=True)
        for _ in range(2 * (os.cpu_count() or 1))
    ]
    for process in neighbours:
        process.start()
    try:
        result = build(scratch, WORK)
    finally:
        for process in neighbours:
            process.kill()
    assert result.returncode == 0, result.stdout + result.stderr
    assert executed(scratch)
    assert "True" in (scratch / "_build/html/zh/index.html").read_text(encoding="utf-8")
