"""The tiled kernel is as accurate as plain attention, by flash-attention's own rule.

flash-attention's tests (Dao-AILab/flash-attention, tests/test_flash_attn.py,
``test_flash_attn_causal``; hopper/test_flash_attn.py, ``test_flash_attn_output``)
compute a reference in higher precision, run PyTorch's plain attention at the
test's own precision, and require the kernel's largest error in the output and
in each gradient to stay within 2x that of plain attention, plus the rounding
error of any arithmetic on the reference at the test's precision
(``2 * |ref + 0.3 - 0.3 - ref|``). Here the test's precision is float32 and the
reference is float64.

In float32 the kernel and plain attention make errors of the same size, so
the ratio of their largest errors is a noisy number around 1. Plain attention's
error is therefore taken as the larger one of its two operation orders (the
scale applied to the queries, or to the keys as flash-attention's
``reorder_ops`` does), over flash-attention's batch of 4 sequences of 6 heads.
"""

import math
from functools import partial

import pytest
import torch

from mha_book.attention.flash import flash_attention
from mha_book.attention.masks import causal_mask

B, H = 4, 6  # flash-attention's batch size and number of heads
F64 = torch.float64


def plain_attention(q, k, v, mask=None, scale_keys=False):
    """softmax(q k^T / sqrt(D)) v in the inputs' dtype; rows with no key give 0."""
    scale = 1 / math.sqrt(q.shape[-1])
    if scale_keys:  # flash-attention's reorder_ops
        s = q @ (k * scale).transpose(-2, -1)  # (B, H, T, S)
    else:
        s = (q * scale) @ k.transpose(-2, -1)  # (B, H, T, S)
    if mask is None:
        return torch.softmax(s, dim=-1) @ v  # (B, H, T, D)
    empty = ~mask.any(dim=-1, keepdim=True)  # (..., T, 1): rows with no key
    s = s.masked_fill(~mask, float("-inf")).masked_fill(empty, 0.0)
    return torch.softmax(s, dim=-1).masked_fill(empty, 0.0) @ v  # (B, H, T, D)


def out_and_grads(fn, q, k, v, grad, dtype=torch.float32):
    """The output of ``fn(q, k, v)`` in ``dtype`` and its gradients (dq, dk, dv)."""
    leaves = [x.detach().to(dtype).requires_grad_() for x in (q, k, v)]
    out = fn(*leaves)
    return (out, *torch.autograd.grad(out, leaves, grad.to(dtype)))


def make_mask(kind, T, S):
    """None, the causal mask, or a random bool mask (B, 1, T, S) with an empty row."""
    if kind == "none":
        return None
    if kind == "causal":
        return causal_mask(T, S)  # (T, S), aligned at the end as in flash-attention
    mask = torch.rand(B, 1, T, S, generator=torch.Generator().manual_seed(1)) < 0.5
    if T >= 3:
        mask[..., T // 2, :] = False  # a query that sees no key
    return mask  # (B, 1, T, S)


def max_errors(T, S, D, mask_kind, block_size):
    """Largest errors (out, dq, dk, dv) of the kernel and of plain attention, and slack."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, n, D) for n in (T, S, S))  # float32
    grad = torch.randn(B, H, T, D)
    mask = make_mask(mask_kind, T, S)
    tiled = partial(flash_attention, mask=mask, block_size=block_size)
    ref = out_and_grads(partial(plain_attention, mask=mask), q, k, v, grad, F64)
    ours = out_and_grads(tiled, q, k, v, grad)
    plain = [
        out_and_grads(
            partial(plain_attention, mask=mask, scale_keys=order), q, k, v, grad
        )
        for order in (False, True)
    ]

    def err(x, r):
        return (x.double() - r).abs().max().item()

    kernel = [err(x, r) for x, r in zip(ours, ref)]
    torch_err = [max(err(a, r), err(b, r)) for a, b, r in zip(*plain, ref)]
    slack = [2 * err(r.float() + 0.3 - 0.3, r.float().double()) for r in ref]
    return kernel, torch_err, slack


SEQLENS = [(1, 1), (1, 3), (3, 1), (113, 203), (128, 217), (108, 256), (256, 512)]
HEAD_DIMS = [8, 32, 59, 64]
BLOCKS = [128, (64, 48), (32, 64)]  # the default, uneven tiles, many tiles


def _cases():
    """Every (T, S) with every mask; head dims and block sizes taken in turn."""
    cases = []
    for i, (T, S) in enumerate(SEQLENS):
        for j, kind in enumerate(["none", "causal", "random"]):
            n = 3 * i + j
            cases.append((T, S, HEAD_DIMS[n % 4], kind, BLOCKS[n % 3]))
    return cases


@pytest.mark.parametrize("T, S, D, mask_kind, block_size", _cases())
def test_errors_within_twice_plain_attention(T, S, D, mask_kind, block_size):
    kernel, plain, slack = max_errors(T, S, D, mask_kind, block_size)
    for name, e, e_pt, tol in zip(["out", "dq", "dk", "dv"], kernel, plain, slack):
        assert e <= 2 * e_pt + tol, (name, e, e_pt, tol)


@pytest.mark.parametrize("D", [8, 32, 59, 64])
def test_one_key_gives_q_and_k_exactly_no_gradient(D):
    # With a single key the softmax is 1 whatever the score: the exact
    # gradients of q and k are 0, and so are PyTorch's.
    torch.manual_seed(D)
    q, k, v = (torch.randn(B, H, 1, D) for _ in range(3))
    grad = torch.randn(B, H, 1, D)
    _, dq, dk, dv = out_and_grads(flash_attention, q, k, v, grad)
    _, dq_pt, dk_pt, dv_pt = out_and_grads(plain_attention, q, k, v, grad)
    assert torch.all(dq_pt == 0) and torch.all(dk_pt == 0)
    assert torch.all(dq == 0) and torch.all(dk == 0)
    assert torch.equal(dv, grad) and torch.equal(dv_pt, grad)  # dV = P^T dO, P = 1


def test_rows_that_see_one_key_pass_no_gradient_to_q():
    # Causal with T > S: query T - S sees only key 0, earlier queries none.
    torch.manual_seed(0)
    T, S, D = 9, 4, 16
    q, k, v = torch.randn(B, H, T, D), torch.randn(B, H, S, D), torch.randn(B, H, S, D)
    grad = torch.randn(B, H, T, D)
    tiled = partial(flash_attention, mask=causal_mask(T, S), block_size=2)
    _, dq, _, _ = out_and_grads(tiled, q, k, v, grad)
    assert torch.all(dq[..., : T - S + 1, :] == 0)
    assert torch.all(dq[..., T - S + 1 :, :] != 0)
