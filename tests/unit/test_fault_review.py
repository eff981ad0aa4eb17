"""The fixed catalogue of bad inputs (tools/fault_review/) ends without a defect."""

import math
from collections import Counter
from pathlib import Path

import pytest

from tools import fault_review
from tools.fault_review import DEFECTS, Api, run_all, run_case

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def outcomes():
    return run_all()


def test_no_input_of_the_catalogue_ends_in_a_defect(outcomes):
    defects = [
        f"{o.kind}: {o.api}({o.arg}={o.variant}) {o.detail}"
        for o in outcomes
        if o.kind in DEFECTS
    ]
    assert not defects, "\n".join(defects)


def test_the_catalogue_reaches_every_entry_point_and_its_checks(outcomes):
    apis = {api.name for api in fault_review.catalogue()} | {"load_checkpoint"}
    named = Counter(o.api for o in outcomes if o.kind == "named error")
    assert set(named) == apis  # every entry point refused some bad input by name
    assert len(outcomes) > 700


# The names the package exports that the catalogue does not call yet, and why.
# A new entry point must get its cases (tools/fault_review/*_cases.py) or a
# line here; a name that gets cases must leave this list.
NOT_CATALOGUED = {
    # constants: nothing to call
    "CLOCKS", "EXPLICIT_TARGET", "FAST_TARGET", "FLASH_MEMORY_LENGTH",
    "FLASH_MEMORY_TARGET", "MATMUL_FRACTION_LENGTH", "MATMUL_FRACTION_TARGET",
    "RATIOS",
    # the command line: argparse checks argv (tests/unit/test_bench.py)
    "main",
    # no arguments: the map of the book drawn (tests/unit/test_diagrams.py)
    "reading_path",
    # a record of the values over_seeds returns (tests/unit/test_seeds.py)
    "Spread",
}  # fmt: skip


def test_every_exported_name_is_catalogued_or_listed_as_not_yet():
    from mha_book._digest import exports_of

    exported = set()
    for init in (ROOT / "mha_book").rglob("__init__.py"):
        exported |= set(exports_of(init))
    catalogued = {
        api.name.split("(")[0].split(".")[0] for api in fault_review.catalogue()
    }
    assert exported - catalogued - NOT_CATALOGUED == set()
    assert NOT_CATALOGUED & catalogued == set()  # has cases now: off the list
    assert NOT_CATALOGUED <= exported  # no stale name


# --- the classifier itself can fail ---


def _outcome(func, value=1.0):
    return run_case(Api("probe", func, lambda: {"x": 1.0}), "x", "probe", value)


def test_the_classifier_reports_each_kind_of_defect():
    def index_error(x):
        return [][1]

    def unnamed(x):
        raise ValueError("something is wrong")

    def nan_result(x):
        import torch

        return torch.tensor([x]) * math.nan

    def named(x):
        raise TypeError(f"x must be a str, got {type(x).__name__}")

    assert _outcome(index_error).kind == "other exception"
    assert _outcome(unnamed).kind == "unnamed error"
    assert _outcome(nan_result).kind == "NaN from finite input"
    assert _outcome(nan_result, math.inf).kind == "NaN from non-finite input"
    assert _outcome(named).kind == "named error"
    # "x" inside another word is not the argument's name
    assert _outcome(lambda x: (_ for _ in ()).throw(ValueError("max_x bad"))).kind == (
        "unnamed error"
    )


# --- the whole-call kinds: pairs, shared objects, independent computations ---


@pytest.mark.parametrize(
    ("case", "least"), [("pair", 30), ("shared", 20), ("oracle", 25)]
)
def test_each_kind_of_whole_call_case_reaches_many_entry_points(outcomes, case, least):
    of_kind = [o for o in outcomes if o.case == case]
    assert len({o.api for o in of_kind}) >= least
    right = {"named error", "agrees"}
    assert {o.kind for o in of_kind} <= right, [
        o for o in of_kind if o.kind not in right
    ]
    if case == "pair":  # a disagreeing pair is always refused by name
        assert {o.kind for o in of_kind} == {"named error"}


def test_the_cli_counts_each_kind_of_case(outcomes):
    from tools.fault_review.cli import kind_lines

    lines = kind_lines(outcomes)
    assert [line.split(":")[0] for line in lines] == list(fault_review.KINDS.values())


def _ignores_the_mismatch(q, k):
    return q  # accepts any k


def test_each_kind_reports_a_function_that_is_silently_wrong():
    import torch

    from tools.fault_review.checks import Check, differs, refused, run_check

    pair = Check(
        "fake",
        "pair",
        "q batch 2, k batch 3",
        refused(lambda: _ignores_the_mismatch(torch.zeros(2, 1), torch.zeros(3, 1))),
        ("q", "k"),
    )
    unnamed = Check("fake", "pair", "x", refused(lambda: int("x")), ("q", "k"))
    assert run_check(pair).kind == "silently wrong"
    assert run_check(unnamed).kind == "unnamed error"  # the message names no argument

    def sparsity_off_by_one_block():
        return differs(0.25 + 1 / 16, 0.25, 1e-12)

    assert run_check(Check("fake", "oracle", "s", sparsity_off_by_one_block)).kind == (
        "silently wrong"
    )

    class Flips(torch.nn.Module):
        def forward(self, x):
            self.eval()  # the caller's train mode lost
            return x

    model = Flips()
    from tools.fault_review.shared_cases import _keeps_mode

    mode = Check(
        "fake",
        "shared",
        "m",
        _keeps_mode(model, lambda: model(1), True),
        wrong="silently changed mode",
    )
    assert run_check(mode).kind == "silently changed mode"
    kept = []
    shared = Check(
        "fake", "shared", "twice", lambda: differs(len(kept.append(0) or kept), 0)
    )
    assert run_check(shared).kind == "silently wrong"  # hidden state between calls
    assert "silently wrong" in DEFECTS and "silently changed mode" in DEFECTS
