"""Multi-head latent attention's data flow, drawn from a module's own call.

Chapter 17-inference draws :func:`latent_data_flow`: the shapes one cached call of
a :class:`~mha_book.attention.latent.LatentAttention` records, what its cache
holds, and which tensors only the plain form makes (the absorbed form, run too,
never calls the per-head key and value projections).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from mha_book.attention.latent import LatentAttention, LatentCache
from mha_book.book import pick
from mha_book.viz.layout import record_layout
from mha_book.viz.plot import new_figure

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

__all__ = ["latent_data_flow"]

NEW, KEPT = "C1", "C0"  # cached boxes are orange, the others blue

# Where each box stands (x in the axes' 0..1, row from the top) and the arrows
# between them; "kv" is one box for the per-head keys and values. Every arrow
# into the output runs straight down, in its own lane.
_BOXES = {"x": (0.5, 0), "q": (0.1, 1), "latent": (0.5, 1),
          "kv": (0.3, 2), "rope_key": (0.86, 1), "output": (0.5, 3)}  # fmt: skip
_LANES = {"q": 0.1, "kv": 0.3, "latent": 0.55, "rope_key": 0.86}  # into the output
ARROWS = (
    ("x", "q"), ("x", "latent"), ("x", "rope_key"), ("latent", "kv"),
    ("q", "output"), ("kv", "output"), ("latent", "output"), ("rope_key", "output"),
)  # fmt: skip
CACHED = ("latent", "rope_key")  # what the cache holds


def _record_shapes(module: LatentAttention, x: torch.Tensor, absorbed: bool):
    """Run ``module`` once with a fresh cache; the output shape of each projection
    it calls, and the cache it filled."""
    seen: dict[str, tuple[int, ...]] = {}
    layers = {"q": module.q_proj, "latent": module.kv_down, "rope_key": module.k_rope,
              "k": module.k_up, "v": module.v_up, "output": module.out_proj}  # fmt: skip

    def recorder(name):
        def hook(_module, _inputs, out) -> None:  # returns None: output unchanged
            seen.setdefault(name, tuple(out.shape))

        return hook

    hooks = [layer.register_forward_hook(recorder(n)) for n, layer in layers.items()]
    cache = LatentCache()
    try:
        with torch.no_grad():
            module(x, cache, absorbed=absorbed)
    finally:
        for h in hooks:
            h.remove()
    return seen, cache


def _labels(shapes: dict[str, tuple[int, ...]]) -> dict[str, str]:
    """The text of each box: what it is, how it is made, its shape."""
    kv = (
        f"{shapes['k']}"
        if shapes["k"] == shapes["v"]
        else f"{shapes['k']}, {shapes['v']}"
    )
    return {
        "x": pick("输入 x", "input x") + f"\n{shapes['x']}",
        "q": pick("查询", "queries") + f"\nq_proj(x)\n{shapes['q']}",
        "latent": pick("潜在向量 c", "latent c") + f"\nkv_down(x)\n{shapes['latent']}",
        "rope_key": pick("位置键", "position key")
        + f"\nRoPE(k_rope(x))\n{shapes['rope_key']}",
        "kv": pick("每个头的\n键和值", "keys, values\nper head")
        + f"\nk_up(c), v_up(c)\n{kv}" + pick(" 各一份", " each"),
        "output": pick("注意力，然后 out_proj", "attention, then out_proj")
        + f"\n{shapes['output']}",
    }  # fmt: skip


def _wide_box(ax, row: float, box: dict) -> None:
    """The output's box, across the whole width: every lane ends on it."""
    from matplotlib.patches import FancyBboxPatch

    style = {k: v for k, v in box.items() if k != "boxstyle"}
    ax.add_patch(FancyBboxPatch((0.0, row - 0.3), 1.0, 0.6,
                                boxstyle="round,pad=0.02", **style))  # fmt: skip


def _arrow(ax, start, end, *, dashed: bool) -> None:
    from matplotlib.patches import FancyArrowPatch

    style = {"color": "0.55", "linestyle": (0, (3, 2))} if dashed else {"color": "0.25"}
    arrow = FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=12, lw=1.2)
    arrow.set(zorder=4, **style)  # above the boxes: the head stays visible
    ax.add_patch(arrow)


def latent_data_flow(
    module: LatentAttention, x: torch.Tensor
) -> tuple[Figure, dict[str, object]]:
    """MLA's data flow, from top to bottom, with the shapes one cached call records.

    The plain form (``module(x, cache)``) runs every projection once; the
    absorbed form (``absorbed=True``) is run too, and the projections it never
    calls, the per-head keys and values, are drawn dashed. Orange boxes are
    what the cache holds.

    Shape:
        ``facts["shapes"]``: the output shape of each projection, and of x.

    Example:
        >>> mla = LatentAttention(64, 4, head_dim=16, latent_dim=24, rope_dim=8)
        >>> fig, facts = latent_data_flow(mla, torch.randn(2, 5, 64))
        >>> facts["shapes"]["latent"], facts["shapes"]["rope_key"], facts["shapes"]["k"]
        ((2, 5, 24), (2, 5, 8), (2, 5, 64))
        >>> facts["skipped"], facts["cached"]
        (['k', 'v'], ['latent', 'rope_key'])
    """
    if not isinstance(module, LatentAttention):
        raise TypeError(
            f"module must be a LatentAttention, got {type(module).__name__}"
        )
    seen, cache = _record_shapes(module, x, absorbed=False)
    absorbed_seen, _ = _record_shapes(module, x, absorbed=True)
    shapes = {"x": tuple(x.shape), **seen}
    skipped = [
        name
        for name in ("q", "latent", "rope_key", "k", "v")
        if name not in absorbed_seen
    ]
    fig = new_figure(figsize=(4.6, 5.2))
    ax = fig.subplots()
    ax.set_xlim(-0.06, 1.06)
    ax.set_ylim(3.45, -0.5)  # row 0 on top
    ax.set_axis_off()
    dashed_kv = {"k", "v"} <= set(skipped)
    texts = {}
    for name, text in _labels(shapes).items():
        cx, row = _BOXES[name]
        box = {"boxstyle": "round,pad=0.35", "fc": "#dbe8f5", "ec": KEPT, "lw": 1.2}
        if name in CACHED:
            box.update(fc="#fde3c8", ec=NEW)
        if name == "kv" and dashed_kv:
            box.update(fc="white", ec="0.5", ls=(0, (3, 2)))
        if name == "output":  # one wide box, so that every lane ends on it
            _wide_box(ax, row, box)
            box = None
        grey = name == "kv" and dashed_kv
        texts[name] = ax.text(cx, row, text, ha="center", va="center", bbox=box,
                              linespacing=1.25, color="0.35" if grey else "black")  # fmt: skip
    fig.draw_without_rendering()  # the boxes' extents, for the arrows' ends
    to_data = ax.transData.inverted()
    extent = {n: t.get_window_extent() if n == "output" else t.get_bbox_patch().get_window_extent()
              for n, t in texts.items()}  # fmt: skip
    extent = {n: e.transformed(to_data) for n, e in extent.items()}
    extent["output"].y0 = 3 - 0.3  # the wide box's top (rows grow downwards)
    for src, dst in ARROWS:
        a, b = extent[src], extent[dst]
        x0 = _LANES[src] if dst == "output" else _BOXES[src][0]
        x1 = x0 if dst == "output" else _BOXES[dst][0]
        if dst != "output" and not b.x0 < x0 < b.x1:  # fan out: leave towards it
            x0 += 0.25 * (x1 - x0)
        top = min(b.y0, b.y1)  # the y axis grows downwards
        _arrow(
            ax,
            (x0, max(a.y0, a.y1)),
            (x1, top),
            dashed=dashed_kv and "kv" in (src, dst),
        )
    ax.text(_LANES["latent"] + 0.02, 2, pick("吸收形式", "absorbed\nform"), va="center",
            color="0.25", linespacing=1.1)  # fmt: skip
    from matplotlib.patches import Patch

    handles = [
        Patch(fc="#fde3c8", ec=NEW, label=pick("缓存的内容", "what the cache holds")),
        Patch(fc="white", ec="0.5", ls=(0, (3, 2)),
              label=pick("只在普通形式中计算，吸收形式不计算", "plain form only; the absorbed form skips it")),
    ]  # fmt: skip
    fig.legend(handles=handles, loc="outside lower center")
    assert cache.latents is not None and cache.rope_keys is not None  # filled above
    layout = record_layout(fig, rows=4, columns=3, direction="top-to-bottom")
    return fig, {
        "shapes": shapes,
        "cache": (tuple(cache.latents.shape), tuple(cache.rope_keys.shape)),
        "cached": list(CACHED),
        "skipped": skipped,
        "arrows": [list(arrow) for arrow in ARROWS],
        "layout": layout,
    }
