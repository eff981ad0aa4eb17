"""Heads scored and removed after training (:mod:`~mha_book.lm.heads.masking`
masks them).

Two importance scores: the rise of a loss when the head alone is masked, and
Michel et al. (2019)'s: the absolute gradient of the loss with respect to a
gate that multiplies the head's output, taken at gate 1 (one backward pass
for every head), each example with its own gate, the absolute values
averaged over the examples. Michel et al. also normalise the scores of each
layer; here they are not. Heads are removed from the least important on,
and the same removal in random orders is the yardstick; a study measures
each set of masked heads once.

Legend: B batch, T length, H heads of a module, D head dim.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import torch
from torch import nn

from mha_book._checks import check_positive_int
from mha_book.attention.mha import MultiHeadAttention  # noqa: F401 (examples)
from mha_book.lm.artifacts import cached
from mha_book.lm.heads.masking import (
    Head,
    _attention,
    _heads,
    attention_heads,
    masked,
)

__all__ = [
    "head_importance",
    "pruning_curve",
    "random_order",
    "prune_order",
    "pruning_study",
    "stored_study",
]


def head_importance(
    model: nn.Module,
    loss: Callable[[], float | torch.Tensor],
    heads: Sequence[Head] | None = None,
    *,
    method: str = "mask",
) -> dict[Head, float]:
    """How much ``loss`` (lower is better) needs each head.

    ``method="mask"``: the loss with the head alone masked minus the loss
    with every head (one call of ``loss`` per head, and one more).
    ``method="gradient"``: Michel et al.'s score: each example gets its own
    gate on each head, and the score is the mean over examples of
    ``|d loss_example / d gate|`` at gate 1 (one backward pass); ``loss``
    must return the mean over the batch (first dim) as a tensor with a
    gradient.

    Example:
        >>> model = nn.ModuleDict({"attn": MultiHeadAttention(8, 2)})
        >>> x = torch.randn(4, 3, 8)
        >>> def loss():
        ...     return model["attn"](x, x, x)[0].pow(2).mean()
        >>> sorted(head_importance(model, loss, method="gradient"))
        [('attn', 0), ('attn', 1)]
    """
    heads = attention_heads(model) if heads is None else _heads(model, heads)
    if method == "mask":
        return _mask_scores(model, loss, heads, {})
    if method != "gradient":
        raise ValueError(f"method must be 'mask' or 'gradient', got {method!r}")
    calls: dict[str, list[torch.Tensor]] = {}
    with _example_gates(model, {name for name, _ in heads}, calls):
        value = loss()
    if not isinstance(value, torch.Tensor) or not value.requires_grad:
        raise TypeError(
            "loss must return a tensor with a gradient for method='gradient'"
        )
    gates = [g for name in calls for g in calls[name]]
    grads = iter(torch.autograd.grad(value, gates))
    per_module = {  # a module called twice: one gate, the sum of the two
        name: torch.stack([next(grads) for _ in gs]).sum(0)
        for name, gs in calls.items()
    }
    scores = {}
    for name, head in heads:
        grad = per_module[name]  # (B, H): d loss / d gate, loss a batch mean
        scores[(name, head)] = (grad[:, head].abs().mean() * grad.shape[0]).item()
    return scores


Measured = dict[frozenset[Head], float]  # masked heads -> the value measured


def _measured(
    model: nn.Module, measure: Callable, heads: Sequence[Head], values: Measured
) -> float:
    """``measure()`` with ``heads`` masked: looked up in ``values`` (keyed by the
    set of masked heads), or made and stored there."""
    key = frozenset(heads)
    if key not in values:
        with torch.no_grad(), masked(model, heads):
            values[key] = float(measure())
    return values[key]


def _mask_scores(
    model: nn.Module, loss: Callable, heads: Sequence[Head], values: Measured
) -> dict[Head, float]:
    """``method="mask"`` of :func:`head_importance`, through ``values``."""
    base = _measured(model, loss, [], values)
    return {head: _measured(model, loss, [head], values) - base for head in heads}


@contextlib.contextmanager
def _example_gates(
    model: nn.Module, names: set[str], calls: dict[str, list[torch.Tensor]]
) -> Iterator[None]:
    """Within the block, each call of the named modules multiplies head h of
    example b by a new gate ``(B, H)`` of ones, appended to ``calls[name]``."""
    hooks = []
    for name in sorted(names):
        module = _attention(model, name)
        H = module.num_heads

        def hook(mod, args, name=name, H=H):
            x = args[0]  # (B, T, H·D)
            gate = torch.ones(x.shape[0], H, dtype=x.dtype, requires_grad=True)
            calls.setdefault(name, []).append(gate)
            scale = gate.repeat_interleave(x.shape[-1] // H, dim=1)  # (B, H·D)
            return (x * scale[:, None],)  # (B, T, H·D)

        hooks.append(module.out_proj.register_forward_pre_hook(hook))
    try:
        yield
    finally:
        for handle in hooks:
            handle.remove()


def pruning_curve(
    model: nn.Module,
    measure: Callable[[], float],
    order: Sequence[Head],
    values: Measured | None = None,
    *,
    every: int = 1,
) -> list[tuple[float, float]]:
    """``measure()`` with the first k heads of ``order`` masked, for k = 0,
    ``every``, 2 · ``every``, ... and all of them: ``(share of the model's
    heads removed, value)`` pairs.

    ``values`` holds what ``measure`` gave before, keyed by the set of masked
    heads; the curve reads it and adds to it (curves in several orders share
    their first and last points, and any other set they mask alike).

    Example:
        >>> model = nn.ModuleDict({"attn": MultiHeadAttention(8, 2)})
        >>> x = torch.randn(1, 3, 8)
        >>> curve = pruning_curve(model, lambda: model["attn"](x, x, x)[0].abs().sum().item(),
        ...                       [("attn", 1), ("attn", 0)])
        >>> [share for share, _ in curve]
        [0.0, 0.5, 1.0]
    """
    order = _heads(model, order)
    step = check_positive_int(every, "every")
    total = len(attention_heads(model))
    values = {} if values is None else values
    counts = sorted({*range(0, len(order), step), len(order)})  # heads masked
    return [(k / total, _measured(model, measure, order[:k], values)) for k in counts]


def random_order(model: nn.Module, seed: int = 0) -> list[Head]:
    """Every head of ``model`` in a random order: the yardstick of an order
    by importance.

    Example:
        >>> model = nn.ModuleDict({"attn": MultiHeadAttention(8, 4)})
        >>> sorted(random_order(model)) == attention_heads(model)
        True
    """
    heads = attention_heads(model)
    random.Random(seed).shuffle(heads)
    return heads


def prune_order(importance: Mapping[Head, float]) -> list[Head]:
    """The heads of ``importance`` from the least important to the most: the
    order in which to remove them.

    Example:
        >>> prune_order({("a", 0): 0.5, ("a", 1): 0.1, ("b", 0): 0.3})
        [('a', 1), ('b', 0), ('a', 0)]
    """
    if not isinstance(importance, Mapping):
        raise TypeError(
            f"importance must map (name, head) to a score, got {type(importance).__name__}"
        )
    return sorted(importance, key=lambda head: importance[head])


def pruning_study(
    model: nn.Module,
    loss: Callable[[], float | torch.Tensor],
    measure: Callable[[], float],
    *,
    method: str = "mask",
    random_seeds: Sequence[int] = (0, 1, 2),
    every: int = 1,
) -> dict:
    """Score every head by ``loss`` (:func:`head_importance`), remove them from
    the least important on and record ``measure`` (:func:`pruning_curve`);
    and, as the yardstick, the same with the heads in random orders, one
    per seed of ``random_seeds``. Each set of masked heads is measured once
    (``measure`` must give the same value for the same heads), and when
    ``loss`` is ``measure`` the scores' measurements are reused by the curves.
    The curves measure after every ``every``-th head (:func:`pruning_curve`).

    Returns:
        dict: ``"importance"``, each head's score; ``"by_importance"``,
        the curve in that order; ``"random"``, one curve per seed. A curve
        is a list of ``(share removed, value)`` pairs.

    Example:
        >>> model = nn.ModuleDict({"attn": MultiHeadAttention(8, 2)})
        >>> x = torch.randn(2, 3, 8)
        >>> out = lambda: model["attn"](x, x, x)[0].abs().mean().item()
        >>> study = pruning_study(model, out, out, random_seeds=[0, 1])
        >>> len(study["by_importance"]), len(study["random"])
        (3, 2)
    """
    values: Measured = {}  # each set of masked heads measured once
    if method == "mask" and loss is measure:  # the scores are points of the curves
        importance = _mask_scores(model, measure, attention_heads(model), values)
    else:
        importance = head_importance(model, loss, method=method)
    return {
        "importance": importance,
        "by_importance": pruning_curve(
            model, measure, prune_order(importance), values, every=every
        ),
        "random": [
            pruning_curve(
                model, measure, random_order(model, seed), values, every=every
            )
            for seed in random_seeds
        ],
    }


def stored_study(
    name: str,
    key: object,
    compute: Callable[[], dict],
    code: Sequence[str],
    wait: bool = True,
) -> dict:
    """``compute()`` (a :func:`pruning_study`, or any dict of numbers, lists
    and tuples) once per build: stored in the artifact cache
    (:func:`~mha_book.lm.artifacts.cached`) under ``name`` and ``key``, which
    must hold everything the study reads (the model's weights, the data it is
    measured on); ``code`` names the modules that compute it. With
    ``wait=False``, a study another process is computing raises
    :class:`~mha_book.lm.artifacts.ArtifactBusy` at once
    (:func:`~mha_book.lm.artifacts.shared_out` shares studies out that way).

    Example:
        >>> stored_study("study", {"n": 1}, lambda: {"a": [(0.0, 1.0)]},
        ...              code=["mha_book.lm.heads.pruning"])
        {'a': [(0.0, 1.0)]}
    """

    def save(result: dict, path: Path) -> None:
        torch.save(result, path)

    def load(path: Path) -> dict:
        return torch.load(path, map_location="cpu", weights_only=True)

    result, _ = cached(
        name, key, compute, save=save, load=load, code=list(code), kind=dict, wait=wait
    )
    return result
