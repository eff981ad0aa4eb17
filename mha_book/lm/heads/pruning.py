"""Heads masked, scored and removed after training, in any model built from
the book's attention modules.

A head is masked by zeroing its D columns of the input of its module's
``out_proj``: the head still computes, but nothing reads it (the way of
chapters 11, 15 and 16). This works for every
:class:`~mha_book.attention.mha.MultiHeadAttention` and
:class:`~mha_book.attention.latent.LatentAttention` in a model, in full and
cached decoding alike, so the same functions prune this chapter's models,
chapter 15's decoder and chapter 16's translator.

Two importance scores: the rise of a loss when the head alone is masked, and
Michel et al. (2019)'s: the absolute gradient of the loss with respect to a
gate that multiplies the head's output, taken at gate 1 (one backward pass
for every head), each example with its own gate, the absolute values
averaged over the examples. Michel et al. also normalise the scores of each
layer; here they are not.

Legend: H heads of a module, D head dim.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable, Iterator, Mapping, Sequence

import torch
from torch import nn

from mha_book.attention.latent import LatentAttention
from mha_book.attention.mha import MultiHeadAttention

__all__ = [
    "attention_heads",
    "head_gates",
    "masked",
    "head_importance",
    "pruning_curve",
    "random_order",
    "prune_order",
]

Head = tuple[str, int]  # (module name in the model, head index)
_ATTENTIONS = (MultiHeadAttention, LatentAttention)


def attention_heads(model: nn.Module) -> list[Head]:
    """Every head of every attention module of ``model``, as ``(name, head)``.

    Example:
        >>> from mha_book.models.decoder import CausalDecoder, DecoderConfig
        >>> model = CausalDecoder(DecoderConfig(10, 16, 2, 2, max_len=8))
        >>> attention_heads(model)
        [('blocks.0.self_attn', 0), ('blocks.0.self_attn', 1), ('blocks.1.self_attn', 0), ('blocks.1.self_attn', 1)]
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    return [
        (name, h)
        for name, module in model.named_modules()
        if isinstance(module, _ATTENTIONS)
        for h in range(module.num_heads)
    ]


def _heads(model: nn.Module, heads: object) -> list[Head]:
    """``heads`` as ``(name, head)`` pairs of ``model``, or an error naming the bad one."""
    known = attention_heads(model)
    if isinstance(heads, (str, bytes)) or not isinstance(heads, (Sequence, Mapping)):
        raise TypeError(f"heads must be (name, head) pairs, got {heads!r:.80}")
    pairs = []
    for head in heads:
        pair = tuple(head) if isinstance(head, (tuple, list)) else None
        if pair not in known:
            example = known[0] if known else None
            raise ValueError(
                "heads must be (name, head) pairs of attention_heads(model), "
                f"e.g. {example}, got {head!r}"
            )
        pairs.append((str(pair[0]), int(pair[1])))  # type: ignore[index]
    return pairs


def _attention(model: nn.Module, name: str) -> MultiHeadAttention | LatentAttention:
    module = model.get_submodule(name)
    assert isinstance(module, _ATTENTIONS)  # _heads checked it
    return module


def _gate(value: float | torch.Tensor) -> torch.Tensor:
    """A gate as a 0-d float64 tensor (a Python float would round to float32)."""
    if isinstance(value, torch.Tensor):
        return value.double().reshape(())
    return torch.tensor(float(value), dtype=torch.float64)


@contextlib.contextmanager
def head_gates(
    model: nn.Module, gates: Mapping[Head, float | torch.Tensor]
) -> Iterator[None]:
    """Within the block, each head's output is multiplied by its gate (0:
    masked); gates may be tensors that require grad.

    Shape:
        - each gate: a number or a 0-d tensor

    Example:
        >>> mha = MultiHeadAttention(8, 2)
        >>> model = nn.ModuleDict({"attn": mha})
        >>> x = torch.randn(1, 3, 8)
        >>> with head_gates(model, {("attn", 0): 0.0, ("attn", 1): 0.0}):
        ...     out, _ = mha(x, x, x)
        >>> torch.allclose(out, mha.out_proj.bias.expand(1, 3, 8))
        True
    """
    names = dict.fromkeys(name for name, _ in _heads(model, gates))
    hooks = []
    for name in names:
        module = _attention(model, name)
        H = module.num_heads
        D = module.out_proj.in_features // H
        per_head = [_gate(gates.get((name, h), 1.0)) for h in range(H)]
        scale = torch.stack(per_head)  # (H,), float64 (cast to the input's dtype)
        scale = scale.repeat_interleave(D)  # (H·D,): head h is D columns

        def hook(mod, args, scale=scale):
            return (args[0] * scale.to(args[0]),)  # (B, T, H·D)

        hooks.append(module.out_proj.register_forward_pre_hook(hook))
    try:
        yield
    finally:
        for handle in hooks:
            handle.remove()


def masked(
    model: nn.Module, heads: Sequence[Head]
) -> contextlib.AbstractContextManager:
    """Within the block, ``heads`` add nothing (:func:`head_gates` at 0).

    Example:
        >>> model = nn.ModuleDict({"attn": MultiHeadAttention(8, 2)})
        >>> x = torch.randn(1, 3, 8)
        >>> with masked(model, [("attn", 1)]):
        ...     out, _ = model["attn"](x, x, x)
        >>> out.shape
        torch.Size([1, 3, 8])
    """
    return head_gates(model, dict.fromkeys(_heads(model, heads), 0.0))


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
        with torch.no_grad():
            base = float(loss())
            scores = {}
            for head in heads:
                with masked(model, [head]):
                    scores[head] = float(loss()) - base
        return scores
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
    model: nn.Module, measure: Callable[[], float], order: Sequence[Head]
) -> list[tuple[float, float]]:
    """``measure()`` with the first k heads of ``order`` masked, for k = 0 to
    all of them: ``(share of the model's heads removed, value)`` pairs.

    Example:
        >>> model = nn.ModuleDict({"attn": MultiHeadAttention(8, 2)})
        >>> x = torch.randn(1, 3, 8)
        >>> curve = pruning_curve(model, lambda: model["attn"](x, x, x)[0].abs().sum().item(),
        ...                       [("attn", 1), ("attn", 0)])
        >>> [share for share, _ in curve]
        [0.0, 0.5, 1.0]
    """
    order = _heads(model, order)
    total = len(attention_heads(model))
    with torch.no_grad():
        curve = [(0.0, float(measure()))]
        for k in range(1, len(order) + 1):
            with masked(model, order[:k]):
                curve.append((k / total, float(measure())))
    return curve


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
