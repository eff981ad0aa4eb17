"""Rotary position embeddings (RoPE): positions as rotations of queries and keys.

Used by :class:`~mha_book.attention.mha.MultiHeadAttention` (``rope=``). RoPE rotates
each pair of features of a query or key by ``position · θ_i``; the score of
query ``m`` and key ``n`` then depends on ``m - n`` only, and norms are kept.
Pairs are ``(i, i + R/2)``, Hugging Face's ``rotate_half`` convention
(``transformers.models.llama.modeling_llama.apply_rotary_pos_emb``), not the
paper's interleaved ``(2i, 2i + 1)``. With ``rotary_dim`` R below the head dim
D only the first R features of each head rotate (partial rotary, GPT-NeoX, Phi).

Legend: B batch, H heads, Hkv key/value heads, T sequence length, D head dim,
R rotary dim (even, ``R <= D``).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

from mha_book._checks import check_positive_int, check_rank, check_tensor, fmt_shape

_INTEGER_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)

__all__ = [
    "RotaryEmbedding",
    "apply_rotary",
    "rotary_cos_sin",
    "rotary_frequencies",
    "rotate_half",
]


def _check_base(base: object) -> float:
    """``base`` must be a finite real number > 1; return it as a float."""
    if isinstance(base, bool) or not isinstance(base, numbers.Real):
        raise TypeError(f"base must be a float > 1, got {type(base).__name__}")
    if not (math.isfinite(base) and float(base) > 1):
        raise ValueError(f"base must be a finite float > 1, got {base}")
    return float(base)


def _rotary_dim(rotary_dim: object, head_dim: int, head_dim_name: str) -> int:
    """R: ``rotary_dim`` (even, ``<= head_dim``), or all of an even ``head_dim``."""
    if rotary_dim is None:
        if head_dim % 2:
            raise ValueError(
                f"{head_dim_name} must be even to rotate all of it (rotary_dim=None), "
                f"got {head_dim}; or pass an even rotary_dim < {head_dim}"
            )
        return head_dim
    R = check_positive_int(rotary_dim, "rotary_dim")
    if R % 2 or R > head_dim:
        raise ValueError(
            f"rotary_dim must be even and at most the head dim D = {head_dim}, got {R}"
        )
    return R


def _check_floats(x: object, name: str) -> torch.Tensor:
    """``x`` must be a floating-point tensor ``(..., T, D)``; return it."""
    x = check_tensor(x, name)
    check_rank(x, name, 2, "(..., T, D)", at_least=True)
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    return x


def rotary_frequencies(
    rotary_dim: int, base: float = 10000.0, *, device=None
) -> torch.Tensor:
    r"""The angle per position of each rotated pair: :math:`\theta_i = base^{-2i/R}`.

    In float64 (Hugging Face uses float32), so far positions keep exact angles.

    Args:
        rotary_dim: Rotated features R per head; even.
        base: Base of the geometric progression; > 1, so that frequencies fall.
        device: Device of the result.

    Shape:
        - output: ``(R/2,)``, from 1 down to ``base^{-(R-2)/R}``

    Example:
        >>> theta = rotary_frequencies(8, base=10000.0)  # 1, 0.1, 0.01, 0.001
        >>> theta.shape, theta.dtype
        (torch.Size([4]), torch.float64)
    """
    R, base = check_positive_int(rotary_dim, "rotary_dim"), _check_base(base)
    if R % 2:
        raise ValueError(f"rotary_dim must be even, got {R}")
    exponents = torch.arange(0, R, 2, dtype=torch.float64, device=device) / R  # (R/2,)
    return base**-exponents  # (R/2,)


def rotary_cos_sin(
    positions: torch.Tensor,
    rotary_dim: int,
    base: float = 10000.0,
    *,
    dtype: torch.dtype = torch.float32,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The cosine and sine tables of the rotation angles ``position · θ_i``.

    Laid out as Hugging Face's ``LlamaRotaryEmbedding``: the R/2 angles twice,
    ``cat([angles, angles])``, so that column ``i`` and ``i + R/2`` share one.

    Args:
        positions: Absolute positions of the tokens, an integer tensor.
        rotary_dim: Rotated features R per head; even.
        base: See :func:`rotary_frequencies`.
        dtype: Dtype of the tables (they are computed in float64).

    Shape:
        - positions: ``(T,)``
        - output: ``(cos, sin)``, each ``(T, R)``, on the device of ``positions``

    Example:
        >>> cos, sin = rotary_cos_sin(torch.arange(5), 8)
        >>> cos.shape, sin.shape
        (torch.Size([5, 8]), torch.Size([5, 8]))
    """
    check_tensor(positions, "positions")
    check_rank(positions, "positions", 1, "(T,)")
    if positions.dtype not in _INTEGER_DTYPES:
        raise TypeError(f"positions must be an integer tensor, got {positions.dtype}")
    freqs = rotary_frequencies(rotary_dim, base, device=positions.device)  # (R/2,)
    angles = positions.to(torch.float64)[:, None] * freqs  # (T, R/2)
    angles = torch.cat([angles, angles], dim=-1)  # (T, R): pair (i, i + R/2) shares one
    return angles.cos().to(dtype), angles.sin().to(dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """Map each pair ``(x_i, x_{i+R/2})`` to ``(-x_{i+R/2}, x_i)``: a quarter turn.

    As ``rotate_half`` in Hugging Face transformers; with it a rotation by
    angle ``a`` is ``x · cos(a) + rotate_half(x) · sin(a)``.

    Shape:
        - x: ``(..., R)`` with R even
        - output: ``(..., R)``

    Example:
        >>> rotate_half(torch.tensor([1.0, 2.0, 3.0, 4.0]))
        tensor([-3., -4.,  1.,  2.])
    """
    check_tensor(x, "x")
    check_rank(x, "x", 1, "(..., R)", at_least=True)
    if not x.is_floating_point():
        raise TypeError(f"x must be a floating-point tensor, got {x.dtype}")
    if x.shape[-1] % 2:
        raise ValueError(f"x's last dim must be even, got {fmt_shape(x.shape)}")
    x1, x2 = x.chunk(2, dim=-1)  # (..., R/2) each
    return torch.cat([-x2, x1], dim=-1)  # (..., R)


def apply_rotary(
    x: torch.Tensor,
    positions: torch.Tensor,
    *,
    base: float = 10000.0,
    rotary_dim: int | None = None,
) -> torch.Tensor:
    """Rotate queries or keys to their absolute positions.

    The first R features of each head rotate, pairs ``(i, i + R/2)`` by
    ``position · θ_i``; features R to D pass unchanged (partial rotary).

    Args:
        x: Per-head queries or keys, floating point.
        positions: Absolute position of each of the T tokens (integers).
        base: See :func:`rotary_frequencies`.
        rotary_dim: Rotated features R; None (the default) rotates all D.

    Shape:
        - x: ``(..., T, D)``, e.g. ``(B, H, T, D)``
        - positions: ``(T,)``
        - output: ``(..., T, D)``

    Example:
        >>> q = torch.randn(2, 4, 6, 16)  # (B, H, T, D)
        >>> q_rot = apply_rotary(q, torch.arange(6), rotary_dim=8)
        >>> q_rot.shape, torch.equal(q_rot[..., 8:], q[..., 8:])
        (torch.Size([2, 4, 6, 16]), True)
    """
    T, D = _check_floats(x, "x").shape[-2:]
    R = _rotary_dim(rotary_dim, D, "x's head dim D")
    check_tensor(positions, "positions")
    if positions.shape != (T,):
        raise ValueError(
            f"positions must have shape (T,) = ({T}) (T from x), "
            f"got {fmt_shape(positions.shape)}"
        )
    if positions.device != x.device:
        raise ValueError(f"positions must be on {x.device}, got {positions.device}")
    cos, sin = rotary_cos_sin(positions, R, base, dtype=x.dtype)  # (T, R) each
    x_rot, x_pass = x[..., :R], x[..., R:]  # (..., T, R), (..., T, D - R)
    x_rot = x_rot * cos + rotate_half(x_rot) * sin  # (..., T, R)
    return x_rot if R == D else torch.cat([x_rot, x_pass], dim=-1)  # (..., T, D)


# A frozen dataclass, not an nn.Module with cos/sin buffers: RoPE has no weights
# and no state, so the module's state_dict stays that of plain attention, and the
# tables follow q's device and dtype and have no maximum length to outgrow. Like
# Hugging Face, it recomputes cos/sin per call: T·R values, small next to T·S scores.
@dataclass(frozen=True)
class RotaryEmbedding:
    """RoPE settings for one attention module; calling it rotates q and k.

    Args:
        head_dim: Head dim D of the queries and keys it rotates.
        base: See :func:`rotary_frequencies`; 10000 in the paper and Llama 2.
        rotary_dim: Rotated features R per head, even and ``<= head_dim``;
            None (the default) rotates all of them.

    Shape (of a call ``rope(q, k, offset=past)``):
        - q: ``(B, H, T, D)``, rotated at positions ``past .. past + T - 1``
        - k: ``(B, Hkv, S, D)``, rotated at positions ``past .. past + S - 1``
        - output: ``(q, k)`` with the same shapes

    Example:
        >>> rope = RotaryEmbedding(16, rotary_dim=8)
        >>> q, k = torch.randn(2, 4, 3, 16), torch.randn(2, 2, 3, 16)
        >>> q_rot, k_rot = rope(q, k, offset=5)  # tokens 5, 6, 7
        >>> q_rot.shape, k_rot.shape
        (torch.Size([2, 4, 3, 16]), torch.Size([2, 2, 3, 16]))
    """

    head_dim: int
    base: float = 10000.0
    rotary_dim: int | None = None

    def __post_init__(self) -> None:
        D = check_positive_int(self.head_dim, "head_dim")
        R = _rotary_dim(self.rotary_dim, D, "head_dim")
        object.__setattr__(self, "head_dim", D)  # frozen: set once, checked
        object.__setattr__(self, "base", _check_base(self.base))
        object.__setattr__(self, "rotary_dim", R)

    def __call__(
        self, q: torch.Tensor, k: torch.Tensor, *, offset: int = 0
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate queries and keys that start at absolute position ``offset``."""
        offset = check_positive_int(offset, "offset", allow_zero=True)
        rotated = []
        for name, x in (("q", q), ("k", k)):
            if _check_floats(x, name).shape[-1] != self.head_dim:
                raise ValueError(
                    f"{name} must have head dim D = {self.head_dim} (the "
                    f"RotaryEmbedding's head_dim), got {fmt_shape(x.shape)}"
                )
            T = x.shape[-2]
            positions = torch.arange(offset, offset + T, device=x.device)  # (T,)
            rotated.append(
                apply_rotary(x, positions, base=self.base, rotary_dim=self.rotary_dim)
            )  # (..., T, D)
        q, k = rotated
        return q, k
