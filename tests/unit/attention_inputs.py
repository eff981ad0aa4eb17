"""Inputs the attention tests share: random query, key and value tensors,
random boolean masks (True = may attend) and a randomly initialised
``torch.nn.MultiheadAttention`` to compare against. Float64 by default, so
agreement can be asked to 1e-12."""

import torch
from torch import nn

F64 = torch.float64


def random_qkv(
    B=2, H=3, T=4, S=5, D=6, Dv=7, dtype=F64, requires_grad=False, seed=0
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q (B, H, T, D), k (B, H, S, D), v (B, H, S, Dv), drawn from one seeded generator.

    Each test file fixes its own shapes with ``functools.partial``.
    """
    g = torch.Generator().manual_seed(seed)

    def make(*shape):
        return torch.randn(*shape, generator=g, dtype=dtype).requires_grad_(
            requires_grad
        )

    return make(B, H, T, D), make(B, H, S, D), make(B, H, S, Dv)


def random_mask(shape, keep=0.6, seed=0) -> torch.Tensor:
    """A boolean mask where each entry may attend with probability ``keep``."""
    g = torch.Generator().manual_seed(seed)
    return torch.rand(shape, generator=g) < keep


def torch_mha(
    E, H, *, kdim=None, vdim=None, bias=True, batch_first=True, dtype=F64, seed=0
) -> nn.MultiheadAttention:
    """PyTorch's module with every parameter drawn from N(0, 0.5²), in eval mode."""
    torch.manual_seed(seed)
    m = nn.MultiheadAttention(
        E, H, bias=bias, kdim=kdim, vdim=vdim, batch_first=batch_first, dtype=dtype
    )
    with torch.no_grad():
        for p in m.parameters():  # random everything, biases included
            p.normal_(0, 0.5)
    return m.eval()
