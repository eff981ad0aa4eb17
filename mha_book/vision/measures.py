"""Where a Vision Transformer's heads look, measured on its attention weights.

- :func:`mean_attention_distance`: how far each head looks, in pixels, the
  distance from a query patch to each patch weighted by its attention
  (Dosovitskiy et al., 2021, Fig. 7); :func:`uniform_distance` is the
  yardstick of a head that looks everywhere alike.
- :func:`head_offsets`: the mean step ``(dx, dy)`` from a query patch to what
  it attends, and the share of attention on the head's favourite step, as a
  convolution's filter would put all of it on one (Cordonnier et al., 2020).
- :func:`position_similarity`: the cosine similarity of every learned
  position with every other, and :func:`distance_correlation`: how well
  it follows the distance on the grid of patches.
- :func:`attention_rollout`: the attention from the [CLS] token to the
  patches, followed through every layer with its residual path (Abnar and
  Zuidema, 2020).
- :func:`head_ablation`: the test accuracy with each head silenced
  (:func:`mha_book.lm.heads.masking.masked`).

The weights are a layer's ``(B, H, T, T)``, token 0 the [CLS] token and
tokens 1..P the patches in the order of
:func:`~mha_book.vision.data.to_patches`; distances and offsets are between
patch centres (:func:`~mha_book.vision.data.patch_centers`), in pixels, and
exclude the [CLS] token (a patch's attention is renormalised over the patches).

Legend: B images, H heads, L layers, P patches, T = P + 1 tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from mha_book._checks import check_rank, check_tensor, fmt_shape
from mha_book.lm.heads.masking import masked
from mha_book.vision.data import Digits, patch_centers
from mha_book.vision.vit import VisionTransformer

__all__ = [
    "attention_weights",
    "mean_attention_distance",
    "uniform_distance",
    "Offsets",
    "head_offsets",
    "position_similarity",
    "distance_correlation",
    "attention_rollout",
    "head_ablation",
]


@torch.no_grad()
def attention_weights(model: VisionTransformer, images: torch.Tensor) -> torch.Tensor:
    """Every layer's attention weights on ``images``, in eval mode.

    Shape:
        - images: ``(B, 8, 8)``
        - output: ``(L, B, H, T, T)``

    Example:
        >>> from mha_book.vision.vit import ViTConfig
        >>> attention_weights(VisionTransformer(ViTConfig()), torch.rand(3, 8, 8)).shape
        torch.Size([2, 3, 4, 17, 17])
    """
    if not isinstance(model, VisionTransformer):
        raise TypeError(
            f"model must be a VisionTransformer, got {type(model).__name__}"
        )
    was_training = model.training
    model.eval()
    _, weights = model.encode(images)
    model.train(was_training)
    return torch.stack(weights)  # L × (B, H, T, T) -> (L, B, H, T, T)


def _patch_weights(weights: torch.Tensor, centers: torch.Tensor) -> torch.Tensor:
    """The patch-to-patch weights, each query's row renormalised: ``(B, H, P, P)``."""
    weights = check_tensor(weights, "weights")
    P = centers.shape[0]
    check_rank(weights, "weights", 4, f"(B, H, {P + 1}, {P + 1})")
    if weights.shape[-2:] != (P + 1, P + 1):
        raise ValueError(
            f"weights must have shape (B, H, {P + 1}, {P + 1}) ([CLS] and {P} "
            f"patches), got {fmt_shape(weights.shape)}"
        )
    w = weights[..., 1:, 1:]  # (B, H, P, P): patches to patches
    return w / w.sum(-1, keepdim=True).clamp_min(1e-12)


def mean_attention_distance(weights: torch.Tensor, patch: int = 2) -> torch.Tensor:
    """Each head's mean distance in pixels from a query patch to the patches
    it attends, weighted by attention, over the images and query patches.

    Shape:
        - weights: ``(B, H, T, T)``
        - output: ``(H,)``

    Example:
        >>> w = torch.zeros(1, 1, 17, 17)
        >>> w[0, 0, :, 0] = 1.0  # everything on [CLS] ...
        >>> w[0, 0, 1:, 1:] = torch.eye(16)  # ... and each patch on itself
        >>> mean_attention_distance(w).tolist()
        [0.0]
    """
    centers = patch_centers(patch)  # (P, 2)
    w = _patch_weights(weights, centers)  # (B, H, P, P)
    distance = torch.cdist(centers, centers)  # (P, P), pixels
    return (w * distance).sum(-1).mean(dim=(0, 2))  # (B, H, P) -> (H,)


def uniform_distance(patch: int = 2) -> float:
    """The yardstick: the mean distance of a head that attends every patch alike.

    Example:
        >>> round(uniform_distance(4), 3)  # 0, 4, 4, 4·√2 pixels from each patch
        3.414
    """
    centers = patch_centers(patch)  # (P, 2)
    return torch.cdist(centers, centers).mean().item()


@dataclass(frozen=True)
class Offsets:
    """Where each head looks from a query patch, in pixels (x right, y down).

    ``mean``: the attention-weighted mean step ``(H, 2)``; ``peak``: the step
    that gets the most attention ``(H, 2)``; ``share``: the share of all the
    head's attention (from every query patch) on that step ``(H,)``. A head
    that looks everywhere alike puts ``1 / P`` on each step it can take from
    every patch (no step but ``(0, 0)`` can: on a 4×4 grid a step of one
    patch to the right exists from 12 of the 16 patches, so at most 0.75).

    Example:
        >>> w = torch.full((1, 2, 17, 17), 1 / 17)  # two heads, uniform
        >>> o = head_offsets(w)
        >>> o.mean.shape, o.peak.tolist(), o.share.tolist()
        (torch.Size([2, 2]), [[0.0, 0.0], [0.0, 0.0]], [0.0625, 0.0625])
    """

    mean: torch.Tensor
    peak: torch.Tensor
    share: torch.Tensor


def head_offsets(weights: torch.Tensor, patch: int = 2) -> Offsets:
    """The mean and favourite step from query patch to attended patch, per head.

    Shape:
        - weights: ``(B, H, T, T)``
        - output: :class:`Offsets` with ``(H, 2)``, ``(H, 2)``, ``(H,)``

    Example:
        >>> w = torch.zeros(1, 1, 17, 17)
        >>> w[0, 0, 1:, 1:] = torch.eye(16).roll(1, dims=1)  # the next patch
        >>> o = head_offsets(w)
        >>> o.peak.tolist(), o.share.tolist()  # 4 of 16 patches wrap to the next row
        ([[2.0, 0.0]], [0.75])
    """
    centers = patch_centers(patch)  # (P, 2)
    w = _patch_weights(weights, centers)  # (B, H, P, P)
    step = centers[None, :, :] - centers[:, None, :]  # (P query, P key, 2)
    mean = torch.einsum("bhqk,qkc->hc", w, step) / (w.shape[0] * w.shape[2])  # (H, 2)
    keys = torch.unique(step.reshape(-1, 2), dim=0)  # (K, 2): every step on the grid
    # (K, P, P): 1 where key k is step s from query q
    at = (step[None] == keys[:, None, None]).all(-1).to(w)
    mass = torch.einsum("bhqk,sqk->hs", w, at) / (w.shape[0] * w.shape[2])  # (H, K)
    share, best = mass.max(-1)  # (H,), (H,)
    return Offsets(mean, keys[best], share)


def position_similarity(model: VisionTransformer) -> torch.Tensor:
    """The cosine similarity of every patch's learned position with every other's.

    Shape:
        - output: ``(P, P)``; row i reshaped to ``(G, G)`` is position i's map

    Example:
        >>> from mha_book.vision.vit import ViTConfig
        >>> sim = position_similarity(VisionTransformer(ViTConfig()))
        >>> sim.shape, torch.allclose(sim.diagonal(), torch.ones(16))
        (torch.Size([16, 16]), True)
    """
    if not isinstance(model, VisionTransformer) or model.positions is None:
        raise ValueError("model must be a VisionTransformer with positions=True")
    table = model.positions.weight.detach()[1:]  # (P, E): row 0 is the [CLS] token's
    unit = nn.functional.normalize(table, dim=-1)  # (P, E)
    return unit @ unit.T  # (P, P)


def distance_correlation(similarity: torch.Tensor, patch: int = 2) -> float:
    """Pearson's r between the similarity of two positions and their distance
    on the grid (pixels), over every pair of distinct patches.

    Shape:
        - similarity: ``(P, P)``

    Example:
        >>> d = torch.cdist(patch_centers(), patch_centers())
        >>> round(distance_correlation(-d), 3)  # similarity falls with distance
        -1.0
    """
    centers = patch_centers(patch)  # (P, 2)
    P = centers.shape[0]
    similarity = check_tensor(similarity, "similarity")
    if similarity.shape != (P, P):
        raise ValueError(
            f"similarity must have shape ({P}, {P}), got {fmt_shape(similarity.shape)}"
        )
    pairs = torch.triu_indices(P, P, offset=1)  # (2, P·(P-1)/2)
    s = similarity[pairs[0], pairs[1]].double()
    d = torch.cdist(centers, centers)[pairs[0], pairs[1]].double()
    return torch.corrcoef(torch.stack([s, d]))[0, 1].item()


def attention_rollout(weights: torch.Tensor) -> torch.Tensor:
    """Attention rollout: each layer's head-averaged weights with the residual
    path added (``0.5 · A + 0.5 · I``), multiplied from the first layer up.

    Shape:
        - weights: ``(L, B, H, T, T)``
        - output: ``(B, T, T)``; row 0 from 1 on is the [CLS] token's map of
          the patches

    Example:
        >>> w = torch.full((2, 1, 1, 3, 3), 1 / 3)  # two uniform layers
        >>> r = attention_rollout(w)[0, 0]  # (3/4)·U + (1/4)·I: 1/4 + 1/4 on itself
        >>> [round(v, 4) for v in r.tolist()]
        [0.5, 0.25, 0.25]
    """
    weights = check_tensor(weights, "weights")
    check_rank(weights, "weights", 5, "(L, B, H, T, T)")
    T = weights.shape[-1]
    eye = torch.eye(T, dtype=weights.dtype)  # (T, T)
    rollout = eye.expand(weights.shape[1], T, T)  # (B, T, T)
    for layer in weights:  # (B, H, T, T)
        a = 0.5 * layer.mean(1) + 0.5 * eye  # (B, T, T), rows sum to 1
        rollout = a @ rollout  # (B, T, T)
    return rollout


@torch.no_grad()
def head_ablation(model: VisionTransformer, digits: Digits) -> torch.Tensor:
    """The accuracy on ``digits`` with each head silenced in turn.

    Shape:
        - output: ``(L, H)``

    Example:
        >>> from mha_book.vision.data import load_digits
        >>> from mha_book.vision.vit import ViTConfig
        >>> model = VisionTransformer(ViTConfig(num_layers=1, num_heads=2))
        >>> head_ablation(model, load_digits("test")).shape
        torch.Size([1, 2])
    """
    if not isinstance(model, VisionTransformer):
        raise TypeError(
            f"model must be a VisionTransformer, got {type(model).__name__}"
        )
    model.eval()
    L, H = model.config.num_layers, model.config.num_heads
    out = torch.zeros(L, H)
    for layer in range(L):
        for head in range(H):
            with masked(model, [(f"layers.{layer}.self_attn", head)]):
                guess = model(digits.images).argmax(-1)  # (N,)
            out[layer, head] = (guess == digits.labels).float().mean()
    return out
