"""Conversion to and from :class:`torch.nn.MultiheadAttention`, weights copied exactly.

Taught in chapter 05-verification (equivalence to 1e-12 in float64) and
chapter 07-troubleshooting (comparing masks). ``MultiHeadAttention.from_torch``
and ``MultiHeadAttention.to_torch`` call these functions.

PyTorch packs the three input projections into one ``in_proj_weight``
``(3E, E)`` when ``kdim == vdim == E``, and keeps ``q/k/v_proj_weight``
otherwise; this package always has three ``nn.Linear`` layers.
"""

from __future__ import annotations

import torch
from torch import nn

from mha_book.attention.mha import MultiHeadAttention

__all__ = ["from_torch", "to_torch"]


def _constructor_args(src, bias: bool) -> tuple[tuple, dict]:
    """The arguments both classes take, read off either: they share the names."""
    ref = src.out_proj.weight
    kwargs = {
        "dropout": src.dropout,
        "bias": bias,
        "kdim": src.kdim,
        "vdim": src.vdim,
        "batch_first": src.batch_first,
        "device": ref.device,
        "dtype": ref.dtype,
    }
    return (src.embed_dim, src.num_heads), kwargs


def from_torch(module: nn.MultiheadAttention) -> MultiHeadAttention:
    """Copy an ``nn.MultiheadAttention``'s weights exactly.

    The copy has the same dtype, device and mode. Handles the packed
    ``in_proj_weight`` and the separate ``q/k/v_proj_weight`` (when ``kdim``
    or ``vdim`` differ from E), with or without bias, either ``batch_first``.

    Raises:
        TypeError: If ``module`` is not an ``nn.MultiheadAttention``.
        ValueError: If it uses ``add_bias_kv`` or ``add_zero_attn``, which
            :class:`MultiHeadAttention` does not implement.

    Example:
        >>> theirs = nn.MultiheadAttention(64, 4, kdim=32, vdim=16, batch_first=True)
        >>> ours = from_torch(theirs)
        >>> ours.k_proj.weight.shape, ours.v_proj.weight.shape
        (torch.Size([64, 32]), torch.Size([64, 16]))
    """
    if not isinstance(module, nn.MultiheadAttention):
        raise TypeError(
            f"module must be a torch.nn.MultiheadAttention, got {type(module).__name__}"
        )
    if module.bias_k is not None or module.bias_v is not None:
        raise ValueError(
            "module must have add_bias_kv=False: "
            "MultiHeadAttention has no bias_k/bias_v"
        )
    if module.add_zero_attn:
        raise ValueError(
            "module must have add_zero_attn=False: "
            "MultiHeadAttention does not add a zero key"
        )
    bias = module.in_proj_bias is not None
    if bias != (module.out_proj.bias is not None):
        raise ValueError(
            "module must have biases on both in_proj and out_proj, or on neither"
        )
    args, kwargs = _constructor_args(module, bias)
    ours = MultiHeadAttention(*args, **kwargs)
    if module._qkv_same_embed_dim:
        weights = module.in_proj_weight.chunk(3)  # 3 x (E, E)
    else:
        weights = (module.q_proj_weight, module.k_proj_weight, module.v_proj_weight)
    biases = module.in_proj_bias.chunk(3) if bias else (None, None, None)  # 3 x (E,)
    with torch.no_grad():
        for proj, w, b in zip((ours.q_proj, ours.k_proj, ours.v_proj), weights, biases):
            proj.weight.copy_(w)
            if b is not None:
                proj.bias.copy_(b)
        ours.out_proj.weight.copy_(module.out_proj.weight)
        if bias:
            ours.out_proj.bias.copy_(module.out_proj.bias)
    return ours.train(module.training)


def to_torch(mha: MultiHeadAttention) -> nn.MultiheadAttention:
    """An ``nn.MultiheadAttention`` with exactly the weights of ``mha``.

    The copy has the same dtype, device and mode.

    Raises:
        ValueError: If ``num_kv_heads != num_heads``: ``nn.MultiheadAttention``
            has one key/value head per query head; or if ``mha`` has ``rope``,
            which ``nn.MultiheadAttention`` cannot apply.

    Example:
        >>> theirs = to_torch(MultiHeadAttention(64, 4))
        >>> theirs.in_proj_weight.shape
        torch.Size([192, 64])
    """
    if mha.num_kv_heads != mha.num_heads:
        raise ValueError(
            "to_torch needs num_kv_heads == num_heads "
            "(nn.MultiheadAttention has no shared "
            f"key/value heads), got num_heads = {mha.num_heads} and "
            f"num_kv_heads = {mha.num_kv_heads}"
        )
    if mha.rope is not None:
        raise ValueError(
            "to_torch needs rope=None (nn.MultiheadAttention has no rotary "
            f"positions: its outputs would differ), got rope={mha.rope}"
        )
    bias = mha.out_proj.bias is not None
    args, kwargs = _constructor_args(mha, bias)
    theirs = nn.MultiheadAttention(*args, **kwargs)
    projs = (mha.q_proj, mha.k_proj, mha.v_proj)
    with torch.no_grad():
        if theirs._qkv_same_embed_dim:
            theirs.in_proj_weight.copy_(torch.cat([p.weight for p in projs]))  # (3E, E)
        else:
            theirs.q_proj_weight.copy_(mha.q_proj.weight)
            theirs.k_proj_weight.copy_(mha.k_proj.weight)
            theirs.v_proj_weight.copy_(mha.v_proj.weight)
        theirs.out_proj.weight.copy_(mha.out_proj.weight)
        if bias:
            theirs.in_proj_bias.copy_(torch.cat([p.bias for p in projs]))  # (3E,)
            theirs.out_proj.bias.copy_(mha.out_proj.bias)
    return theirs.train(mha.training)
