"""The shape of every stage of one multi-head attention forward pass.

Taught in chapter 04-implementation (the shape table); chapter 08 makes a
shape trace the first step of checking a module.

Legend: B batch, H heads, T query length, S key length, D head dim, E = H·D;
``kdim`` / ``vdim`` are the key / value features when they differ from E.

:func:`trace_shapes` runs the same steps as
:meth:`MultiHeadAttention.forward <mha_book.attention.mha.MultiHeadAttention.forward>`
with the same functions (the projections, :func:`split_heads`, the kernel,
:func:`merge_heads`) and checks that its output matches the module's, so the
table cannot drift from the code.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from mha_book._checks import check_positive_int, fmt_shape
from mha_book.attention.heads import merge_heads, repeat_kv, split_heads
from mha_book.attention.mha import MultiHeadAttention
from mha_book.attention.scaled_dot_product import scaled_dot_product_attention
from mha_book.book import display_width, pad_cols, pick

__all__ = ["ShapeTrace", "trace_shapes"]

# How the zh book prints the stages named by a word (the keys stay English:
# trace["scores"]); a stage named after the module's code (q_proj, q_heads)
# keeps its name.
ZH_STAGE_NAMES = {
    "query": "查询",
    "key": "键",
    "value": "值",
    "scores": "分数",
    "weights": "权重",
    "context": "上下文",
    "merged": "合并",
    "output": "输出",
}


def _rows(rows: object) -> Sequence:
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence):
        raise TypeError(
            "rows must be a sequence of (stage, symbolic, shape) triples, "
            f"got {type(rows).__name__}"
        )
    return rows


def _check_row(row: object, i: int) -> tuple[str, str, torch.Size]:
    """One ``(stage, symbolic, shape)`` triple, or an error naming ``rows[i]``."""
    if isinstance(row, (str, bytes)) or not isinstance(row, Sequence) or len(row) != 3:
        raise ValueError(
            f"rows[{i}] must be a (stage, symbolic, shape) triple, got {row!r}"
        )
    stage, symbolic, shape = row
    if not isinstance(stage, str) or not isinstance(symbolic, str):
        raise TypeError(
            f"rows[{i}] must start with two str (stage, symbolic), got {row!r}"
        )
    if isinstance(shape, (str, bytes)) or not isinstance(shape, Sequence):
        raise TypeError(f"rows[{i}] must end with a shape (ints), got {shape!r}")
    return (
        stage,
        symbolic,
        torch.Size(check_positive_int(n, f"rows[{i}]", allow_zero=True) for n in shape),
    )


class ShapeTrace:
    """Stage-by-stage shapes of a forward pass: rows of (stage, symbolic, shape).

    Args:
        rows: ``(stage, symbolic, shape)`` triples in forward order.
        sizes: The concrete sizes of the symbols, e.g. ``{"B": 2, "H": 8, ...}``.

    Example:
        >>> tr = ShapeTrace([("scores", "(B, H, T, S)", (2, 8, 10, 12))], {"B": 2})
        >>> tr["scores"]
        torch.Size([2, 8, 10, 12])
        >>> print(tr)
        stage   symbolic      shape
        ------  ------------  --------------
        scores  (B, H, T, S)  (2, 8, 10, 12)
    """

    def __init__(self, rows, sizes: dict[str, int] | None = None) -> None:
        self.rows = tuple(_check_row(row, i) for i, row in enumerate(_rows(rows)))
        if sizes is not None and not isinstance(sizes, dict):
            raise TypeError(f"sizes must be a dict or None, got {type(sizes).__name__}")
        self.sizes = dict(sizes or {})
        for symbol, n in self.sizes.items():
            check_positive_int(n, f"sizes[{symbol!r}]", allow_zero=True)

    @property
    def stages(self) -> list[str]:
        """Stage names in forward order."""
        return [name for name, _, _ in self.rows]

    def __getitem__(self, stage: str) -> torch.Size:
        for name, _, shape in self.rows:
            if name == stage:
                return shape
        raise KeyError(f"stage must be one of {self.stages}, got {stage!r}")

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def as_dict(self) -> dict[str, tuple[int, ...]]:
        """``{stage: shape tuple}`` in forward order."""
        return {name: tuple(shape) for name, _, shape in self.rows}

    def _cells(self) -> list[tuple[str, str, str]]:
        return [(name, sym, fmt_shape(shape)) for name, sym, shape in self.rows]

    def __str__(self) -> str:
        """The table, in the book's language (:func:`mha_book.book.pick`)."""
        header = pick(("阶段", "符号形状", "形状"), ("stage", "symbolic", "shape"))
        cells = [
            (pick(ZH_STAGE_NAMES.get(name, name), name), sym, shape)
            for name, sym, shape in self._cells()
        ]
        widths = [max(display_width(r[i]) for r in [header, *cells]) for i in range(3)]
        lines = [header, tuple("-" * w for w in widths), *cells]
        return "\n".join(
            "  ".join(pad_cols(c, w) for c, w in zip(line, widths)).rstrip()
            for line in lines
        )

    __repr__ = __str__

    def to_markdown(self) -> str:
        """The table as GitHub/MyST markdown.

        Example:
            >>> print(ShapeTrace([("merged", "(B, T, E)", (2, 10, 512))]).to_markdown())
            | stage | symbolic | shape |
            |---|---|---|
            | merged | `(B, T, E)` | `(2, 10, 512)` |
        """
        lines = ["| stage | symbolic | shape |", "|---|---|---|"]
        lines += [f"| {n} | `{sym}` | `{shape}` |" for n, sym, shape in self._cells()]
        return "\n".join(lines)


def trace_shapes(
    module: MultiHeadAttention,
    query: torch.Tensor,
    key: torch.Tensor | None = None,
    value: torch.Tensor | None = None,
    mask: torch.Tensor | None = None,
) -> ShapeTrace:
    """Record the shape of each stage of ``module(query, key, value, mask)``.

    Args:
        module: The attention module to trace.
        query: Queries.
        key: Keys; default ``query`` (self-attention).
        value: Values; default ``key``.
        mask: Optional bool mask, True = may attend.

    Shape:
        As :meth:`MultiHeadAttention.forward
        <mha_book.attention.mha.MultiHeadAttention.forward>`.
        The stages are ``query, key, value, q_proj, k_proj, v_proj, q_heads,
        k_heads, v_heads, scores, weights, context, merged, output``; a
        grouped-query module (``num_kv_heads < num_heads``) adds
        ``k_repeated, v_repeated`` after ``v_heads``.

    Returns:
        A :class:`ShapeTrace`.

    Raises:
        TypeError: If ``module`` is not a :class:`MultiHeadAttention`; otherwise
            the module's own input errors.
        RuntimeError: If the traced steps disagree with ``module``'s output
            (the trace has drifted from the module's code).

    Example:
        >>> mha = MultiHeadAttention(512, 8)
        >>> x, memory = torch.randn(2, 10, 512), torch.randn(2, 12, 512)
        >>> tr = trace_shapes(mha, x, memory)
        >>> tr["scores"]
        torch.Size([2, 8, 10, 12])
        >>> print(tr)
        stage    symbolic      shape
        -------  ------------  --------------
        query    (B, T, E)     (2, 10, 512)
        key      (B, S, E)     (2, 12, 512)
        value    (B, S, E)     (2, 12, 512)
        q_proj   (B, T, E)     (2, 10, 512)
        k_proj   (B, S, E)     (2, 12, 512)
        v_proj   (B, S, E)     (2, 12, 512)
        q_heads  (B, H, T, D)  (2, 8, 10, 64)
        k_heads  (B, H, S, D)  (2, 8, 12, 64)
        v_heads  (B, H, S, D)  (2, 8, 12, 64)
        scores   (B, H, T, S)  (2, 8, 10, 12)
        weights  (B, H, T, S)  (2, 8, 10, 12)
        context  (B, H, T, D)  (2, 8, 10, 64)
        merged   (B, T, E)     (2, 10, 512)
        output   (B, T, E)     (2, 10, 512)
    """
    if not isinstance(module, MultiHeadAttention):
        raise TypeError(
            f"module must be a mha_book.MultiHeadAttention, got {type(module).__name__}"
        )
    key = query if key is None else key
    value = key if value is None else value
    dropout_p = module.dropout if module.training else 0.0

    with torch.no_grad():
        expected, _ = module(query, key, value, mask)  # validates the inputs, too
        rows = _input_rows(module, query, key, value)
        if not module.batch_first:
            query, key, value = (t.transpose(0, 1) for t in (query, key, value))
        q, k, v, head_rows = _project_and_split(module, query, key, value)
        context, weights = scaled_dot_product_attention(
            q, k, v, mask, dropout_p=dropout_p
        )
        scores = q @ k.transpose(-2, -1)  # (B, H, T, S), step 1 of the kernel
        merged = merge_heads(context)  # (B, T, E)
        output = module.out_proj(merged)  # (B, T, E)
        if not module.batch_first:
            output = output.transpose(0, 1)  # (T, B, E)
    rows += head_rows + [
        ("scores", "(B, H, T, S)", scores.shape),
        ("weights", "(B, H, T, S)", weights.shape),
        ("context", "(B, H, T, D)", context.shape),
        ("merged", "(B, T, E)", merged.shape),
        ("output", _sequence(module, "T", "E"), output.shape),
    ]

    same = output.shape == expected.shape and (
        dropout_p > 0.0
        or torch.allclose(output, expected, rtol=1e-5, atol=1e-6, equal_nan=True)
    )
    if not same:
        raise RuntimeError(
            "trace_shapes disagrees with module(...): the trace has drifted from "
            "MultiHeadAttention.forward"
        )
    B, H, T, D = q.shape
    sizes = {"B": B, "H": H, "T": T, "S": k.shape[-2], "D": D, "E": module.embed_dim}
    return ShapeTrace(rows, sizes)


def _sequence(module: MultiHeadAttention, length: str, features: str) -> str:
    """Symbolic shape of a module input or output, in the module's layout."""
    if module.batch_first:
        return f"(B, {length}, {features})"
    return f"({length}, B, {features})"


def _input_rows(module, query, key, value) -> list[tuple]:
    kdim = "E" if module.kdim == module.embed_dim else "kdim"
    vdim = "E" if module.vdim == module.embed_dim else "vdim"
    return [
        ("query", _sequence(module, "T", "E"), query.shape),
        ("key", _sequence(module, "S", kdim), key.shape),
        ("value", _sequence(module, "S", vdim), value.shape),
    ]


def _project_and_split(module, query, key, value):
    """Steps 1-2 of MultiHeadAttention.forward (and repeat_kv for GQA), with rows."""
    grouped = module.num_kv_heads != module.num_heads
    kv, hkv = ("Hkv·D", "Hkv") if grouped else ("E", "H")
    q = module.q_proj(query)  # (B, T, E)
    k = module.k_proj(key)  # (B, S, Hkv·D)
    v = module.v_proj(value)  # (B, S, Hkv·D)
    rows = [
        ("q_proj", "(B, T, E)", q.shape),
        ("k_proj", f"(B, S, {kv})", k.shape),
        ("v_proj", f"(B, S, {kv})", v.shape),
    ]
    q = split_heads(q, module.num_heads)  # (B, H, T, D)
    k = split_heads(k, module.num_kv_heads)  # (B, Hkv, S, D)
    v = split_heads(v, module.num_kv_heads)  # (B, Hkv, S, D)
    rows += [
        ("q_heads", "(B, H, T, D)", q.shape),
        ("k_heads", f"(B, {hkv}, S, D)", k.shape),
        ("v_heads", f"(B, {hkv}, S, D)", v.shape),
    ]
    if grouped:
        n_rep = module.num_heads // module.num_kv_heads
        k = repeat_kv(k, n_rep)  # (B, H, S, D)
        v = repeat_kv(v, n_rep)  # (B, H, S, D)
        rows += [
            ("k_repeated", "(B, H, S, D)", k.shape),
            ("v_repeated", "(B, H, S, D)", v.shape),
        ]
    return q, k, v, rows
