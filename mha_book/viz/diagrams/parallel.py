"""H heads side by side: each attends on its own columns, then concat and W^O.

Chapter 03-multi-head draws :func:`parallel_heads`, Figure 2 of Vaswani et al.
(2017) from a real module: the columns of the projections each head reads
(found by :func:`~mha_book.attention.heads.split_heads`, as the module splits),
each head's attention on them, and the concatenation ``out_proj`` receives.

Legend: B batch, H heads, T query length, S key length, D head dim, E = H·D.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from mha_book._checks import check_positive_int, fmt_shape
from mha_book.attention._mha_checks import check_forward_inputs
from mha_book.attention.heads import split_heads
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.scaled_dot_product import scaled_dot_product_attention
from mha_book.book import pick
from mha_book.viz.diagrams.shapes import _shape_label
from mha_book.viz.layout import record_layout
from mha_book.viz.plot import TEXT_PT, new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["head_columns", "parallel_heads"]

#: The most heads drawn: at a phone's width a head's column is then 0.4 inch.
MAX_HEADS = 8


def head_columns(features: int, num_heads: int) -> list[tuple[int, int]]:
    """The columns ``[start, stop)`` of a ``(..., H·D)`` tensor that head h gets.

    Read off :func:`~mha_book.attention.heads.split_heads` applied to the columns' own
    indices, so they are the columns the module's split gives each head.

    Shape:
        - output: ``H`` pairs ``(start, stop)``, ``stop - start = D``

    Example:
        >>> head_columns(512, 8)[:3]
        [(0, 64), (64, 128), (128, 192)]
    """
    features = check_positive_int(features, "features")
    index = torch.arange(features).view(1, 1, features)  # (B=1, T=1, E): indices
    heads = split_heads(index, num_heads)[0, :, 0]  # (H, D); checks num_heads
    columns = [(int(h[0]), int(h[-1]) + 1) for h in heads]
    for h, (start, stop) in enumerate(columns):  # split_heads cuts, never shuffles
        assert torch.equal(heads[h], torch.arange(start, stop)), heads[h]
    return columns


def _check_module(module) -> None:
    """A module this diagram can draw: no grouped heads, no rope, <= 8 heads."""
    if not isinstance(module, MultiHeadAttention):
        raise TypeError(
            f"module must be a mha_book.MultiHeadAttention, got {type(module).__name__}"
        )
    H, Hkv = module.num_heads, module.num_kv_heads
    problems = {
        "num_kv_heads = num_heads (grouped heads: chapter 13)": Hkv == H,
        f"at most {MAX_HEADS} heads": H <= MAX_HEADS,
        "no rope": module.rope is None,
        "eval mode or no dropout": not module.training or module.dropout == 0,
    }
    wrong = [need for need, ok in problems.items() if not ok]
    if wrong:
        raise ValueError(
            "module must have " + ", ".join(wrong) + " to be drawn, got "
            f"num_heads = {H}, num_kv_heads = {Hkv}, rope = {module.rope}, "
            f"training = {module.training}, dropout = {module.dropout}"
        )


def parallel_heads(
    module, query: torch.Tensor, key: torch.Tensor | None = None, value=None
) -> tuple[Figure, dict[str, object]]:
    """H heads side by side, each on its own columns; then concat and W^O.

    Runs ``module(query, key, value, need_weights=False)`` and records what
    ``out_proj`` received: the heads' outputs, concatenated. Beside it, each
    head's output as the paper writes it: its columns (:func:`head_columns`)
    of ``q_proj(query)``, ``k_proj(key)``, ``v_proj(value)`` through
    :func:`~mha_book.attention.scaled_dot_product.scaled_dot_product_attention`.
    The figure flows from top to bottom, one column per head.

    Args:
        module: A :class:`~mha_book.attention.mha.MultiHeadAttention` with at most
            8 heads, ``num_kv_heads = num_heads`` and no rope.
        query: Queries.
        key: Keys; default ``query`` (self-attention).
        value: Values; default ``key``.

    Shape:
        As :meth:`MultiHeadAttention.forward
        <mha_book.attention.mha.MultiHeadAttention.forward>`; the facts are batch
        first whatever ``batch_first`` is:

        - facts["heads"]: ``(B, H, T, D)``, each head's output from its columns
        - facts["concat"]: ``(B, T, E)``, the input of ``out_proj`` in the
          module's forward pass
        - facts["output"]: ``(B, T, E)``, the module's output

    Returns:
        The figure and a dict of facts, with ``"num_heads"``, ``"head_dim"``, ``"columns"``
        (:func:`head_columns`, for q, k, v alike), ``"heads"``, ``"concat"``,
        ``"output"``, ``"shapes"`` and ``"layout"``
        (:func:`~mha_book.viz.layout.figure_layout`).

    Example:
        >>> mha = MultiHeadAttention(8, 2).eval()
        >>> fig, facts = parallel_heads(mha, torch.randn(1, 3, 8))
        >>> facts["columns"], facts["heads"].shape
        ([(0, 4), (4, 8)], torch.Size([1, 2, 3, 4]))
        >>> torch.allclose(facts["heads"][:, 1], facts["concat"][..., 4:8])
        True
        >>> facts["layout"]
        {'rows': 5, 'columns': 2, 'direction': 'top-to-bottom'}
    """
    _check_module(module)
    key = query if key is None else key
    value = key if value is None else value
    check_forward_inputs(module, query, key, value, None, None, False)
    received = []  # what out_proj is given: the concatenated heads, (B, T, E)
    hook = module.out_proj.register_forward_pre_hook(
        lambda _, args: received.append(args[0].detach().clone())
    )
    try:
        with torch.no_grad():
            output, _ = module(query, key, value, need_weights=False)
    finally:
        hook.remove()
    if not module.batch_first:  # (T, B, E) -> (B, T, E)
        query, key, value, output = (
            t.transpose(0, 1) for t in (query, key, value, output)
        )
    columns = head_columns(module.embed_dim, module.num_heads)
    with torch.no_grad():
        q = module.q_proj(query)  # (B, T, E)
        k = module.k_proj(key)  # (B, S, E)
        v = module.v_proj(value)  # (B, S, E)
        heads = [
            scaled_dot_product_attention(q[..., a:b], k[..., a:b], v[..., a:b])[0]
            for a, b in columns
        ]  # H of (B, T, D)
    heads = torch.stack(heads, dim=1)  # (B, H, T, D)
    named = {"query": query, "key": key, "value": value, "q": q, "k": k, "v": v}
    shapes = (
        {name: tuple(t.shape) for name, t in named.items()}
        | {
            "head_q": tuple(q[..., : columns[0][1]].shape),  # (B, T, D)
            "head_k": tuple(k[..., : columns[0][1]].shape),  # (B, S, D)
            "head_output": tuple(heads[:, 0].shape),  # (B, T, D)
            "concat": tuple(received[0].shape),
            "output": tuple(output.shape),
        }
    )
    facts = {
        "num_heads": module.num_heads,
        "head_dim": module.head_dim,
        "columns": columns,
        "heads": heads,
        "concat": received[0],
        "output": output,
        "shapes": shapes,
    }
    fig, levels = _draw(columns, shapes)
    facts["layout"] = record_layout(
        fig, rows=levels, columns=len(columns), direction="top-to-bottom"
    )
    return fig, facts


def _draw(columns: list[tuple[int, int]], shapes: dict) -> tuple[Figure, int]:
    """The flow, in inches, each step's name above its level; and the levels drawn."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

    H = len(columns)

    def lines(names, keys):  # "q, k, v: (2, 10, 512)", or one line per shape
        return _shape_label(names, [shapes[k] for k in keys]).replace("   ", "\n")

    # Placed by hand, in inches from the top, down a cursor y. A line of
    # TEXT_PT text takes LINE; the names take the full width, so the drawing
    # can too (the PNG is cut to it, <= 4.8 in wide).
    LINE = TEXT_PT / 72 * 1.35
    left, right = 0.1, 4.7
    width = (right - left) / H  # one head's column
    mid = (left + right) / 2
    tint = [f"C{h % 10}" for h in range(H)]
    per_head = lines("qkv", ["head_q", "head_k", "head_k"])
    names = [
        pick("1. 投影", "1. project"),
        pick("2. 每个头取自己的列：", "2. each head takes its columns: ") + per_head,
        pick("3. 每个头做缩放点积注意力 → ", "3. attention in each head → ")
        + fmt_shape(shapes["head_output"]),
        pick("4. 合并", "4. concat"),
        pick("5. 输出投影", "5. output projection"),
    ]
    texts = []  # (x, y, label, ha): written once the figure's height is known
    shapes_drawn = []  # (kind, args): likewise
    y = 0.05

    def write(x, y, label, ha="center"):
        texts.append((x, y, label, ha))

    def block(label):  # a label's height in inches
        return LINE * (label.count("\n") + 1)

    def name(k):  # step k's name, left-aligned on the lines above its level
        nonlocal y
        write(left, y + block(names[k]) / 2, names[k], ha="left")
        y += block(names[k]) + 0.04

    def arrow(x, y0, y1):
        shapes_drawn.append(("arrow", (x, y0, y1)))

    inputs = lines(["query", "key", "value"], ["query", "key", "value"])
    write(mid, y + block(inputs) / 2, inputs)
    y += block(inputs)
    arrow(mid, y, y + 0.22)
    y += 0.26
    name(0)
    project = (y, y + 0.36)
    y = project[1]
    qkv = lines("qkv", "qkv")
    arrow(mid, y, y + max(0.3, block(qkv)))
    write(mid + 0.1, y + max(0.3, block(qkv)) / 2, qkv, ha="left")
    y += max(0.3, block(qkv)) + 0.04
    name(1)
    split = (y, y + 0.26)
    y = split[1]
    edges = [start for start, _ in columns] + [columns[-1][1]]
    for h, edge in enumerate(edges):  # the column indices where the heads meet
        write(
            min(max(left + h * width, left + 0.12), right - 0.12),
            y + LINE / 2,
            str(edge),
        )
    y += LINE
    for h in range(H):
        arrow(left + (h + 0.5) * width, y, y + 0.26)
    y += 0.3
    name(2)
    heads = (y, y + 0.36)
    y = heads[1]
    for h in range(H):
        arrow(left + (h + 0.5) * width, y, y + 0.26)
    y += 0.3
    name(3)
    concat = (y, y + 0.3)
    y = concat[1]
    arrow(mid, y, y + 0.26)
    y += 0.3
    name(4)
    out_proj = (y, y + 0.36)
    y = out_proj[1]
    arrow(mid, y, y + 0.26)
    output = pick("输出：", "output: ") + fmt_shape(shapes["output"])
    write(mid, y + 0.3 + LINE / 2, output)
    height = y + 0.3 + LINE + 0.05

    fig = new_figure(figsize=(4.8, height), layout=None)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set(xlim=(0, 4.8), ylim=(height, 0))
    ax.set_axis_off()

    def box(level, label, x0=left, x1=right, **style):
        top, bottom = level
        style = {"fc": "#dbe8f5", "ec": "C0", **style}
        shape = "round,pad=0,rounding_size=0.06"
        ax.add_patch(FancyBboxPatch((x0, top), x1 - x0, bottom - top, shape, **style))
        ax.text((x0 + x1) / 2, (top + bottom) / 2, label, ha="center", va="center")

    def bar(level):  # a tensor of E columns, head h's in its colour
        top, bottom = level
        for h in range(H):
            x0, h_in = left + h * width, bottom - top
            ax.add_patch(Rectangle((x0, top), width, h_in, fc=tint[h], alpha=0.35))

    for _, (x, y0, y1) in shapes_drawn:
        style = {"arrowstyle": "-|>", "mutation_scale": 10, "color": "0.3"}
        ax.add_patch(FancyArrowPatch((x, y0), (x, y1), shrinkA=0, shrinkB=0, **style))
    for x, y_text, label, ha in texts:
        ax.text(x, y_text, label, ha=ha, va="center")
    box(project, "q_proj, k_proj, v_proj")
    bar(split)
    for h in range(H):
        x = left + (h + 0.5) * width
        colour = {"fc": tint[h], "ec": tint[h], "alpha": 0.35}
        box(heads, str(h), x - 0.4 * width, x + 0.4 * width, **colour)
    bar(concat)
    ax.text(mid, sum(concat) / 2, fmt_shape(shapes["concat"]), ha="center", va="center")
    box(out_proj, "out_proj (Wᴼ)")
    return fig, 5
