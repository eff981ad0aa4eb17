"""Attention weights as heatmaps (chapters 02, 03, 05, 07, 10 and 11).

Rows are queries, columns are keys. The figure comes from
:func:`mha_book.viz.plot.new_figure`, so Chinese tokens have their font and the
grid is sized to stay legible on a phone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from mha_book._checks import check_positive_int
from mha_book.viz.plot import PHONE_WIDTH_IN, TEXT_PT, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["plot_attention"]


def plot_attention(
    weights: torch.Tensor,
    q_tokens: Sequence[str] | None = None,
    k_tokens: Sequence[str] | None = None,
    *,
    titles: Sequence[str] | None = None,
    ncols: int | None = None,
    cmap: str = "Blues",
    cell_size: float = 0.45,
    annotate: bool = False,
) -> Figure:
    """Draw attention weights as heatmaps: one head, or a grid of heads.

    Rows are queries, columns are keys, so row ``i`` shows where query token
    ``i`` looks.

    Args:
        weights: (T, S) for one head or (H, T, S) for a grid of H heads.
            Take one batch element first, e.g. ``weights[0]``.
        q_tokens: T labels for the rows (query tokens), or None for indices.
        k_tokens: S labels for the columns (key tokens); defaults to
            ``q_tokens`` when T == S.
        titles: one title per head; defaults to "head 0", "head 1", ...
            ("头 0", ... in the zh book).
        ncols: number of columns of the grid; by default as many as fit in
            ``PHONE_WIDTH_IN`` inches (at least one), so the figure's text
            stays legible on a phone.
        cmap: matplotlib colour map.
        cell_size: inches per heatmap cell.
        annotate: write each weight (two decimals) into its cell.

    Shape:
        - weights: (T, S) or (H, T, S)

    Returns:
        A ``matplotlib.figure.Figure``.

    Example:
        >>> w = torch.softmax(torch.randn(2, 3, 4), dim=-1)
        >>> fig = plot_attention(w, ["a", "b", "c"], ["w", "x", "y", "z"])
        >>> len(fig.axes)  # two heatmaps and one colour bar
        3
    """
    weights = _check_weights(weights)  # (H, T, S)
    num_heads, T, S = weights.shape
    if k_tokens is None and q_tokens is not None and T == S:
        k_tokens = q_tokens
    _check_labels("q_tokens", q_tokens, T)
    _check_labels("k_tokens", k_tokens, S)
    if titles is None:
        from mha_book.book import pick

        word = pick("头", "head")  # the book's language (MHA_BOOK_LANG)
        titles = [f"{word} {h}" for h in range(num_heads)] if num_heads > 1 else [""]
    _check_labels("titles", titles, num_heads)
    panel_width = max(2.5, cell_size * S + 1.2)  # inches, labels included
    if ncols is None:
        ncols = max(1, int((PHONE_WIDTH_IN - 0.8) // panel_width))
    ncols = check_positive_int(ncols, "ncols")

    ncols = min(ncols, num_heads)
    nrows = -(-num_heads // ncols)
    width = panel_width * ncols + 0.8  # + the colour bar
    height = max(2.2, cell_size * T + 1.0) * nrows
    fig = new_figure(figsize=(width, height))
    axes = fig.subplots(nrows, ncols, squeeze=False)
    data = weights.detach().to("cpu", torch.float64).numpy()
    image = None
    for h, ax in enumerate(axes.flat):
        if h >= num_heads:
            ax.set_axis_off()
            continue
        image = _draw_map(ax, data[h], titles[h], q_tokens, k_tokens, cmap, cell_size)
        if annotate:
            _write_weights(ax, data[h])
    # One colour bar beside the whole grid; over many rows a shorter one suffices.
    shrink = 0.8 if nrows == 1 else max(0.25, 0.8 / nrows)
    assert image is not None  # H >= 1 (_check_weights): the first panel drew it
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=shrink)
    return fig


def _check_weights(weights: object) -> torch.Tensor:
    """``weights`` as ``(H, T, S)``, or a named error."""
    if not isinstance(weights, torch.Tensor):
        raise TypeError(f"weights must be a torch.Tensor, got {type(weights).__name__}")
    if weights.dim() == 2:
        weights = weights.unsqueeze(0)  # (1, T, S)
    if weights.dim() != 3:
        raise ValueError(
            "weights must have shape (T, S) or (H, T, S), "
            f"got {weights.dim()} dims with shape {tuple(weights.shape)}"
        )
    if weights.numel() == 0:
        raise ValueError(
            f"weights must hold at least one map, query and key, "
            f"got shape {tuple(weights.shape)}"
        )
    if weights.is_floating_point() and not weights.isfinite().all():
        raise ValueError("weights must be finite: NaN or inf would draw as blank cells")
    return weights


def _draw_map(ax, data, title, q_tokens, k_tokens, cmap, cell_size):
    """One head's ``(T, S)`` map with its title and token labels."""
    T, S = data.shape
    image = ax.imshow(data, cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_title(title)
    ax.set_xticks(range(S), k_tokens if k_tokens is not None else range(S))
    ax.set_yticks(range(T), q_tokens if q_tokens is not None else range(T))
    if k_tokens is not None and _label_width_in(k_tokens) > 0.9 * cell_size:
        # Labels wider than a cell are turned; each ends at its own tick,
        # so a long one never runs into the next.
        ax.tick_params(axis="x", labelrotation=45)
        for label in ax.get_xticklabels():
            label.set(ha="right", rotation_mode="anchor")
    return image


def _write_weights(ax, data) -> None:
    """Each weight of a ``(T, S)`` map in its cell, two decimals."""
    T, S = data.shape
    for i in range(T):
        for j in range(S):
            value = data[i, j]
            ax.text(
                j,
                i,
                f"{value:.2f}",
                ha="center",
                va="center",
                color="white" if value > 0.6 else "black",
            )


def _label_width_in(labels: Sequence[str], fontsize: float = TEXT_PT) -> float:
    """Rough width in inches of the widest label (CJK glyphs are about 1 em wide)."""
    em = fontsize / 72
    return max(
        (sum(1.0 if ord(c) >= 0x2E80 else 0.6 for c in str(s)) * em for s in labels),
        default=0.0,
    )


def _check_labels(name: str, labels: Sequence[str] | None, expected: int) -> None:
    if labels is not None and len(labels) != expected:
        raise ValueError(f"{name} must have {expected} labels, got {len(labels)}")
