"""What the recall models' heads do: parameters, retrieval, ablation, rank.

- :func:`equal_parameters`: H heads of width E / H and one head of width E
  have the same four ``(E, E)`` projections, so every head count is compared
  at equal parameters;
- :func:`retrieval_shares`: where each head's weight goes, on the first
  asked pair, the second, or elsewhere;
- :func:`ablation_accuracies`: the accuracy with each head masked;
- :func:`score_ranks`: the numerical rank of each head's score matrix, at
  most D (Bhojanapalli et al., 2020), and :func:`key_match_shares`: how
  often its highest score falls on the key the query names.

Legend: B batch, H heads, D = E / H, K keys, S = N + 1 tokens attended.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from mha_book._checks import check_positive_int
from mha_book.attention.mha import MultiHeadAttention
from mha_book.lm.heads.masking import masked
from mha_book.lm.heads.recall import RecallModel
from mha_book.lm.heads.task import RecallBatch, recall_batch
from mha_book.lm.heads.train import TEST_SEED, recall_accuracy

__all__ = [
    "equal_parameters",
    "recall_loss",
    "retrieval_shares",
    "ablation_accuracies",
    "numerical_rank",
    "score_ranks",
    "key_match_shares",
]


def equal_parameters(
    embed_dim: int, head_counts: Iterable[int]
) -> dict[int, dict[str, tuple[int, ...]]]:
    """The parameter shapes of ``MultiHeadAttention(embed_dim, H)`` for each H.

    Returns, for each head count, ``{parameter name: shape}``; they are the
    same for every H: the heads are cut from the same ``(E, E)`` matrices.

    Example:
        >>> shapes = equal_parameters(32, [1, 2, 8])
        >>> shapes[1] == shapes[2] == shapes[8], shapes[8]["q_proj.weight"]
        (True, (32, 32))
        >>> sum(torch.Size(s).numel() for s in shapes[8].values())  # 4 E² + 4 E
        4224
    """
    E = check_positive_int(embed_dim, "embed_dim")
    table = {}
    for H in head_counts:
        mha = MultiHeadAttention(E, check_positive_int(H, "head_counts"))
        table[H] = {name: tuple(p.shape) for name, p in mha.named_parameters()}
    return table


def _batch(model: RecallModel, batch: RecallBatch | None, n: int) -> RecallBatch:
    if batch is not None:
        return batch
    return recall_batch(model.config.task, n, torch.Generator().manual_seed(TEST_SEED))


def recall_loss(model: RecallModel, batch: RecallBatch | None = None) -> torch.Tensor:
    """The cross-entropy of the right answers on ``batch`` (default: 2000
    test examples), differentiable: the loss that scores heads for pruning.

    Shape:
        - output: ``()``

    Example:
        >>> from mha_book.lm.heads.recall import RecallConfig
        >>> from mha_book.lm.heads.task import RecallTask
        >>> model = RecallModel(RecallConfig(RecallTask(4, 6, 3), 16, 2))
        >>> recall_loss(model).shape
        torch.Size([])
    """
    batch = _batch(model, batch, 2000)
    return torch.nn.functional.cross_entropy(model(batch), batch.answer)


def retrieval_shares(
    model: RecallModel, batch: RecallBatch | None = None
) -> torch.Tensor:
    """Each head's mean weight on the pair of the first asked key, on that of
    the second, and on everything else (the other pairs and the query).

    Shape:
        - output: ``(H, 3)``, each row summing to 1

    Example:
        >>> from mha_book.lm.heads.recall import RecallConfig
        >>> from mha_book.lm.heads.task import RecallTask
        >>> model = RecallModel(RecallConfig(RecallTask(4, 6, 3), 16, 2))
        >>> shares = retrieval_shares(model)
        >>> shares.shape, torch.allclose(shares.sum(1), torch.ones(2))
        (torch.Size([2, 3]), True)
    """
    batch = _batch(model, batch, 500)
    weights = model.attention_maps(batch)  # (B, H, S)
    H = weights.shape[1]
    where = batch.where[:, None].expand(-1, H, -1)  # (B, H, 2)
    asked = weights.gather(2, where)  # (B, H, 2)
    rest = 1.0 - asked.sum(2, keepdim=True)  # (B, H, 1)
    return torch.cat([asked, rest], 2).mean(0)  # (H, 3)


def ablation_accuracies(model: RecallModel, num_examples: int = 2000) -> list[float]:
    """The test accuracy with each head masked in turn (nothing reads it).

    Example:
        >>> from mha_book.lm.heads.recall import RecallConfig
        >>> from mha_book.lm.heads.task import RecallTask
        >>> model = RecallModel(RecallConfig(RecallTask(4, 6, 3), 16, 4))
        >>> len(ablation_accuracies(model, 100))
        4
    """
    accuracies = []
    for head in range(model.config.num_heads):
        with masked(model, [("attn", head)]):
            accuracies.append(recall_accuracy(model, num_examples))
    return accuracies


def numerical_rank(matrix: torch.Tensor, rtol: float = 1e-2) -> int:
    """Singular values above ``rtol`` times the largest: the rank that counts.

    Shape:
        - matrix: ``(M, N)``

    Example:
        >>> a, b = torch.randn(16, 3), torch.randn(3, 16)
        >>> numerical_rank(a @ b), numerical_rank(torch.eye(16))
        (3, 16)
    """
    if not isinstance(matrix, torch.Tensor) or matrix.dim() != 2:
        raise ValueError(f"matrix must be a 2-D tensor, got {matrix!r:.60}")
    if not 0.0 < rtol < 1.0:
        raise ValueError(f"rtol must be in (0, 1), got {rtol}")
    s = torch.linalg.svdvals(matrix.double())  # (min(M, N),), descending
    return int((s > rtol * s[0]).sum()) if s[0] > 0 else 0


def score_ranks(model: RecallModel, rtol: float = 1e-2) -> torch.Tensor:
    """The numerical rank of every head's ``(K, K)`` score matrix from the
    query's first and second key to the pairs' keys
    (:meth:`~mha_book.lm.heads.recall.RecallModel.score_matrix`); each is at
    most D = E / H, and an exact match of any of K keys needs rank K.

    Shape:
        - output: ``(H, 2)``, long

    Example:
        >>> from mha_book.lm.heads.recall import RecallConfig
        >>> from mha_book.lm.heads.task import RecallTask
        >>> model = RecallModel(RecallConfig(RecallTask(8, 16, 4), 32, 16))
        >>> bool((score_ranks(model) <= 2).all())  # D = 2
        True
    """
    H = model.config.num_heads
    ranks = [
        [numerical_rank(model.score_matrix(h, slot), rtol) for slot in (0, 1)]
        for h in range(H)
    ]
    return torch.tensor(ranks)  # (H, 2)


def key_match_shares(model: RecallModel) -> torch.Tensor:
    """For every head and query slot, the share of the K keys a query can
    name whose highest score (a row of
    :meth:`~mha_book.lm.heads.recall.RecallModel.score_matrix`) is on that
    same key: 1 for a head that can pick out any named key, about 1 / K by
    chance.

    Shape:
        - output: ``(H, 2)``

    Example:
        >>> from mha_book.lm.heads.recall import RecallConfig
        >>> from mha_book.lm.heads.task import RecallTask
        >>> model = RecallModel(RecallConfig(RecallTask(8, 16, 4), 32, 4))
        >>> key_match_shares(model).shape
        torch.Size([4, 2])
    """
    K, H = model.config.task.num_keys, model.config.num_heads
    own = torch.arange(K)  # (K,): row a's own key
    shares = [
        [
            (model.score_matrix(h, slot).argmax(1) == own).float().mean()
            for slot in (0, 1)
        ]
        for h in range(H)
    ]
    return torch.tensor(shares)  # (H, 2)
