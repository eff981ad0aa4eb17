"""The book's masks and biases as FlexAttention ``mask_mod`` and ``score_mod``.

Taught in chapter 17-inference. PyTorch's FlexAttention
(:mod:`torch.nn.attention.flex_attention`; Dong et al. 2024) takes attention
variants as two small functions of the indices instead of dense tensors:

- ``mask_mod(b, h, q_idx, kv_idx) -> bool``: may query ``q_idx`` attend key
  ``kv_idx``? True = may attend, the book's convention;
- ``score_mod(score, b, h, q_idx, kv_idx) -> score``: change a scaled score
  (ALiBi subtracts a distance).

From a ``mask_mod``, ``create_block_mask`` finds the blocks of the ``(T, S)``
grid that are entirely masked; a compiled kernel skips them. Compiling
(``torch.compile(flex_attention)``) takes about a minute on two CPU cores, so
the book calls the eager path, which computes the same result from the full
score matrix. PyTorch warns once that the eager path is unfused: this module
silences exactly that warning, as it is the point here.

Legend: B batch, H heads, T queries, S keys, D head dim. Queries and keys
are aligned at the start (``T == S`` for self-attention).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch
from torch.nn.attention.flex_attention import (
    create_block_mask,
    create_mask,
    flex_attention,
)

from mha_book._checks import (
    check_callable,
    check_positive_int,
    check_rank,
    check_tensor,
    fmt_shape,
)
from mha_book.attention.alibi import alibi_slopes
from mha_book.attention.scaled_dot_product import _check_qkv

__all__ = [
    "causal",
    "sliding_window",
    "padding",
    "document",
    "alibi",
    "flex_attend",
    "dense_mask",
    "block_sparsity",
]

MaskMod = Callable[..., torch.Tensor]
ScoreMod = Callable[..., torch.Tensor]


def causal(b, h, q_idx, kv_idx):
    """A ``mask_mod``: a query sees itself and the keys before it.

    Example:
        >>> from mha_book.attention.masks import causal_mask
        >>> torch.equal(dense_mask(causal, 3, 3), causal_mask(3, 3))
        True
    """
    return q_idx >= kv_idx


def sliding_window(window: int) -> MaskMod:
    """A ``mask_mod``: causal, and at most ``window - 1`` keys back.

    Example:
        >>> dense_mask(sliding_window(2), 4, 4).int()[3]  # query 3 sees keys 2 and 3
        tensor([0, 0, 1, 1], dtype=torch.int32)
    """
    window = check_positive_int(window, "window")

    def mask_mod(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx < window)

    return mask_mod


def padding(lengths: torch.Tensor) -> MaskMod:
    """A ``mask_mod``: sequence ``b`` may attend its first ``lengths[b]`` keys.

    Example:
        >>> m = dense_mask(padding(torch.tensor([2, 3])), 1, 3, B=2)
        >>> m.shape, m[:, 0, 0].int().tolist()
        (torch.Size([2, 1, 1, 3]), [[1, 1, 0], [1, 1, 1]])
    """
    lengths = check_tensor(lengths, "lengths")
    check_rank(lengths, "lengths", 1, "(B,)")

    def mask_mod(b, h, q_idx, kv_idx):
        return kv_idx < lengths[b]

    setattr(mask_mod, "sizes", {"B": len(lengths)})  # noqa: B010  per sequence
    return mask_mod


def document(doc_ids: torch.Tensor) -> MaskMod:
    """A ``mask_mod`` for packed sequences: causal, within one document only.

    ``doc_ids`` ``(S,)`` gives each position's document, as when several
    short texts are packed into one row to fill a batch.

    Example:
        >>> dense_mask(document(torch.tensor([0, 0, 1, 1])), 4, 4).int()[2]
        tensor([0, 0, 1, 0], dtype=torch.int32)
    """
    doc_ids = check_tensor(doc_ids, "doc_ids")
    check_rank(doc_ids, "doc_ids", 1, "(S,)")

    def mask_mod(b, h, q_idx, kv_idx):
        return (doc_ids[q_idx] == doc_ids[kv_idx]) & (q_idx >= kv_idx)

    setattr(mask_mod, "sizes", {"S": len(doc_ids)})  # noqa: B010  per key
    return mask_mod


def alibi(num_heads: int) -> ScoreMod:
    """A ``score_mod``: ALiBi's ``-slope_h · |q_idx - kv_idx|`` added to each score.

    Example:
        >>> score_mod = alibi(2)  # two heads: slopes 2 ** -4 and 2 ** -8
        >>> i, j = torch.tensor(3), torch.tensor(1)  # two keys apart
        >>> [score_mod(torch.tensor(0.0), 0, h, i, j).item() * 2**8 for h in (0, 1)]
        [-32.0, -2.0]
    """
    slopes = alibi_slopes(num_heads, dtype=torch.float64)  # (H,)

    def score_mod(score, b, h, q_idx, kv_idx):
        slope = slopes.to(score.dtype)[h]
        return score - slope * (q_idx - kv_idx).abs()

    setattr(score_mod, "sizes", {"H": int(slopes.numel())})  # noqa: B010  per head
    return score_mod


def flex_attend(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    mask_mod: MaskMod | None = None,
    score_mod: ScoreMod | None = None,
) -> torch.Tensor:
    """``flex_attention`` on the eager path, with a block mask made from ``mask_mod``.

    Shape:
        - q: ``(B, H, T, D)``; k, v: ``(B, H, S, D)``
        - output: ``(B, H, T, D)``

    Example:
        >>> q = torch.randn(1, 2, 8, 4, dtype=torch.float64)
        >>> out = flex_attend(q, q, q, mask_mod=causal)
        >>> ref = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
        >>> torch.allclose(out, ref)
        True
    """
    _check_flex_inputs(q, k, v)
    block_mask = None
    B, H, T, S = q.shape[0], q.shape[1], q.shape[2], k.shape[2]
    if mask_mod is not None:
        _probe("mask_mod", mask_mod, (B, H, T, S))
        block_mask = create_block_mask(mask_mod, B, H, T, S, device=str(q.device))
    if score_mod is not None:
        _probe("score_mod", score_mod, (B, H, T, S), q.dtype)
    # The eager path still runs through torch._dynamo, which guards on whether
    # q, k and v are one tensor. In torch 2.13, when that guard fails and
    # recompile logging is on (as under pytest), explaining the failure raises
    # TypeError. Self-attention often passes one tensor three times: copy it.
    if k is q:
        k = k.clone()
    if v is q or v is k:
        v = v.clone()
    with warnings.catch_warnings():  # the eager path is the point; see the docstring
        warnings.filterwarnings("ignore", "flex_attention called without torch.compile")
        out = flex_attention(q, k, v, score_mod=score_mod, block_mask=block_mask)
    assert isinstance(out, torch.Tensor)  # no return_lse
    return out


def _probe(name: str, mod: object, sizes: tuple[int, int, int, int], dtype=None):
    """Call ``mod`` once at the last batch row, head, query and key, where a
    table too short for the batch (``padding``), the keys (``document``) or
    the heads (``alibi``) runs out, and refuse by name what fails there or
    returns no tensor, before FlexAttention traces it. A mod made for other
    sizes (its ``sizes``: a longer table, more heads' slopes) is refused too."""
    check_callable(mod, name)
    made_for: dict = getattr(mod, "sizes", {})  # what padding, document, alibi take
    for dim, want in made_for.items():
        if sizes["BHTS".index(dim)] != want:
            raise ValueError(
                f"{name} was made for {dim} = {want}, got (B, H, T, S) = {sizes}"
            )
    index = [torch.tensor(n - 1) for n in sizes]  # b, h, q_idx, kv_idx
    args = index if dtype is None else [torch.tensor(0.0, dtype=dtype), *index]
    try:
        out = mod(*args)  # type: ignore[operator]
    except (IndexError, TypeError, RuntimeError, ValueError) as exc:
        raise ValueError(
            f"{name} must accept {'(score, ' if dtype is not None else '('}b, h, "
            f"q_idx, kv_idx) for (B, H, T, S) = {sizes}; at the last of each it "
            f"raised {type(exc).__name__}: {exc}"
        ) from None
    if not isinstance(out, torch.Tensor):
        raise TypeError(
            f"{name} must return a tensor (use & and | on the indices, not "
            f"'and' or 'if'), got {type(out).__name__}"
        )


def _check_flex_inputs(q: object, k: object, v: object) -> None:
    """The kernels' checks (:func:`~mha_book.attention.scaled_dot_product._check_qkv`),
    and what FlexAttention adds: exactly ``(B, H, T, D)``, the same B and H for
    q, k and v (no broadcasting), and no empty dim."""
    for name, x in (("q", q), ("k", k), ("v", v)):
        check_rank(check_tensor(x, name), name, 4, "(B, H, T, D)")
    _check_qkv(q, k, v, None, 0.0, None)
    assert isinstance(q, torch.Tensor) and isinstance(k, torch.Tensor)
    assert isinstance(v, torch.Tensor)
    for name, x in (("k", k), ("v", v)):
        if x.shape[:2] != q.shape[:2]:
            raise ValueError(
                f"{name} must have q's (B, H) = {fmt_shape(q.shape[:2])}, "
                f"got {fmt_shape(x.shape)}"
            )
    for name, x in (("q", q), ("k", k), ("v", v)):
        if x.numel() == 0:
            raise ValueError(f"{name} must not be empty, got {fmt_shape(x.shape)}")


def dense_mask(
    mask_mod: MaskMod, T: int, S: int, *, B: int = 1, H: int = 1
) -> torch.Tensor:
    """``mask_mod`` evaluated on every (query, key): ``(T, S)`` if B = H = 1, else
    ``(B, H, T, S)``; bool, True = may attend, to compare with the book's masks.

    Example:
        >>> dense_mask(causal, 2, 3).shape, dense_mask(causal, 2, 3, B=4, H=2).shape
        (torch.Size([2, 3]), torch.Size([4, 2, 2, 3]))
    """
    T, S = check_positive_int(T, "T"), check_positive_int(S, "S")
    B, H = check_positive_int(B, "B"), check_positive_int(H, "H")
    _probe("mask_mod", mask_mod, (B, H, T, S))
    mask = create_mask(mask_mod, B, H, T, S, device="cpu")  # (B, H, T, S)
    return mask[0, 0] if B == H == 1 else mask


def block_sparsity(
    mask_mod: MaskMod, T: int, S: int, *, block_size: int = 128
) -> float:
    """Share of the ``(T, S)`` grid's blocks that ``mask_mod`` masks entirely.

    A compiled FlexAttention kernel never loads or computes those blocks.
    The grid has ``ceil(T / P) * ceil(S / P)`` blocks; a last block cut short
    by ``T`` or ``S`` counts as masked when its cells inside the grid are.

    Counted from the dense mask, not from ``BlockMask.sparsity()``: PyTorch
    pads the grid to whole blocks, evaluates ``mask_mod`` on the padding and
    divides by a count that includes it (at T = S = 1 it reports -16,383 %).

    Example:
        >>> block_sparsity(causal, 512, 512, block_size=128)  # 6 of 16 blocks
        0.375
        >>> block_sparsity(causal, 10, 10, block_size=3)  # 6 of 16, 4 cut short
        0.375
        >>> block_sparsity(causal, 1, 1)
        0.0
    """
    mask = dense_mask(mask_mod, T, S)  # (T, S), checks the arguments
    P = check_positive_int(block_size, "block_size")
    nT, nS = -(-T // P), -(-S // P)  # blocks along each side, the last may be short
    padded = torch.zeros(nT * P, nS * P, dtype=torch.bool)
    padded[:T, :S] = mask  # the padding attends nothing
    attends = padded.view(nT, P, nS, P).any(dim=3).any(dim=1)  # (nT, nS)
    return 1.0 - attends.sum().item() / (nT * nS)
