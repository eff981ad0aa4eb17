"""Smoke tests for mha_book.bench (no timing assertions)."""

import functools
import importlib
import importlib.util
import subprocess
import sys
import time

import pytest
import torch

from mha_book.bench import (
    attention_flops,
    decode_speed,
    format_decode,
    format_kernels,
    format_table,
    forward_times,
    interleaved_times,
    kernel_times,
    main,
    measure_peak_memory,
    measured_once,
    paired_ratio,
)
from mha_book.lm.artifacts import ARTIFACTS_ENV


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
    result = subprocess.run(
        [sys.executable, "-m", "mha_book.bench", "--quick"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "fast/torch" in result.stdout


def test_verdicts_follow_the_targets():
    row = {
        "T": 2048,
        "explicit": 1.2,
        "fast": 0.9,
        "torch_fast": 1.0,
        "torch_weights": 1.0,
        "gflops": 40.0,
    }
    lines = format_table([row], matmul=100.0).splitlines()
    verdicts = {
        line.split("<=")[0].split(">=")[0].strip(): line.split()[-1]
        for line in lines
        if line.endswith(("PASS", "MISS"))
    }
    assert verdicts == {
        "fast / torch fast": "PASS",
        "explicit / torch weights": "MISS",
        "fast": "MISS",
    }


def test_verdicts_use_the_paired_ratios_and_show_their_spread():
    # Medians alone would give fast 0.9x (PASS); the paired ratio says 1.04x.
    row = {
        "T": 128,
        "explicit": 1.0,
        "fast": 0.9,
        "torch_fast": 1.0,
        "torch_weights": 1.0,
        "gflops": 40.0,
        "fast_ratio": (1.04, 1.01, 1.07),
        "explicit_ratio": (1.0, 1.0, 1.0),
    }
    lines = format_table([row], matmul=100.0).splitlines()
    fast = next(line for line in lines if line.startswith("fast / torch fast"))
    explicit = next(
        line for line in lines if line.startswith("explicit / torch weights")
    )
    assert fast.split()[-3:] == ["1.04x", "MISS", "[1.01-1.07]"]
    assert explicit.split()[-2:] == ["1.00x", "PASS"]  # no spread to show
    assert "1.04x" in lines[2] and "0.90x" not in lines[2]


def test_paired_ratio_pairs_repeats():
    assert paired_ratio([3.0, 1.0], [3.0, 1.0]) == (
        1.0,
        1.0,
        1.0,
    )  # same repeat, same speed
    assert paired_ratio([2.0], [4.0]) == (0.5, 0.5, 0.5)
    with pytest.raises(ValueError):
        paired_ratio([1.0, 2.0], [1.0])


def test_flop_count():
    B, T, S, E = 2, 3, 5, 8
    assert (
        attention_flops(B, T, S, E)
        == 2 * B * E * E * (2 * T + 2 * S) + 4 * B * T * S * E
    )


@pytest.mark.parametrize(
    "argv, named",
    [
        (["--repeats", "0"], "--repeats"),
        (["--lengths", "-8"], "--lengths"),
        (["--threads", "0"], "--threads"),
        (["--lengths", "many"], "--lengths"),
        (["--no-such-option"], "--no-such-option"),
    ],
)
def test_bad_arguments_exit_with_usage_and_the_option_named(argv, named, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert named in capsys.readouterr().err


# --- kernels and decoding sections ---


def test_quick_run_prints_the_new_sections(capsys):
    assert main(["--quick"]) == 0
    out = capsys.readouterr().out
    assert "kernels: explicit, fused, flash (mha_book.attention.kernels)" in out
    assert "flash/explicit mem" in out
    assert "n/a (memory at T = 8192 not measured)" in out
    assert "decoding: 2 self-attention layers" in out and "cache tok/s" in out
    assert out.count("KV cache faster than no cache") == 3
    assert (
        out.count("cached outputs equal") == 3
        and "cached outputs equal (1e-4 rel.)    Hkv =   1" in out
    )


def test_kernel_table_and_memory_target():
    times = [{"T": 8192, "explicit": 0.5, "flash": 0.6, "fused": 0.3}]
    memory = [
        {"kernel": k, "T": 8192, "extra_bytes": mib * 2**20, "seconds": 0.1}
        for k, mib in (("explicit", 256.0), ("flash", 6.0), ("fused", 2.0))
    ]
    text = format_kernels(times, memory)
    assert "2.3%" in text and text.splitlines()[-1].endswith("PASS")
    memory[1]["extra_bytes"] = 20 * 2**20
    assert format_kernels(times, memory).splitlines()[-1].endswith("MISS")
    assert (
        format_kernels(times)
        .splitlines()[-1]
        .endswith("n/a (memory at T = 8192 not measured)")
    )


def test_decode_table_verdicts():
    rows = [
        {
            "num_kv_heads": 4,
            "no_cache_tok_s": 100.0,
            "cache_tok_s": 300.0,
            "speedup": 3.0,
            "max_diff": 1e-7,
            "scale": 2.0,
            "cache_bytes": 4096,
        },
        {
            "num_kv_heads": 1,
            "no_cache_tok_s": 100.0,
            "cache_tok_s": 90.0,
            "speedup": 0.9,
            "max_diff": 1e-2,
            "scale": 2.0,
            "cache_bytes": 1024,
        },
    ]
    lines = format_decode(
        rows, E=32, H=4, layers=2, prompt=4, new_tokens=4
    ).splitlines()
    verdicts = [line.split()[-1] for line in lines if line.endswith(("PASS", "MISS"))]
    assert verdicts == ["PASS", "MISS", "PASS", "MISS"]


def test_measure_peak_memory_in_a_subprocess():
    rows = measure_peak_memory(
        [512, 1024], kernels=("explicit", "flash"), block_size=64
    )
    mib = {(r["kernel"], r["T"]): r["extra_bytes"] / 2**20 for r in rows}
    assert set(mib) == {
        ("explicit", 512),
        ("explicit", 1024),
        ("flash", 512),
        ("flash", 1024),
    }
    assert mib["explicit", 1024] >= 1024 * 1024 * 4 / 2**20  # its (T, S) float32 scores
    assert mib["flash", 1024] < mib["explicit", 1024]
    assert all(r["seconds"] > 0 for r in rows)
    with pytest.raises(ValueError, match=r"kernel must be one of"):
        measure_peak_memory([8], kernels=("mystery",))


def test_decode_speed_outputs_agree_and_cache_shrinks():
    rows = decode_speed(
        (4, 2, 1), E=16, H=4, layers=2, prompt=3, new_tokens=3, repeats=1
    )
    assert [r["num_kv_heads"] for r in rows] == [4, 2, 1]
    for r in rows:
        assert r["max_diff"] <= 1e-5 * r["scale"]
        assert r["cache_tok_s"] > 0 and r["no_cache_tok_s"] > 0
    # 2 layers x (keys + values) x B=1 x Hkv x S=6 x D=4 float32 numbers
    assert [r["cache_bytes"] for r in rows] == [
        2 * 2 * h * 6 * 4 * 4 for h in (4, 2, 1)
    ]


def test_kernel_times_rows():
    rows = kernel_times([16, 32], 1, B=1, H=2, D=8, block_size=8)
    assert [r["T"] for r in rows] == [16, 32]
    assert all(r[k] > 0 for r in rows for k in ("explicit", "flash", "fused"))
    assert list(rows[0]) == ["T", "explicit", "fused", "flash"]  # the registry's order


@pytest.mark.parametrize("T, S", [(16, 16), (8, 24)])
def test_the_flop_formula_is_what_torch_counts_on_the_explicit_path(T, S):
    from torch.utils.flop_counter import FlopCounterMode

    from mha_book.attention.mha import MultiHeadAttention

    B, E, H = 2, 32, 4
    mha = MultiHeadAttention(E, H).eval()
    query, memory = torch.randn(B, T, E), torch.randn(B, S, E)
    with FlopCounterMode(display=False) as counter, torch.no_grad():
        mha(query, memory, memory, need_weights=True)  # the explicit kernel
    assert counter.get_total_flops() == attention_flops(B, T, S, E)


def test_strict_exits_1_and_lists_every_missed_target(capsys):
    code = main(["--quick", "--strict"])
    out = capsys.readouterr().out
    tables, _, listed = out.partition("target(s) missed (--strict):")
    missed = [line.strip() for line in tables.splitlines() if "  MISS" in line]
    # Tiny sizes miss the speed targets here (Python overhead dominates).
    assert missed, "expected the quick run to miss a speed target"
    assert code == 1
    assert [line.strip() for line in listed.strip().splitlines()] == missed


# --- the book's measurements: interleaved, taken once for both editions ---


def test_interleaved_times_gives_every_call_a_turn_in_every_round(monkeypatch):
    import mha_book.bench.timing as timing

    seen = []

    def one_call(fn, min_run_time=0.0, clock="wall"):  # Timer warms up with 2 calls
        fn()
        return 1.0

    monkeypatch.setattr(timing, "time_call", one_call)
    calls = {name: (lambda name=name: seen.append(name)) for name in "abc"}
    times = interleaved_times(calls, rounds=4)
    assert times == {name: [1.0] * 4 for name in "abc"}
    assert seen[:3] == ["a", "b", "c"]  # the warm-up
    rounds = [seen[3 + 3 * r : 6 + 3 * r] for r in range(4)]
    assert all(sorted(r) == ["a", "b", "c"] for r in rounds)  # each once per round
    assert len({tuple(r) for r in rounds}) > 1  # in shuffled orders
    with pytest.raises(ValueError, match=r"rounds must be a positive int, got 0"):
        interleaved_times(calls, rounds=0)
    for bad in (1.5, True):
        with pytest.raises(TypeError, match=r"rounds must be a positive int, got"):
            interleaved_times(calls, rounds=bad)
    with pytest.raises(ValueError, match=r"calls must name at least one"):
        interleaved_times({}, rounds=1)
    with pytest.raises(
        ValueError, match=r"clock must be one of \['cpu', 'wall'\], got 'gpu'"
    ):
        interleaved_times(calls, rounds=1, clock="gpu")


def test_forward_times_one_median_per_size():
    times = forward_times([(8, 2, 4), (8, 2, 8), (8, 4, 8)], rounds=2, min_run_time=0)
    assert len(times) == 3 and all(t > 0 for t in times)


@pytest.fixture
def artifacts(tmp_path, monkeypatch):
    monkeypatch.setenv(ARTIFACTS_ENV, str(tmp_path))
    return tmp_path


def clock(n):
    """A stand-in for a timing: a different value at every call."""
    return {"n": n, "t": time.perf_counter(), "pair": (1, 2)}


def test_measured_once_measures_once_and_both_callers_see_the_same(artifacts):
    first, second = measured_once(clock, 3), measured_once(clock, 3)
    assert first == second and first["pair"] == [1, 2]  # through JSON, both times
    assert measured_once(clock, 4)["t"] != first["t"]  # another input: measured
    assert len(list(artifacts.glob("measured-clock-*.pt"))) == 2


def test_measured_once_without_the_folder_measures_every_time(monkeypatch):
    monkeypatch.delenv(ARTIFACTS_ENV, raising=False)
    assert measured_once(clock, 3)["t"] != measured_once(clock, 3)["t"]


def test_measured_once_leaves_the_callers_random_state_alone(artifacts):
    def draws(n):
        torch.manual_seed(123)  # what decode_speed and forward_times do
        return torch.rand(n).tolist()

    for _ in ("measured", "loaded"):
        torch.manual_seed(0)
        measured_once(draws, 2)
        after = torch.rand(1)
        torch.manual_seed(0)
        assert torch.equal(after, torch.rand(1))


def test_measured_once_key_covers_the_helpers_of_the_measuring_module(
    artifacts, tmp_path, monkeypatch
):
    # A page's cell: the measured function calls a helper of the same cell.
    module = tmp_path / "page_cell.py"
    cell = (
        "import time\nROUNDS = {rounds}\n\n\ndef helper():\n    return {body}\n\n\n"
        "def measure():\n    return [helper(), ROUNDS, time.perf_counter()]\n"
    )

    def run(rounds=3, body="1"):
        module.write_text(cell.format(rounds=rounds, body=body), encoding="utf-8")
        spec = importlib.util.spec_from_file_location("page_cell", module)
        page_cell = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, "page_cell", page_cell)  # for its source
        spec.loader.exec_module(page_cell)
        return measured_once(page_cell.measure)

    first = run()
    assert run() == first  # loaded
    assert run(body="2")[0] == 2  # the helper changed: measured again
    assert run(rounds=5)[1] == 5  # a constant it reads changed: measured again


def test_measured_once_needs_a_function_with_a_source():
    with pytest.raises(TypeError, match=r"measure must be a function whose source"):
        measured_once(functools.partial(clock, 3))
    with pytest.raises(TypeError):
        measured_once(clock, 3, 4)  # does not fit its signature
