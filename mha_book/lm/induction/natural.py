"""Looking for induction heads in the book's trained character models.

Chapter 10's Shakespeare decoder and chapter 15's Tang poem decoder read
sequences of random characters from their own vocabularies in which a
segment repeats (:class:`~mha_book.lm.induction.task.InductionTask` with the
model's V). No text they were trained on looks like this, so what lowers the
loss on the repeat is copying from the context. :func:`probe_decoder` gives
each head's prefix-matching score, the loss on both copies, and the loss on
the repeat with the best head silenced.

Legend: N layers, H heads per layer, V vocabulary, T length, L segment length.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from mha_book._checks import check_positive_int
from mha_book.lm.heads.masking import attention_heads, masked
from mha_book.lm.induction.measures import measure, uniform_scores
from mha_book.lm.induction.task import InductionBatch, InductionTask, induction_batch
from mha_book.lm.induction.train import PROBE_SEED

__all__ = ["repeated_characters", "probe_decoder"]


def repeated_characters(
    vocab_size: int,
    seq_len: int = 64,
    segment_len: int = 20,
    num_sequences: int = 64,
) -> InductionBatch:
    """Fixed random sequences of ``vocab_size`` characters with a repeated
    segment, the same on every call.

    Shape:
        - tokens: ``(num_sequences, seq_len)``

    Example:
        >>> repeated_characters(65, num_sequences=4).tokens.shape
        torch.Size([4, 64])
    """
    check_positive_int(num_sequences, "num_sequences")
    task = InductionTask(vocab_size, seq_len, segment_len)
    generator = torch.Generator().manual_seed(PROBE_SEED)
    return induction_batch(task, num_sequences, generator)


def probe_decoder(model: nn.Module, batch: InductionBatch) -> dict[str, object]:
    """What a trained decoder does with a repeated segment of random tokens.

    Returns:
        dict: ``"first"``, ``"repeat"`` (mean losses in nats),
        ``"chance"`` (log V), ``"prefix"`` and ``"previous"`` ``(N, H)``,
        ``"uniform_prefix"`` (the prefix-matching score of evenly spread
        attention), ``"best"`` (the head with the highest prefix-matching
        score, as ``(module name, head)``), ``"best_prefix"`` and
        ``"repeat_without_best"`` (the repeat's loss with it silenced).

    Example:
        >>> from mha_book.models.decoder import CausalDecoder, DecoderConfig
        >>> model = CausalDecoder(DecoderConfig(20, 16, 2, 2, max_len=64)).eval()
        >>> out = probe_decoder(model, repeated_characters(20, num_sequences=4))
        >>> out["prefix"].shape, out["best"] in attention_heads(model)
        (torch.Size([2, 2]), True)
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module, got {type(model).__name__}")
    embedding = model.get_submodule("tok_emb")
    assert isinstance(embedding, nn.Embedding)  # the book's decoders have one
    vocab = embedding.num_embeddings
    if int(batch.tokens.max()) >= vocab:
        raise ValueError(
            f"batch must hold ids in [0, {vocab}) (the model's vocabulary), "
            f"got up to {int(batch.tokens.max())}"
        )
    m = measure(model, batch)
    prefix = m["prefix"]  # (N, H)
    best = attention_heads(model)[int(prefix.argmax())]  # heads in (N, H) order
    with masked(model, [best]):
        without = measure(model, batch)["repeat"]
    return {
        "first": float(m["first"]),
        "repeat": float(m["repeat"]),
        "chance": math.log(vocab),
        "prefix": prefix,
        "previous": m["previous"],
        "uniform_prefix": uniform_scores(batch)[1],
        "best": best,
        "best_prefix": float(prefix.max()),
        "repeat_without_best": float(without),
    }
