"""Handwritten digits as tensors, and images cut into patches and put back.

The images are the 1,797 of the UCI optical-digits test set (Alpaydin and
Kaynak, 1998; CC BY 4.0), shipped in ``mha_book/data/digits/`` by
``tools/ship_digits.py`` with a fixed stratified split: 1,347 training and
450 test images. Each image is 8×8 pixels, each pixel a count 0..16 of ink,
read here as a float in [0, 1] (the count / 16).

A Vision Transformer reads an image as a sequence of patches:
:func:`to_patches` cuts ``(B, 8, 8)`` images into ``(B, P, p·p)`` rows of
pixels, row-major over the grid of patches (left to right, then top to
bottom), and :func:`from_patches` puts them back. :func:`patch_centers`
gives the centre of each patch in pixels, the yardstick of every distance.

Legend: B images, S side (8 pixels), p patch side, G = S / p patches a
side, P = G·G patches.
"""

from __future__ import annotations

import gzip
import io
import json
from dataclasses import dataclass
from importlib import resources

import numpy
import torch

from mha_book._checks import check_positive_int, check_rank, check_tensor, fmt_shape

__all__ = [
    "SIDE",
    "Digits",
    "digits_source",
    "load_digits",
    "to_patches",
    "from_patches",
    "patch_centers",
]

SIDE = 8  # pixels a side
LEVELS = 16  # the largest count of ink in a pixel


def _folder():
    return resources.files("mha_book") / "data" / "digits"


def digits_source() -> dict:
    """Origin, SHA-256s and counts of the shipped digits (``digest.json``).

    Example:
        >>> source = digits_source()
        >>> source["images"], source["train"], source["test"]
        (1797, 1347, 450)
    """
    return json.loads((_folder() / "digest.json").read_text(encoding="utf-8"))


@dataclass(frozen=True)
class Digits:
    """Images and their digits: ``images`` ``(N, 8, 8)`` float in [0, 1],
    ``labels`` ``(N,)`` int64 in 0..9.

    Example:
        >>> digits = load_digits("all")
        >>> len(digits), digits.labels[:5].tolist()
        (1797, [0, 1, 2, 3, 4])
    """

    images: torch.Tensor
    labels: torch.Tensor

    def __len__(self) -> int:
        return len(self.labels)


def load_digits(part: str = "train") -> Digits:
    """The training images, the test images, or all of them, in file order.

    Args:
        part: ``"train"`` (1,347 images), ``"test"`` (450) or ``"all"`` (1,797).

    Shape:
        - images: ``(N, 8, 8)``, float32 in [0, 1]
        - labels: ``(N,)``, int64

    Example:
        >>> test = load_digits("test")
        >>> test.images.shape, test.labels.shape, float(test.images.max())
        (torch.Size([450, 8, 8]), torch.Size([450]), 1.0)
    """
    if part not in ("train", "test", "all"):
        raise ValueError(f"part must be 'train', 'test' or 'all', got {part!r}")
    text = gzip.decompress((_folder() / "digits.csv.gz").read_bytes()).decode("ascii")
    table = numpy.loadtxt(io.StringIO(text), delimiter=",", dtype=numpy.int64, ndmin=2)
    rows = torch.from_numpy(table)  # (N, 64 pixels + digit)
    images = rows[:, :-1].reshape(-1, SIDE, SIDE).float() / LEVELS  # (N, 8, 8)
    labels = rows[:, -1].long()  # (N,)
    split = json.loads((_folder() / "split.json").read_text(encoding="utf-8"))
    test = torch.zeros(len(labels), dtype=torch.bool)
    test[split["test"]] = True
    keep = {"train": ~test, "test": test, "all": torch.ones_like(test)}[part]
    return Digits(images[keep], labels[keep])


def _check_side(patch: int) -> int:
    patch = check_positive_int(patch, "patch")
    if SIDE % patch:
        raise ValueError(
            f"patch must divide the side {SIDE} (1, 2, 4 or 8), got {patch}"
        )
    return patch


def to_patches(images: torch.Tensor, patch: int = 2) -> torch.Tensor:
    """Cut images into ``patch``×``patch`` patches, row-major over the grid.

    Shape:
        - images: ``(B, S, S)``
        - output: ``(B, P, p·p)``, P = (S / p)²; a patch's pixels row by row

    Example:
        >>> x = torch.arange(64.0).reshape(1, 8, 8)
        >>> to_patches(x, 2)[0, 1].tolist()  # second patch: columns 2-3 of rows 0-1
        [2.0, 3.0, 10.0, 11.0]
    """
    patch = _check_side(patch)
    images = check_tensor(images, "images")
    check_rank(images, "images", 3, f"(B, {SIDE}, {SIDE})")
    if images.shape[1:] != (SIDE, SIDE):
        raise ValueError(
            f"images must have shape (B, {SIDE}, {SIDE}), got {fmt_shape(images.shape)}"
        )
    B, G = images.shape[0], SIDE // patch
    x = images.reshape(B, G, patch, G, patch)  # (B, S, S) -> (B, G, p, G, p)
    x = x.permute(0, 1, 3, 2, 4)  # (B, G rows, G columns, p, p)
    return x.reshape(B, G * G, patch * patch)  # (B, P, p·p)


def from_patches(patches: torch.Tensor, patch: int = 2) -> torch.Tensor:
    """Put patches back into images: the inverse of :func:`to_patches`.

    Shape:
        - patches: ``(B, P, p·p)``, P = (S / p)²
        - output: ``(B, S, S)``

    Example:
        >>> x = torch.rand(3, 8, 8)
        >>> torch.equal(from_patches(to_patches(x, 4), 4), x)
        True
    """
    patch = _check_side(patch)
    patches = check_tensor(patches, "patches")
    G = SIDE // patch
    expected = f"(B, {G * G}, {patch * patch})"
    check_rank(patches, "patches", 3, expected)
    if patches.shape[1:] != (G * G, patch * patch):
        raise ValueError(
            f"patches must have shape {expected}, got {fmt_shape(patches.shape)}"
        )
    B = patches.shape[0]
    x = patches.reshape(B, G, G, patch, patch)  # (B, P, p·p) -> (B, G, G, p, p)
    x = x.permute(0, 1, 3, 2, 4)  # (B, G rows, p, G columns, p)
    return x.reshape(B, SIDE, SIDE)  # (B, S, S)


def patch_centers(patch: int = 2) -> torch.Tensor:
    """The centre ``(x, y)`` of each patch in pixels, x to the right, y down.

    Shape:
        - output: ``(P, 2)``, in the order of :func:`to_patches`

    Example:
        >>> patch_centers(4).tolist()
        [[2.0, 2.0], [6.0, 2.0], [2.0, 6.0], [6.0, 6.0]]
    """
    patch = _check_side(patch)
    G = SIDE // patch
    steps = torch.arange(G, dtype=torch.float32) * patch + patch / 2  # (G,)
    y, x = torch.meshgrid(steps, steps, indexing="ij")  # (G, G) each
    return torch.stack([x.reshape(-1), y.reshape(-1)], dim=1)  # (P, 2)
