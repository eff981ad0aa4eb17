"""An interactive attention explorer like bertviz's head view (chapters 11, 15, 16).

:func:`explore` turns the attention weights of one sentence into a small
widget: the tokens in two columns (queries left, keys right) joined by one
line per pair, whose opacity is the weight. A layer selector and a head
selector (one head, or all heads overlaid in distinct colours) choose the
map; hovering or focusing a query token keeps only its lines and writes its
weights next to the keys.

The widget is the book's own JavaScript and CSS, ``mha_book/viz/static/explorer.js``
and ``explorer.css``: no CDN, no framework, so it works offline. The HTML that
:class:`AttentionExplorer` returns (``_repr_html_``) inlines both files, so a Jupyter
notebook needs nothing else; the book's build also copies them into
``_static`` and loads them on the pages that show an explorer, and the inline
script then only mounts the widget (it defines it only once per page). The
weights, rounded to three decimals, are the explorer's ``payload``;
they travel as JSON inside the HTML as whole thousandths (``"scale": 1000``:
``123`` for 0.123), about half the raw bytes of the decimals (gzip makes the
two forms nearly the same size).

Legend: L layers, H heads, T query tokens, S key tokens (S = T, the same
tokens, in self-attention; with ``key_tokens``, cross-attention: chapter 16).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources
from typing import Any

import torch

from mha_book.viz._explorer_checks import (
    check_attentions,
    check_index,
    check_payload,
    check_tokens,
)

__all__ = ["AttentionExplorer", "explore", "static_asset"]

DECIMALS = 3  # the weights in the page: rounded to 0.001, so off by <= 5e-4
ASSETS = ("explorer.js", "explorer.css")


def static_asset(name: str) -> str:
    """The text of one of the widget's files in ``mha_book/viz/static``.

    Args:
        name: ``"explorer.js"`` or ``"explorer.css"``.

    Example:
        >>> "mhaExplorer" in static_asset("explorer.js")
        True
    """
    if name not in ASSETS:
        raise ValueError(f"name must be one of {ASSETS}, got {name!r}")
    return resources.files("mha_book.viz").joinpath("static", name).read_text("utf-8")


def _labels() -> dict[str, str]:
    """Every word the widget shows, in the book's language (the JS has none)."""
    from mha_book.book import pick

    return {
        "widget": pick("注意力浏览器", "Attention explorer"),
        "layer": pick("层", "Layer"),
        "head": pick("头", "Head"),
        "all_heads": pick("全部（叠加）", "all (overlaid)"),
        "queries": pick("查询", "Queries"),
        "keys": pick("键", "Keys"),
        "hint": pick(
            "把指针移到左边的一个查询词元上（或点一下），也可以用 Tab 键进入左列，"
            "再用上下方向键移动：只留下它的连线，右边写出它给每个键的权重。",
            "Hover over (or tap) a query token on the left, or Tab to the column "
            "and move with the arrow keys: only its lines stay, and its weight on "
            "each key is written on the right.",
        ),
        "mean": pick("各头的平均权重", "mean over the heads"),
        "noscript": pick(
            "这个交互图需要 JavaScript。", "This interactive view needs JavaScript."
        ),
    }


class AttentionExplorer:
    """The widget for one sentence; Jupyter and the book render it as HTML.

    Made by :func:`explore`. ``payload`` is the data the page receives:
    ``tokens`` (T strings), ``weights`` (nested lists ``[L][H][T][T]``,
    rounded to three decimals), the initial ``layer`` and ``head`` (an int
    or ``"all"``), ``title`` and ``labels`` (the words shown).
    """

    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = check_payload(payload)

    @property
    def wire(self) -> dict[str, Any]:
        """``payload`` as the page carries it: each weight as whole thousandths.

        Example:
            >>> w = torch.tensor([[[[0.25, 0.75], [1.0, 0.0]]]])  # (L, H, T, T)
            >>> wire = explore(["a", "b"], w).wire
            >>> wire["weights"], wire["scale"]
            ([[[[250, 750], [1000, 0]]]], 1000)
        """
        scale = 10**DECIMALS
        weights = torch.tensor(self.payload["weights"], dtype=torch.float64)
        whole = torch.round(weights * scale).to(torch.int64)  # (L, H, T, T)
        return {**self.payload, "weights": whole.tolist(), "scale": scale}

    @property
    def json(self) -> str:
        """:attr:`wire` as compact JSON, safe inside an HTML ``<script>``."""
        text = json.dumps(self.wire, ensure_ascii=False, separators=(",", ":"))
        # No "</script>" or "<!--" can end the element early: escape <, >, &.
        for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
            text = text.replace(char, escape)
        return text

    def _repr_html_(self) -> str:
        noscript = self.payload["labels"]["noscript"]
        return (
            '<div class="mha-explorer">'
            f'<script type="application/json" class="mha-explorer-data">{self.json}'
            f"</script><noscript>{noscript}</noscript></div>"
            f"<style>{static_asset('explorer.css')}</style>"
            f"<script>{static_asset('explorer.js')}</script>"
        )

    def __repr__(self) -> str:
        w = self.payload["weights"]
        L, H, T = len(w), len(w[0]), len(self.payload["tokens"])
        keys = self.payload.get("key_tokens")
        cross = "" if keys is None else f", key_tokens={len(keys)}"
        return f"AttentionExplorer(layers={L}, heads={H}, tokens={T}{cross})"


def explore(
    tokens: Sequence[str],
    attentions: torch.Tensor | Sequence[torch.Tensor],
    *,
    title: str | None = None,
    layer: int = 0,
    head: int | str = 0,
    key_tokens: Sequence[str] | None = None,
) -> AttentionExplorer:
    """An interactive view of every head of every layer on one sentence.

    Args:
        tokens: the T tokens of the sentence.
        attentions: the attention weights of every layer: a sequence of L
            tensors, each ``(H, T, T)`` or ``(1, H, T, T)`` (what a model
            returns for a batch of one), or one tensor ``(L, H, T, T)``. Each
            row is a softmax over the keys: finite, non-negative, summing to 1
            within 1e-3 (within the dtype's epsilon where that is larger:
            bfloat16).
        title: shown above the widget (and its accessible name).
        layer: the layer shown first.
        head: the head shown first, or ``"all"`` for every head overlaid.
        key_tokens: for cross-attention, the S tokens the queries attend to
            (the keys column); by default the keys are ``tokens`` themselves.

    Shape:
        - attentions: L x (H, T, S), L x (1, H, T, S) or (L, H, T, S); S = T
          without ``key_tokens``
        - payload["weights"]: nested lists [L][H][T][S]

    Returns:
        An :class:`AttentionExplorer`; Jupyter and the book show it as HTML.

    Example:
        >>> w = torch.softmax(torch.randn(2, 4, 3, 3), dim=-1)  # (L, H, T, T)
        >>> explorer = explore(["a", "b", "c"], w)
        >>> explorer
        AttentionExplorer(layers=2, heads=4, tokens=3)
        >>> torch.tensor(explorer.payload["weights"]).shape
        torch.Size([2, 4, 3, 3])
    """
    tokens = check_tokens(tokens)
    if key_tokens is not None:
        key_tokens = check_tokens(key_tokens, "key_tokens")
    S = None if key_tokens is None else len(key_tokens)
    weights = check_attentions(attentions, len(tokens), S)  # (L, H, T, S)
    num_layers, num_heads = weights.shape[:2]
    layer = check_index(layer, "layer", num_layers)
    if head != "all":
        head = check_index(head, "head", num_heads, " or 'all'")
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a str or None, got {type(title).__name__}")
    scale = 10**DECIMALS
    rounded = torch.round(weights * scale) / scale  # (L, H, T, S), float64
    return AttentionExplorer(
        {
            "tokens": tokens,
            "key_tokens": key_tokens,
            "weights": rounded.tolist(),
            "layer": layer,
            "head": head,
            "title": title,
            "labels": _labels(),
        }
    )
