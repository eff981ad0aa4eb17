"""The catalogue, area by area, and the run over it and over damaged checkpoints."""

from __future__ import annotations

import tempfile
from pathlib import Path

import torch

import mha_book
from mha_book.lm import checkpoint
from tools.fault_review.artifact_cases import artifact_apis
from tools.fault_review.attention_cases import (
    cache_apis,
    head_apis,
    kernel_apis,
    mask_apis,
    module_apis,
)
from tools.fault_review.bench_cases import bench_apis
from tools.fault_review.bert_cases import bert_apis
from tools.fault_review.checks import Check, run_check
from tools.fault_review.diagram_cases import diagram_apis
from tools.fault_review.extrapolation_cases import extrapolation_apis
from tools.fault_review.inference_cases import inference_apis
from tools.fault_review.model_cases import (
    decoder_apis,
    layer_apis,
    lm_apis,
    small_decoder,
    tokenizer_apis,
    viz_apis,
)
from tools.fault_review.oracle_cases import oracle_checks
from tools.fault_review.outcomes import Api, Outcome, run_case
from tools.fault_review.pair_cases import pair_checks
from tools.fault_review.parts_cases import measurement_apis, parts_apis
from tools.fault_review.poetry_cases import poetry_apis
from tools.fault_review.position_cases import position_apis
from tools.fault_review.seq2seq_cases import seq2seq_apis
from tools.fault_review.shared_cases import shared_checks
from tools.fault_review.variants import variants


def catalogue() -> list[Api]:
    """Every public entry point with a valid baseline call.

    The areas are built in this order, so each module draws the same weights
    from torch's generator as it always has.
    """
    cases = [*kernel_apis(), *head_apis(), *mask_apis(), *module_apis()]
    cases += [*cache_apis(), *layer_apis()]
    decoder = small_decoder()  # shared by the model and LM cases
    tokenizer = mha_book.CharTokenizer.from_text("abcdefghijk")
    return [
        *cases,
        *decoder_apis(decoder),
        *tokenizer_apis(tokenizer),
        *lm_apis(decoder, tokenizer),
        *viz_apis(),
        *position_apis(),
        # areas added later: after the others, so theirs draw the same weights
        *poetry_apis(decoder),
        *artifact_apis(),
        *bert_apis(),
        *extrapolation_apis(),
        *parts_apis(),
        *measurement_apis(),
        *diagram_apis(),
        *bench_apis(),
        *seq2seq_apis(),
        *inference_apis(),
    ]


def run_all(flips: int = 64) -> list[Outcome]:
    outcomes = []
    for api in catalogue():
        for arg, value in api.baseline().items():
            for variant, bad in variants(value, api, arg):
                outcomes.append(run_case(api, arg, variant, bad))
    with tempfile.TemporaryDirectory(prefix="mha_book_faults_") as folder:
        outcomes.extend(_checkpoint_faults(Path(folder), flips))
    outcomes.extend(run_check(check) for check in checks())
    return outcomes


def checks() -> list[Check]:
    """The whole-call cases: pairs that must agree, objects shared or reused,
    results against an independent computation (``tools.fault_review.checks``)."""
    return [*pair_checks(), *shared_checks(), *oracle_checks()]


def _checkpoint_path(folder: Path) -> Path:
    """A valid checkpoint in ``folder``."""
    tokenizer = mha_book.CharTokenizer.from_text("abcdefghijk")
    return checkpoint.save_checkpoint(folder / "model.pt", small_decoder(), tokenizer)


def _loader(file_name: str) -> Api:
    """load_checkpoint as an entry point whose errors must name ``file_name``."""
    names = {"path": (file_name,)}
    return Api("load_checkpoint", checkpoint.load_checkpoint, lambda: {}, names)


def _checkpoint_faults(folder: Path, flips: int = 64) -> list[Outcome]:
    """Damaged checkpoint files: each must fail with the file's name.

    A flipped byte may also land where it changes nothing (zip padding, say):
    then the load must give the saved weights back, bit for bit.
    """
    good = _checkpoint_path(folder)
    data = good.read_bytes()
    damage = {
        "truncated": data[: len(data) // 2],
        "empty": b"",
        "not a checkpoint": b"hello",
    }
    step = max(1, len(data) // flips) if flips else 1  # 0: every byte
    for pos in range(0, len(data), step):
        flipped = data[:pos] + bytes([data[pos] ^ 1]) + data[pos + 1 :]
        damage[f"byte {pos} flipped"] = flipped
    saved = checkpoint.load_checkpoint(good)[0].state_dict()
    outcomes = []
    for variant, content in damage.items():
        path = good.with_name(f"{variant.replace(' ', '-')}.pt")
        path.write_bytes(content)
        outcome = run_case(_loader(path.name), "path", variant, path)
        if outcome.kind == "result":
            loaded = checkpoint.load_checkpoint(path)[0].state_dict()
            if not all(torch.equal(loaded[k], w) for k, w in saved.items()):
                outcome.kind = "silently changed weights"
        outcomes.append(outcome)
    missing = good.with_name("missing.pt")
    outcomes.append(run_case(_loader(missing.name), "path", "missing file", missing))
    return outcomes
