"""A small Vision Transformer for 8×8 digits, and a pixel MLP of the same size.

The Vision Transformer (Dosovitskiy et al., 2021) reads an image as a
sequence: it cuts the image into patches (:func:`~mha_book.vision.data.to_patches`),
maps each patch's pixels to a vector with one linear layer, puts a learned
``[CLS]`` vector in front, adds a learned position to every token
(:class:`~mha_book.attention.positions.LearnedPositions`), and runs the
package's pre-norm :class:`~mha_book.models.layers.EncoderLayer` over them;
the digit is read from the ``[CLS]`` token's final vector. Without positions
(``positions=False``) the model sees a bag of patches: permuting the patches
permutes their outputs and leaves the ``[CLS]`` token's unchanged.

Patches of 2×2 pixels give a 4×4 grid of 16 tokens: enough tokens for
attention to have directions and distances (offsets of up to 3 patches, 6
pixels, each way), and each token still holds a piece of a stroke. 4×4
patches would leave 4 tokens; single pixels 64 tokens of one grey level
each, at 16 times the attention's cost.

Legend: B images, P patches, T = P + 1 tokens ([CLS] first), E model dim,
H heads, L layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from mha_book._checks import check_positive_int
from mha_book.attention.positions import LearnedPositions
from mha_book.models.layers import EncoderLayer
from mha_book.vision.data import SIDE, to_patches

__all__ = ["ViTConfig", "VisionTransformer", "PixelMLP", "parameter_count"]


@dataclass(frozen=True)
class ViTConfig:
    """The shape of a :class:`VisionTransformer`.

    Args:
        patch: Side of a patch in pixels (divides 8).
        embed_dim: Model dimension E.
        num_heads: Heads H per layer; must divide E.
        num_layers: Encoder layers L.
        ff_dim: Hidden size of each feed-forward network.
        positions: Whether learned positions are added to the tokens.
        num_classes: Number of digits.

    Example:
        >>> ViTConfig().num_patches, ViTConfig(patch=4).num_patches
        (16, 4)
    """

    patch: int = 2
    embed_dim: int = 32
    num_heads: int = 4
    num_layers: int = 2
    ff_dim: int = 64
    positions: bool = True
    num_classes: int = 10

    @property
    def num_patches(self) -> int:
        """P, the patches of an image."""
        return (SIDE // self.patch) ** 2


def parameter_count(model: nn.Module) -> int:
    """The number of trained numbers of ``model``.

    Example:
        >>> parameter_count(nn.Linear(4, 3))
        15
    """
    return sum(p.numel() for p in model.parameters())


class VisionTransformer(nn.Module):
    """Patches, a [CLS] token, learned positions, pre-norm encoder layers.

    Shape:
        - images: ``(B, 8, 8)``
        - logits: ``(B, num_classes)``

    Example:
        >>> model = VisionTransformer(ViTConfig())
        >>> model(torch.rand(5, 8, 8)).shape
        torch.Size([5, 10])
        >>> tokens, weights = model.encode(torch.rand(5, 8, 8))
        >>> tokens.shape, len(weights), weights[0].shape
        (torch.Size([5, 17, 32]), 2, torch.Size([5, 4, 17, 17]))
    """

    def __init__(self, config: ViTConfig) -> None:
        super().__init__()
        if not isinstance(config, ViTConfig):
            raise TypeError(f"config must be a ViTConfig, got {type(config).__name__}")
        self.config = config
        E = check_positive_int(config.embed_dim, "embed_dim")
        check_positive_int(config.num_layers, "num_layers")
        self.embed = nn.Linear(config.patch**2, E)  # p·p pixels -> E
        self.cls = nn.Parameter(torch.randn(E) * 0.02)  # (E,)
        tokens = config.num_patches + 1
        self.positions = LearnedPositions(tokens, E) if config.positions else None
        self.layers = nn.ModuleList(
            EncoderLayer(E, config.num_heads, config.ff_dim, norm_first=True)
            for _ in range(config.num_layers)
        )
        self.norm = nn.LayerNorm(E)
        self.head = nn.Linear(E, config.num_classes)

    def encode(self, images: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """The final tokens and every layer's attention weights.

        Shape:
            - images: ``(B, 8, 8)``
            - tokens: ``(B, T, E)``, token 0 the [CLS] token
            - weights: L tensors ``(B, H, T, T)``
        """
        x = self.embed(to_patches(images, self.config.patch))  # (B, P, E)
        cls = self.cls.expand(x.shape[0], 1, -1)  # (E,) -> (B, 1, E)
        x = torch.cat([cls, x], dim=1)  # (B, T, E)
        if self.positions is not None:
            x = self.positions(x)  # (B, T, E)
        weights = []
        for layer in self.layers:
            x, w = layer(x)  # (B, T, E), (B, H, T, T)
            weights.append(w)
        return self.norm(x), weights

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """The logits of the ten digits, read from the [CLS] token."""
        tokens, _ = self.encode(images)
        return self.head(tokens[:, 0])  # (B, E) -> (B, num_classes)


class PixelMLP(nn.Module):
    """The baseline: the 64 pixels through two hidden ReLU layers.

    Args:
        hidden: Width of each hidden layer.
        num_classes: Number of digits.

    Shape:
        - images: ``(B, 8, 8)``
        - logits: ``(B, num_classes)``

    Example:
        >>> mlp = PixelMLP(100)
        >>> mlp(torch.rand(5, 8, 8)).shape, parameter_count(mlp)
        (torch.Size([5, 10]), 17610)
    """

    def __init__(self, hidden: int, num_classes: int = 10) -> None:
        super().__init__()
        self.hidden = check_positive_int(hidden, "hidden")
        self.net = nn.Sequential(
            nn.Linear(SIDE * SIDE, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, num_classes),
        )

    @classmethod
    def sized_like(cls, model: nn.Module) -> PixelMLP:
        """The MLP whose parameter count is nearest ``model``'s.

        Example:
            >>> vit = VisionTransformer(ViTConfig())
            >>> mlp = PixelMLP.sized_like(vit)
            >>> abs(parameter_count(mlp) - parameter_count(vit)) < 200
            True
        """
        target = parameter_count(model)
        # h² + 76h + 10 parameters for 64 pixels and 10 digits
        width = min(range(1, 1024), key=lambda h: abs(h * h + 76 * h + 10 - target))
        return cls(width)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.net(images.flatten(1))  # (B, 8, 8) -> (B, 64) -> (B, num_classes)
