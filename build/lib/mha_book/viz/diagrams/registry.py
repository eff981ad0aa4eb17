"""Which attention kernel the module runs, for each ``kernel=`` and ``need_weights``.

Chapter 09-summary draws it. Nothing is read from the documentation: the
diagram builds real :class:`~mha_book.attention.mha.MultiHeadAttention` modules,
calls them, and records which entry of
:data:`~mha_book.attention.kernels.ATTENTION_KERNELS` ran (each entry is wrapped for
the duration of the call, then put back).

Legend: B batch, H heads, T query length, S key length, E = H·D.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from unittest import mock

import torch

from mha_book._checks import check_positive_int
from mha_book.attention.kernels import ATTENTION_KERNELS
from mha_book.attention.mha import MultiHeadAttention
from mha_book.book import pick
from mha_book.viz.layout import record_layout
from mha_book.viz.plot import new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["kernel_choice"]


def _run(kernel: str | None, need_weights: bool, x: torch.Tensor) -> dict:
    """Call a module built with ``kernel``; record what ran and what came back."""
    module = MultiHeadAttention(x.shape[-1], 2, kernel=kernel).eval()
    ran = []

    def spy(name, fn):
        def recorded(*args, **kwargs):
            ran.append(name)
            return fn(*args, **kwargs)

        return recorded

    spies = {name: spy(name, fn) for name, fn in ATTENTION_KERNELS.items()}
    result: dict[str, str | tuple[int, ...] | None] = {
        "ran": None,
        "weights": None,
        "error": None,
    }
    # patch.dict puts the registry back as it was, even when the call raises
    with mock.patch.dict(ATTENTION_KERNELS, spies), torch.no_grad():
        try:
            _, weights = module(x, x, x, need_weights=need_weights)
            result["weights"] = None if weights is None else tuple(weights.shape)
        except ValueError as err:
            result["error"] = str(err)
    result["ran"] = ran[0] if ran else None
    return result


def kernel_choice(
    tokens: int = 3,
) -> tuple[Figure, dict[tuple[str | None, bool] | str, dict]]:
    """A table of the kernel that ran for each ``kernel=`` and ``need_weights``.

    Rows: ``kernel=None`` (the default) and every name in
    :data:`~mha_book.attention.kernels.ATTENTION_KERNELS`; columns: ``need_weights``
    True and False. A cell names the kernel that ran and whether weights came
    back, or says that the module refused the call.

    Shape:
        - the input: ``(B, T, E) = (1, tokens, 8)``, self-attention, 2 heads
        - facts: ``{(kernel, need_weights): {"ran", "weights", "error"}}``
          with the kernel that ran, the weights' shape ``(B, H, T, S)`` or
          None, and the ``ValueError`` message or None; and ``"layout"``, one
          panel, the table (:func:`~mha_book.viz.layout.figure_layout`)

    Example:
        >>> fig, runs = kernel_choice()
        >>> runs[(None, True)]["ran"], runs[(None, False)]["ran"]
        ('explicit', 'fused')
        >>> runs[(None, True)]["weights"]
        (1, 2, 3, 3)
        >>> runs["layout"]
        {'rows': 1, 'columns': 1, 'direction': None}
    """
    T = check_positive_int(tokens, "tokens")
    x = torch.randn(1, T, 8)  # (B, T, E)
    names: list[str | None] = [None, *sorted(ATTENTION_KERNELS)]
    runs: dict[tuple[str | None, bool] | str, dict] = {
        (k, w): _run(k, w, x) for k in names for w in (True, False)
    }
    fig = _draw(runs, names)
    runs["layout"] = record_layout(fig, rows=1, columns=1)  # one table
    return fig, runs


def _draw(runs: dict, names: list) -> Figure:
    """The table: one row per ``kernel=``, one column per ``need_weights``."""
    from matplotlib.patches import Rectangle

    colour = {name: f"C{i}" for i, name in enumerate(sorted(ATTENTION_KERNELS))}
    fig = new_figure(figsize=(5.0, 0.75 + 0.55 * len(names)))
    ax = fig.subplots()
    ax.text(1.0, -0.5, "need_weights=", ha="center", va="bottom")
    for col, w in enumerate((True, False)):
        ax.text(col + 0.5, -0.15, str(w), ha="center", va="bottom")
    for row, name in enumerate(names):
        label = (
            pick("kernel=None\n（默认）", "kernel=None\n(default)")
            if name is None
            else f"kernel={name!r}"
        )
        ax.text(-0.06, row + 0.5, label, ha="right", va="center")
        for col, w in enumerate((True, False)):
            run = runs[(name, w)]
            if run["error"] is None:
                text = run["ran"] + (
                    pick("\n+ 权重", "\n+ weights") if run["weights"] else ""
                )
                fc = colour[run["ran"]]
            else:
                text, fc = f"{run['ran']}\nValueError", "0.85"  # refused after
            ax.add_patch(
                Rectangle(
                    (col + 0.03, row + 0.06),
                    0.94,
                    0.88,
                    fc=fc,
                    alpha=0.35 if run["error"] is None else 1,
                )
            )
            ax.text(col + 0.5, row + 0.5, text, ha="center", va="center")
    ax.set(xlim=(-1.25, 2), ylim=(len(names), -0.9))
    ax.set_axis_off()
    return fig
