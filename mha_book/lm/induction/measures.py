"""What the chapter on induction heads measures: losses on the two copies and
two scores per head, read from any causal model of the book.

- :func:`previous_token_scores`: a head's mean weight from position i on
  position i - 1, the mark of a previous-token head;
- :func:`prefix_matching_scores`: its mean weight, from a query inside the
  repeat, on the token that followed the earlier copy of the query's token,
  the mark of an induction head (Olsson et al.'s prefix matching);
- :func:`uniform_scores`: both scores of a head that spreads its weight
  evenly over the causal window, their yardstick;
- :func:`copy_losses` and :func:`measure`: the loss at each place of the
  first copy and of the repeat, and every number of a snapshot at once.

A model is anything called as ``model(idx, need_weights=True)`` that returns
``(logits, weights)`` with one ``(B, H, T, T)`` tensor per layer:
:class:`~mha_book.lm.induction.model.AttentionOnlyDecoder` and
:class:`~mha_book.models.decoder.CausalDecoder` alike.

Legend: B batch, H heads, T length, L segment length, N layers.
"""

from __future__ import annotations

import torch
from torch import nn

from mha_book._checks import check_rank, check_tensor, fmt_shape
from mha_book.lm.induction.task import InductionBatch, copy_masks

__all__ = [
    "previous_token_scores",
    "prefix_matching_scores",
    "uniform_scores",
    "copy_losses",
    "measure",
]


def _check_weights(weights: object, T: int | None = None) -> torch.Tensor:
    w = check_tensor(weights, "weights")
    check_rank(w, "weights", 4, "(B, H, T, T)")
    if w.shape[-1] != w.shape[-2] or (T is not None and w.shape[-1] != T):
        want = "(B, H, T, T)" if T is None else f"(B, H, {T}, {T})"
        raise ValueError(f"weights must be {want}, got {fmt_shape(w.shape)}")
    return w


def previous_token_scores(weights: torch.Tensor) -> torch.Tensor:
    """Each head's mean weight from position i on i - 1, over i = 1, ..., T - 1.

    Shape:
        - weights: ``(B, H, T, T)`` one layer's attention, rows summing to 1
        - output: ``(H,)``, each in [0, 1]

    Example:
        >>> T = 5
        >>> previous = torch.eye(T).roll(-1, 1).tril()  # row i: weight 1 on i - 1
        >>> previous[0, 0] = 1.0  # the first row can only attend to itself
        >>> itself = torch.eye(T)
        >>> w = torch.stack([previous, itself])[None]  # (1, 2, T, T)
        >>> previous_token_scores(w).tolist()
        [1.0, 0.0]
    """
    w = _check_weights(weights)
    diagonal = w.diagonal(offset=-1, dim1=-2, dim2=-1)  # (B, H, T - 1): w[i, i - 1]
    return diagonal.mean((0, 2))  # (H,)


def _query_and_target(batch: InductionBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """The repeat's queries (positions ``second + k``) and, for each, the key
    an induction head should find (``first + k + 1``), k = 0, ..., L - 2."""
    k = torch.arange(batch.segment_len - 1)  # (L - 1,)
    query = batch.second[:, None] + k  # (B, L - 1)
    return query, batch.first[:, None] + k + 1  # (B, L - 1), (B, L - 1)


def prefix_matching_scores(
    weights: torch.Tensor, batch: InductionBatch
) -> torch.Tensor:
    """Each head's mean weight, from the query at ``second + k``, on the key at
    ``first + k + 1``: the token after the earlier copy of the query's token.

    Shape:
        - weights: ``(B, H, T, T)``, one layer's attention on ``batch.tokens``
        - output: ``(H,)``

    Example:
        >>> b = InductionBatch(torch.zeros(1, 8, dtype=torch.long),
        ...                    torch.tensor([0]), torch.tensor([4]), 3)
        >>> w = torch.zeros(1, 1, 8, 8)
        >>> w[0, 0, 4, 1] = w[0, 0, 5, 2] = 1.0  # the queries 4, 5 on keys 1, 2
        >>> prefix_matching_scores(w, b).tolist()
        [1.0]
    """
    if not isinstance(batch, InductionBatch):
        raise TypeError(f"batch must be an InductionBatch, got {type(batch).__name__}")
    B, T = batch.tokens.shape
    w = _check_weights(weights, T)
    if w.shape[0] != B:
        raise ValueError(f"weights must have batch size B = {B}, got {w.shape[0]}")
    query, target = _query_and_target(batch)  # (B, L - 1) each
    H = w.shape[1]
    rows = w.gather(2, query[:, None, :, None].expand(B, H, -1, T))  # (B, H, L-1, T)
    on_target = rows.gather(3, target[:, None, :, None].expand(B, H, -1, 1))
    return on_target.mean((0, 2, 3))  # (H,)


def uniform_scores(batch: InductionBatch) -> tuple[float, float]:
    """``(previous, prefix)``: the two scores of a head that gives each of the
    i + 1 keys of position i the same weight, their yardstick.

    Example:
        >>> b = InductionBatch(torch.zeros(1, 4, dtype=torch.long),
        ...                    torch.tensor([0]), torch.tensor([2]), 2)
        >>> uniform_scores(b)  # (1/2 + 1/3 + 1/4) / 3, and 1/3 at the query 2
        (0.3611111111111111, 0.3333333333333333)
    """
    if not isinstance(batch, InductionBatch):
        raise TypeError(f"batch must be an InductionBatch, got {type(batch).__name__}")
    T = batch.tokens.shape[1]
    share = 1.0 / torch.arange(1, T + 1, dtype=torch.float64)  # (T,) 1 / (i + 1)
    query, _ = _query_and_target(batch)  # (B, L - 1)
    return share[1:].mean().item(), share[query].mean().item()


@torch.no_grad()
def copy_losses(model: nn.Module, batch: InductionBatch) -> dict[str, torch.Tensor]:
    """The loss, in nats, at each place of the first copy and of the repeat,
    and every layer's attention on the batch.

    Returns:
        ``{"first": (L - 1,), "repeat": (L - 1,), "weights": [(B, H, T, T)] * N}``:
        entry k is the mean loss of predicting the segment's token k + 2.

    Example:
        >>> from mha_book.lm.induction.model import AttentionOnlyConfig, AttentionOnlyDecoder
        >>> from mha_book.lm.induction.task import InductionTask, induction_batch
        >>> task = InductionTask(16, 12, 4)
        >>> model = AttentionOnlyDecoder(AttentionOnlyConfig(16, 16, 2, 1, 12))
        >>> out = copy_losses(model, induction_batch(task, 8))
        >>> out["first"].shape, out["repeat"].shape, len(out["weights"])
        (torch.Size([3]), torch.Size([3]), 1)
    """
    if not isinstance(batch, InductionBatch):
        raise TypeError(f"batch must be an InductionBatch, got {type(batch).__name__}")
    was_training = model.training
    model.eval()
    logits, weights = model(batch.tokens, need_weights=True)  # (B, T, V), N tensors
    model.train(was_training)
    B, T, V = logits.shape
    targets = batch.tokens[:, 1:]  # (B, T - 1): position t predicts t + 1
    loss = nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, V), targets.reshape(-1), reduction="none"
    ).view(B, T - 1)  # (B, T - 1)
    out = {}
    for name, mask in zip(("first", "repeat"), copy_masks(batch)):
        out[name] = loss[mask[:, :-1]].view(B, -1).mean(0)  # (L - 1,)
    out["weights"] = list(weights)
    return out


def measure(model: nn.Module, batch: InductionBatch) -> dict[str, torch.Tensor]:
    """Everything a snapshot keeps: the mean loss on the first copy and on the
    repeat (0-d), and each layer's previous-token and prefix-matching scores.

    Shape:
        - first, repeat: ``()``
        - previous, prefix: ``(N, H)``

    Example:
        >>> from mha_book.lm.induction.model import AttentionOnlyConfig, AttentionOnlyDecoder
        >>> from mha_book.lm.induction.task import InductionTask, induction_batch
        >>> model = AttentionOnlyDecoder(AttentionOnlyConfig(16, 16, 2, 2, 12))
        >>> m = measure(model, induction_batch(InductionTask(16, 12, 4), 8))
        >>> m["repeat"].shape, m["prefix"].shape
        (torch.Size([]), torch.Size([2, 2]))
    """
    out = copy_losses(model, batch)
    weights = out.pop("weights")
    return {
        "first": out["first"].mean(),
        "repeat": out["repeat"].mean(),
        "previous": torch.stack([previous_token_scores(w) for w in weights]),
        "prefix": torch.stack([prefix_matching_scores(w, batch) for w in weights]),
    }
