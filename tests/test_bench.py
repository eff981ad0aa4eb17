"""Smoke tests for mha_book.bench (no timing assertions)."""

import subprocess
import sys

import pytest

from mha_book.bench import attention_flops, format_table, main


def test_quick_run_prints_the_table(capsys):
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "explicit ms" in out and "torch weights ms" in out and "fast GFLOP/s" in out
    assert "dense float32 matmul:" in out
    assert out.count("fast / torch fast <= 1.0x") == 2
    assert out.count("explicit / torch weights <= 1.1x") == 2
    assert "n/a (T = 2048 not run)" in out
    assert "PASS" in out or "MISS" in out


def test_runs_as_a_module():
    result = subprocess.run([sys.executable, "-m", "mha_book.bench", "--quick"], capture_output=True,
                            text=True, timeout=120, check=True)
    assert "fast/torch" in result.stdout


def test_verdicts_follow_the_targets():
    row = {"T": 2048, "explicit": 1.2, "fast": 0.9, "torch_fast": 1.0, "torch_weights": 1.0,
           "gflops": 40.0}
    lines = format_table([row], matmul=100.0).splitlines()
    verdicts = {line.split("<=")[0].split(">=")[0].strip(): line.split()[-1]
                for line in lines if line.endswith(("PASS", "MISS"))}
    assert verdicts == {"fast / torch fast": "PASS", "explicit / torch weights": "MISS",
                        "fast": "MISS"}


def test_flop_count():
    B, T, S, E = 2, 3, 5, 8
    assert attention_flops(B, T, S, E) == 2 * B * E * E * (2 * T + 2 * S) + 4 * B * T * S * E


def test_bad_arguments_exit_with_usage():
    with pytest.raises(SystemExit):
        main(["--repeats", "0"])
