"""Diagrams of shapes and memory: the five steps, and splitting into heads.

Chapter 03-multi-head draws :func:`mha_data_flow`, the five steps with the
shapes :func:`~mha_book.attention.trace.trace_shapes` records; chapter 04-implementation
draws :func:`head_split_layout`, where each element of a tiny tensor lives in
memory before and after :func:`~mha_book.attention.heads.split_heads` and
:func:`~mha_book.attention.heads.merge_heads`.

Legend: B batch, H heads, T query length, S key length, D head dim, E = H·D.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from mha_book._checks import check_rank, check_tensor, fmt_shape
from mha_book.attention.heads import merge_heads, split_heads
from mha_book.attention.trace import ZH_STAGE_NAMES, trace_shapes
from mha_book.book import pick
from mha_book.viz.diagrams._draw import draw_offset_grid, grid_axes
from mha_book.viz.layout import record_layout
from mha_book.viz.plot import new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure
    from matplotlib.typing import HashableList

__all__ = ["mha_data_flow", "head_split_layout"]

# The five steps: (zh, en) label and the trace stages each one produces.
_STEPS = (
    (("1. 投影", "1. project"), ("q_proj", "k_proj", "v_proj")),
    (("2. 切分成多个头", "2. split into heads"), ("q_heads", "k_heads", "v_heads")),
    (("3. 每个头做缩放点积注意力", "3. scaled dot-product per head"), ("context",)),
    (("4. 合并各头", "4. merge the heads"), ("merged",)),
    (("5. 输出投影", "5. output projection"), ("output",)),
)


def _shape_label(names: list[str], shapes: list[tuple[int, ...]]) -> str:
    """``"q, k, v: (2, 10, 512)"``; names of unequal shapes get their own part.

    In the zh book the stages named by a word are written as ``trace_shapes``
    prints them (``"分数、权重：(2, 8, 10, 10)"``); ``q``, ``k``, ``v`` stay.
    """
    names = [pick(ZH_STAGE_NAMES.get(name, name), name) for name in names]
    comma, colon = pick("、", ", "), pick("：", ": ")
    parts: list[tuple[list[str], tuple[int, ...]]] = []
    for name, shape in zip(names, shapes):
        if parts and parts[-1][1] == shape:
            parts[-1][0].append(name)
        else:
            parts.append(([name], shape))
    return "   ".join(f"{comma.join(n)}{colon}{fmt_shape(s)}" for n, s in parts)


def mha_data_flow(
    module, query: torch.Tensor, key: torch.Tensor | None = None, value=None
) -> tuple[Figure, dict[str, dict]]:
    """The five steps of multi-head attention, each arrow labelled with its shape.

    The shapes are those :func:`~mha_book.attention.trace.trace_shapes` records for
    ``module(query, key, value)``: nothing on the picture is typed by hand.
    The steps are boxes in one column, read from top to bottom.

    Shape:
        As :meth:`MultiHeadAttention.forward
        <mha_book.attention.mha.MultiHeadAttention.forward>`.

    Returns:
        The figure and a dict of facts, with ``"shapes"``, ``{stage: shape}`` for every
        stage drawn, in order; ``"layout"``, its
        :func:`~mha_book.viz.layout.figure_layout` (a box per row, top to bottom).

    Example:
        >>> from mha_book.attention.mha import MultiHeadAttention
        >>> fig, facts = mha_data_flow(MultiHeadAttention(8, 2), torch.randn(1, 3, 8))
        >>> shapes = facts["shapes"]
        >>> shapes["q_heads"], shapes["scores"], shapes["output"]
        ((1, 2, 3, 4), (1, 2, 3, 3), (1, 3, 8))
        >>> facts["layout"]
        {'rows': 5, 'columns': 1, 'direction': 'top-to-bottom'}
    """
    from matplotlib.transforms import blended_transform_factory

    trace = trace_shapes(module, query, key, value).as_dict()  # checks its arguments
    drawn = ["query", "key", "value"] + [s for _, st in _STEPS for s in st]
    drawn[drawn.index("context") : drawn.index("context")] = ["scores", "weights"]
    shapes = {stage: trace[stage] for stage in drawn}

    def label(stages):
        names = [s.split("_")[0] for s in stages]  # q_proj -> "q"
        return _shape_label(names, [shapes[s] for s in stages])

    rows = [("arrow", label(["query", "key", "value"]))]
    for (zh, en), stages in _STEPS:
        text = pick(zh, en)
        if "context" in stages:  # step 3 also shows its scores and weights
            text += "\n   " + _shape_label(
                ["scores", "weights"], [shapes["scores"], shapes["weights"]]
            )
        rows += [("box", text), ("arrow", label(stages))]
    heights = [1.6 if "\n" in text else 1.0 for _, text in rows]
    fig = new_figure(figsize=(5.0, 0.25 + 0.3 * sum(heights)))
    ax = fig.subplots()
    ax.set_ylim(0, sum(heights))
    ax.set_axis_off()
    inches = blended_transform_factory(fig.dpi_scale_trans, ax.transData)  # x in in
    y = sum(heights)
    for (kind, text), h in zip(rows, heights):
        mid = y - h / 2
        if kind == "box":
            box = {"boxstyle": "round", "fc": "#dbe8f5", "ec": "C0"}
            ax.text(0.15, mid, text, va="center", bbox=box, transform=inches)
        else:
            arrow = {"arrowstyle": "-|>", "color": "0.3", "lw": 1.2}
            ax.annotate(
                "",
                xy=(0.4, y - h + 0.1),
                xytext=(0.4, y - 0.1),
                xycoords=inches,
                arrowprops=arrow,
            )
            ax.text(0.65, mid, text, va="center", transform=inches)
        y -= h
    # The drawing as wide as its longest text, <= 5 in: the Axes is narrowed to
    # it, and the PNG is cut to the Axes. The figure keeps its 5 in, so that
    # both editions make a figure of the same size from their own labels.
    fig.draw_without_rendering()
    right = max(t.get_window_extent().x1 for t in ax.texts) / fig.dpi
    fig.set_layout_engine("none")  # keep the Axes where it is now
    x0, y0, _, height = ax.get_position().bounds
    ax.set_position((x0, y0, min(5.0, right + 0.15) / 5.0 - x0, height))
    boxes = sum(kind == "box" for kind, _ in rows)
    layout = record_layout(fig, rows=boxes, columns=1, direction="top-to-bottom")
    return fig, {"shapes": shapes, "layout": layout}


def _offsets(t: torch.Tensor) -> torch.Tensor:
    """Where each element of ``t`` lives in its storage, read from its strides."""
    storage = torch.arange(t.untyped_storage().nbytes() // t.element_size())
    return storage.as_strided(t.shape, t.stride(), t.storage_offset())


def head_split_layout(
    x: torch.Tensor, num_heads: int
) -> tuple[Figure, dict[str, object]]:
    """Storage offsets of a tiny tensor through split_heads and merge_heads.

    Panels: the storage of ``x`` in order; ``x.view(B, T, H, D)``; the
    transposed view :func:`~mha_book.attention.heads.split_heads` returns (heads stacked,
    so reading it row by row is its logical order); :func:`merge_heads
    <mha_book.attention.heads.merge_heads>` of it; and ``reshape(B, T, E)`` without the
    transpose back. Each cell shows the storage offset of ``x`` it holds, read
    from the tensors' own ``stride()`` (for the two copies: where the copied
    element came from); its colour is the head that owns that offset.

    Shape:
        - x: ``(1, T, E)``, contiguous, with ``T·E <= 16``

    Returns:
        The figure and a dict of facts, with for each panel (``"x"``, ``"view"``,
        ``"split"``, ``"merged"``, ``"no_transpose"``) a dict of ``"shape"``,
        ``"stride"`` and ``"offsets"``; ``"view_error"``, what
        ``.view(B, T, E)`` on the split tensor raised (None if nothing); and
        ``"layout"``, the panels' :func:`~mha_book.viz.layout.figure_layout`: three
        rows, ``x`` across the top, then two panels a row.

    Example:
        >>> fig, layout = head_split_layout(torch.arange(12).view(1, 3, 4), 2)
        >>> layout["split"]["stride"], layout["split"]["offsets"][0, 0].tolist()
        ((12, 2, 4, 1), [[0, 1], [4, 5], [8, 9]])
        >>> layout["layout"]
        {'rows': 3, 'columns': 2, 'direction': None}
    """
    check_tensor(x, "x")
    check_rank(x, "x", 3, "(B, T, E)")
    heads = split_heads(x, num_heads)  # (B, H, T, D); checks num_heads
    B, H, T, D = heads.shape
    if B != 1 or T * H * D > 16 or not x.is_contiguous():
        raise ValueError(
            "x must be contiguous and small enough to draw (B = 1, T·E <= 16), "
            f"got shape {fmt_shape(x.shape)}, contiguous = {x.is_contiguous()}"
        )
    views = {"x": x, "view": x.view(B, T, H, D), "split": heads}  # no copies
    layout: dict[str, Any] = {
        name: {"shape": tuple(t.shape), "stride": t.stride(), "offsets": _offsets(t)}
        for name, t in views.items()
    }
    copies = {"merged": merge_heads, "no_transpose": lambda t: t.reshape(B, T, H * D)}
    for name, step in copies.items():  # the same step on the offsets: who went where
        out = step(heads)  # (B, T, E), a copy
        offsets = step(layout["split"]["offsets"])
        layout[name] = {
            "shape": tuple(out.shape),
            "stride": out.stride(),
            "offsets": offsets,
        }
    try:
        heads.view(B, T, H * D)
        layout["view_error"] = None
    except RuntimeError as err:
        layout["view_error"] = str(err)
    fig = _draw_layout(layout, H, D)
    rows, columns = len(_PANELS), max(len(set(row)) for row in _PANELS)
    layout["layout"] = record_layout(fig, rows=rows, columns=columns)
    return fig, layout


#: The panels of :func:`head_split_layout`, as ``subplot_mosaic`` places them.
_PANELS: list[HashableList[str]] = [
    ["x", "x"],
    ["view", "split"],
    ["merged", "no_transpose"],
]


def _draw_layout(layout: dict, H: int, D: int) -> Figure:
    """The five panels of :func:`head_split_layout`, head blocks apart by a gap."""
    E, gap = H * D, 0.25
    T = layout["x"]["shape"][1]
    cell = min(4.6 / (T * E), 2.2 / (E + gap * (H - 1)), 0.45)  # inches
    stacked = H * T + gap * (H - 1)  # rows of the split panel, heads stacked
    rows = [1, stacked, T]
    fig = new_figure(figsize=(5.0, 0.35 + sum(0.75 + cell * r for r in rows)))
    axes = fig.subplot_mosaic(_PANELS, height_ratios=[0.75 + cell * r for r in rows])
    stride = pick("步长", "stride")

    def head_of(offsets: torch.Tensor) -> torch.Tensor:
        return offsets % E // D  # the head that owns each storage offset of x

    x = layout["x"]
    flat = torch.arange(T * E)[None]  # (1, T·E): storage positions in order
    draw_offset_grid(axes["x"], flat, head_of(flat))
    axes["x"].set_title(
        f"x {fmt_shape(x['shape'])}, {stride} {fmt_shape(x['stride'])}"
        + pick("：存储中的顺序", ": its storage, in order"),
    )
    grid_axes(axes["x"], T * E, 1)
    view, split = layout["view"]["offsets"][0], layout["split"]["offsets"][0]
    for h in range(H):  # view: (T, H, D), heads side by side; split: (H, T, D), stacked
        draw_offset_grid(
            axes["view"], view[:, h], head_of(view[:, h]), x0=h * (D + gap)
        )
        draw_offset_grid(axes["split"], split[h], head_of(split[h]), y0=h * (T + gap))
    grid_axes(axes["view"], E + gap * (H - 1), T)
    grid_axes(axes["split"], D, stacked)
    for name in ("merged", "no_transpose"):
        offsets = layout[name]["offsets"][0]  # (T, E)
        draw_offset_grid(axes[name], offsets, head_of(offsets))
        grid_axes(axes[name], E, T)
    titles = {
        "view": "x.view",
        "split": "split_heads: ",
        "merged": "merge_heads: ",
        "no_transpose": pick("不转置回去就 reshape：", "reshape, no transpose: "),
    }
    for name, title in titles.items():
        shape, strides = layout[name]["shape"], layout[name]["stride"]
        axes[name].set_title(
            f"{title}{fmt_shape(shape)}\n{stride} {fmt_shape(strides)}"
        )
    if layout["view_error"] is not None:
        fig.supxlabel(
            pick(
                f"split_heads 的结果 .view{fmt_shape(x['shape'])}：RuntimeError",
                f"split_heads(...).view{fmt_shape(x['shape'])}: RuntimeError",
            ),
        )
    return fig
