"""Heads masked or scaled in any model built from the book's attention modules.

A head is masked by zeroing its D columns of the input of its module's
``out_proj``: the head still computes, but nothing reads it, as chapters
11, 15 and 16 silence heads. This works for every
:class:`~mha_book.attention.mha.MultiHeadAttention` and
:class:`~mha_book.attention.latent.LatentAttention` in a model, in full and
cached decoding alike, so the same functions reach this chapter's models,
chapter 15's decoder and chapter 16's translator. Heads are named
``(module name in the model, head index)``, as :func:`attention_heads` lists
them.

Legend: B batch, T length, H heads of a module, D head dim.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence

import torch
from torch import nn

from mha_book.attention.latent import LatentAttention
from mha_book.attention.mha import MultiHeadAttention

__all__ = ["attention_heads", "head_gates", "masked"]

Head = tuple[str, int]  # (module name in the model, head index)
_ATTENTIONS = (MultiHeadAttention, LatentAttention)


def attention_heads(model: nn.Module) -> list[Head]:
    """Every head of every attention module of ``model``, as ``(name, head)``.

    Example:
        >>> from mha_book.models.decoder import CausalDecoder, DecoderConfig
        >>> model = CausalDecoder(DecoderConfig(10, 16, 2, 2, max_len=8))
        >>> heads = attention_heads(model)
        >>> len(heads), heads[:2]
        (4, [('blocks.0.self_attn', 0), ('blocks.0.self_attn', 1)])
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
