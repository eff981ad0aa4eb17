"""Who reads from whom: the three attention blocks of an encoder-decoder.

Chapter 06-applications draws it: the encoder's self-attention, the decoder's
causal self-attention and the cross-attention, read off the weights of real
:class:`~mha_book.models.layers.EncoderLayer` and :class:`~mha_book.models.layers.DecoderLayer`
modules.

Legend: B batch, H heads, T target (query) length, S source length, E = H·D.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from mha_book._checks import check_rank, check_tensor, fmt_shape
from mha_book.book import pick
from mha_book.viz.layout import record_layout
from mha_book.viz.plot import new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["attention_patterns"]

#: The three blocks, in the order they run and are drawn.
KINDS = ("encoder_self", "decoder_self", "cross")


def _check_layers(encoder, decoder, src, tgt) -> None:
    """Eval-mode layers (dropout would hide keys at random) and one sequence each."""
    for name, layer in (("encoder", encoder), ("decoder", decoder)):
        if not isinstance(layer, torch.nn.Module) or layer.training:
            raise ValueError(
                f"{name} must be a layer in eval mode (dropout hides keys at "
                f"random), got {type(layer).__name__}"
                + " in training mode"
                * getattr(layer, "training", False)
            )
    for name, x, length in (("src", src, "S"), ("tgt", tgt, "T")):
        check_tensor(x, name)
        check_rank(x, name, 3, f"(B, {length}, E)")
        if x.shape[0] != 1:
            raise ValueError(
                f"{name} must hold one sequence, shape (1, {length}, E), "
                f"got {fmt_shape(x.shape)}"
            )
        weight = next(encoder.parameters(), None)
        if weight is not None and x.dtype != weight.dtype:
            raise TypeError(
                f"{name} must have the dtype of the layers' parameters "
                f"({weight.dtype}), got {x.dtype}"
            )
        E = getattr(getattr(encoder, "self_attn", None), "embed_dim", x.shape[-1])
        if x.shape[-1] != E:
            raise ValueError(
                f"{name} must have shape (1, {length}, E) with E = {E} (the layers' "
                f"embed_dim), got {fmt_shape(x.shape)}"
            )


def attention_patterns(
    encoder, decoder, src: torch.Tensor, tgt: torch.Tensor, src_mask=None
) -> tuple[Figure, dict[str, object]]:
    """Lines from each query position to the key positions it attends.

    Runs ``encoder(src, src_mask)`` and ``decoder(tgt, memory, memory_mask=
    src_mask)``, as a Transformer does, and marks a (query, key) pair as
    attended when any head gives it a non-zero weight.

    Shape:
        - src: ``(1, S, E)``, one source sequence
        - tgt: ``(1, T, E)``, one target sequence
        - src_mask: broadcastable to ``(1, H, S, S)`` and ``(1, H, T, S)``,
          e.g. ``padding_mask(lengths, S)``
        - facts: ``{"encoder_self": (S, S), "decoder_self": (T, T),
          "cross": (T, S)}`` bool tensors, True = attended; and ``"layout"``,
          the three panels stacked (:func:`~mha_book.viz.layout.figure_layout`)

    Example:
        >>> from mha_book.models.layers import DecoderLayer, EncoderLayer
        >>> from mha_book.attention.masks import padding_mask
        >>> enc, dec = EncoderLayer(8, 2, 16).eval(), DecoderLayer(8, 2, 16).eval()
        >>> src, tgt = torch.randn(1, 3, 8), torch.randn(1, 2, 8)
        >>> fig, seen = attention_patterns(enc, dec, src, tgt, padding_mask([2], 3))
        >>> {kind: tuple(seen[kind].shape) for kind in KINDS}
        {'encoder_self': (3, 3), 'decoder_self': (2, 2), 'cross': (2, 3)}
        >>> seen["cross"].int()
        tensor([[1, 1, 0],
                [1, 1, 0]], dtype=torch.int32)
    """
    _check_layers(encoder, decoder, src, tgt)
    with torch.no_grad():
        memory, enc_w = encoder(src, src_mask)  # (1, S, E), (1, H, S, S)
        _, self_w, cross_w = decoder(tgt, memory, memory_mask=src_mask)
    weights = dict(zip(KINDS, (enc_w, self_w, cross_w)))  # (1, H, T|S, T|S)
    seen = {kind: (w[0] != 0).any(dim=0) for kind, w in weights.items()}  # (T, S)
    fig = _draw(seen)
    seen["layout"] = record_layout(fig, rows=len(KINDS), columns=1)
    return fig, seen


def _draw(seen: dict[str, torch.Tensor]) -> Figure:
    """Three panels, queries on top, keys below, a line per attended pair."""
    S, T = seen["encoder_self"].shape[0], seen["decoder_self"].shape[0]
    src, tgt = pick(("源", "目标"), ("src", "tgt"))
    names = {  # kind: (title, query label, key label)
        "encoder_self": (pick("编码器自注意力", "encoder self-attention"), src, src),
        "decoder_self": (
            pick("解码器因果自注意力", "decoder causal self-attention"),
            tgt,
            tgt,
        ),
        "cross": (pick("交叉注意力", "cross-attention"), tgt, "memory"),
    }
    n = max(S, T)
    fig = new_figure(figsize=(5.0, 5.2))
    axes = fig.subplots(3, 1)
    for ax, (kind, mask) in zip(axes, seen.items()):
        title, q_name, k_name = names[kind]
        rows, cols = mask.shape
        for i, j in mask.nonzero().tolist():  # one line per attended pair
            ax.plot([i, j], [1, 0], color=f"C{i % 10}", lw=1.4, zorder=1)
        for y, count, name in ((1, rows, f"Q: {q_name}"), (0, cols, f"K: {k_name}")):
            for p in range(count):
                ax.text(
                    p,
                    y,
                    str(p),
                    ha="center",
                    va="center",
                    zorder=2,
                    bbox={"boxstyle": "circle", "fc": "white", "ec": "0.3"},
                )
            ax.text(-0.7, y, name, ha="right", va="center")
        hidden = (~mask.any(dim=0)).nonzero().flatten().tolist()  # keys nobody reads
        for j in hidden:
            ax.text(j, -0.42, "✕", ha="center", va="center", color="C3")
        ax.set_title(title)
        ax.set_xlim(-2.2, n - 0.4)
        ax.set_ylim(-0.65, 1.35)
        ax.set_axis_off()
    return fig
