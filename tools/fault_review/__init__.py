"""Feed bad and edge inputs to the public API, one argument at a time, and sort the outcomes.

Every public entry point gets a valid call (its baseline); then each argument
in turn is replaced by values of the wrong type, dtype, rank, size, sign or
finiteness, and by edge values that must work (numpy ints, empty sizes). Each
call ends in one of these classes:

- ``named error``: a ``ValueError``/``TypeError`` whose message names the
  argument (or the tensor it must agree with). The goal for bad input.
- ``result``: accepted; the output is finite wherever the inputs were.
- ``NaN from non-finite input``: NaN or inf went in and NaN came out, as in
  torch itself.
- ``unnamed error``, ``other exception``, ``NaN from finite input`` and, for
  a damaged checkpoint that loads, ``silently changed weights``: defects.

Three further kinds of case are whole calls (``checks``): ``pair_cases``
varies two arguments that must agree so they disagree (batch sizes, lengths,
heads, dtypes, devices, a cache and its module; a result is ``silently
wrong``), ``shared_cases`` shares or reuses one object (a cache given to two
modules, a block freed while held, aliased inputs, a call repeated, the
model's train/eval mode: ``silently changed mode``), and ``oracle_cases``
checks results against an independent computation (brute force, a
definition, PyTorch's own modules). Their right outcomes are ``named error``
and ``agrees``.

``python -m tools.fault_review`` prints the counts per class and every defect;
``tests/unit/test_fault_review.py`` fails on any defect. The hypothesis tests in
``tests/unit/test_bad_input.py`` explore random shapes; this catalogue is fixed, so
its figures can be compared from run to run.

The modules: ``outcomes`` (the records and the classifier, ``run_case``),
``variants`` (the bad values per kind of argument), the catalogue's areas in
``attention_cases`` (kernels, heads, masks and ALiBi, the module, the KV
cache), ``model_cases`` (layers, the decoder, the tokenizer, the LM, viz),
``position_cases`` (learned and rotary positions), ``poetry_cases`` (chapter
15's helpers), ``artifact_cases`` (the artifact cache) and ``bert_cases``
(the BERT encoder's front door), ``review`` (``catalogue``,
``run_all`` and the damaged checkpoints) and ``cli`` (``main``).
"""

from tools.fault_review.checks import KINDS, Check, run_check
from tools.fault_review.cli import main
from tools.fault_review.outcomes import DEFECTS, Api, Outcome, run_case
from tools.fault_review.review import catalogue, checks, run_all

__all__ = [
    "DEFECTS",
    "KINDS",
    "Api",
    "Check",
    "Outcome",
    "catalogue",
    "checks",
    "main",
    "run_all",
    "run_case",
    "run_check",
]
