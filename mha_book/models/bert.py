"""A BERT encoder made of :class:`MultiHeadAttention`, loaded from a real checkpoint.

Taught in chapter 11-pretrained-bert, with the all-MiniLM-L6-v2 checkpoint
(:mod:`mha_book.models.pretrained` finds its files). Every layer is post-norm, as in
the original BERT::

    x = norm1(x + self_attn(x, x, x, padding mask))
    x = norm2(x + linear2(gelu(linear1(x))))

The query, key, value and output projections of each layer are copied one to
one into a :class:`MultiHeadAttention`, so the attention weights this module
returns are exactly the model's. ``head_mask`` switches heads off by zeroing
their context (their D features) before the output projection.

Legend: B batch, H heads, T sequence length (S = T: self-attention), D head
dim, E = H·D (``hidden_size``), L layers, V vocabulary size.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from mha_book._checks import check_tensor, check_token_ids, fmt_shape
from mha_book.attention.mha import MultiHeadAttention
from mha_book.models.blocks import feed_forward, residual
from mha_book.models.pretrained import load_state_dict, minilm_dir

__all__ = ["BertConfig", "BertLayer", "BertEncoder"]


@dataclass(frozen=True)
class BertConfig:
    """The hyper-parameters of a BERT checkpoint, read from its ``config.json``."""

    vocab_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    max_position_embeddings: int
    type_vocab_size: int
    layer_norm_eps: float
    pad_token_id: int = 0

    @classmethod
    def from_json(cls, path: str | Path) -> BertConfig:
        """Read ``config.json``; only absolute positions and exact GELU are supported.

        Example:
            >>> cfg = BertConfig.from_json(minilm_dir() / "config.json")
            >>> cfg.num_hidden_layers, cfg.num_attention_heads, cfg.hidden_size
            (6, 12, 384)
        """
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if data.get("hidden_act", "gelu") != "gelu":
            raise ValueError(f"hidden_act must be 'gelu', got {data['hidden_act']!r}")
        if data.get("position_embedding_type", "absolute") != "absolute":
            raise ValueError(
                "position_embedding_type must be 'absolute', got "
                f"{data['position_embedding_type']!r}"
            )
        return cls(
            **{name: data[name] for name in cls.__dataclass_fields__ if name in data}
        )


class BertLayer(nn.Module):
    """One post-norm BERT layer around a :class:`MultiHeadAttention` (inference only).

    Example:
        >>> layer = BertLayer(64, 4, 256, eps=1e-12)
        >>> x = torch.randn(2, 7, 64)
        >>> y, w = layer(x, head_mask=torch.tensor([1.0, 0.0, 1.0, 1.0]))
        >>> y.shape, w.shape
        (torch.Size([2, 7, 64]), torch.Size([2, 4, 7, 7]))
    """

    def __init__(
        self, embed_dim: int, num_heads: int, ff_dim: int, *, eps: float
    ) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(embed_dim, num_heads)
        self.norm1 = nn.LayerNorm(embed_dim, eps=eps)
        self.linear1 = nn.Linear(embed_dim, ff_dim)  # E -> ff_dim
        self.linear2 = nn.Linear(ff_dim, embed_dim)  # ff_dim -> E
        self.norm2 = nn.LayerNorm(embed_dim, eps=eps)

    def forward(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        head_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Run the layer.

        Args:
            x: Input sequence.
            mask: Optional bool mask, True = may attend, broadcastable to
                ``(B, H, T, T)``.
            head_mask: Optional ``(H,)`` factors, 1 keeps a head and 0 switches it
                off: head ``h``'s context (features ``h*D:(h+1)*D`` entering
                ``out_proj``) is multiplied by ``head_mask[h]``.

        Shape:
            - x: ``(B, T, E)``
            - output: ``(B, T, E)``
            - weights: ``(B, H, T, T)``, computed before the head mask acts

        Returns:
            ``(output, weights)``.
        """
        attn_module = self.self_attn
        hook = None
        if head_mask is not None:
            check_tensor(head_mask, "head_mask")
            if head_mask.shape != (attn_module.num_heads,):
                raise ValueError(
                    f"head_mask must have shape (H,) = ({attn_module.num_heads}), "
                    f"got {fmt_shape(head_mask.shape)}"
                )
            # (H,) -> (E,): every one of head h's D features gets head_mask[h]
            scale = head_mask.to(x.device, x.dtype).repeat_interleave(
                attn_module.head_dim
            )  # (E,)
            hook = attn_module.out_proj.register_forward_pre_hook(
                lambda _module, args: (args[0] * scale,)
            )  # merged context (B, T, E)

        def self_attention(h):
            return attn_module(h, h, h, mask)  # (B, T, E), (B, H, T, T)

        def ff(h):  # exact (erf) GELU, as BERT
            return feed_forward(h, self.linear1, self.linear2, nn.functional.gelu)

        try:  # post-norm: LayerNorm after each residual sum; no dropout (inference)
            x, weights = residual(x, self_attention, self.norm1, norm_first=False)
        finally:
            if hook is not None:
                hook.remove()
        x, _ = residual(x, ff, self.norm2, norm_first=False)
        return x, weights


class BertEncoder(nn.Module):
    """BERT embeddings and L :class:`BertLayer` (no pooler), for inference.

    Args:
        config: The checkpoint's hyper-parameters.

    Example:
        >>> from mha_book.models.pretrained import load_tokenizer, tokenize
        >>> encoder = BertEncoder.from_pretrained()
        >>> batch = tokenize(load_tokenizer(), ["Heads look at words.", "Attention!"])
        >>> hidden, attentions = encoder(batch["input_ids"], batch["attention_mask"])
        >>> hidden.shape, len(attentions), attentions[0].shape
        (torch.Size([2, 7, 384]), 6, torch.Size([2, 12, 7, 7]))
    """

    def __init__(self, config: BertConfig) -> None:
        super().__init__()
        self.config = config
        E = config.hidden_size
        self.word_embeddings = nn.Embedding(
            config.vocab_size, E, padding_idx=config.pad_token_id
        )
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, E)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, E)
        self.norm = nn.LayerNorm(E, eps=config.layer_norm_eps)
        self.layers = nn.ModuleList(
            BertLayer(
                E,
                config.num_attention_heads,
                config.intermediate_size,
                eps=config.layer_norm_eps,
            )
            for _ in range(config.num_hidden_layers)
        )

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
        *,
        head_mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        """Contextual token vectors and the attention weights of every layer.

        Args:
            input_ids: Token ids from :func:`~mha_book.models.pretrained.tokenize`.
            attention_mask: 1 (or True) at real tokens, 0 at padding; default all ones.
            token_type_ids: Segment ids; default all zeros.
            head_mask: Optional ``(L, H)`` factors, see :meth:`BertLayer.forward`.

        Shape:
            - input_ids, attention_mask, token_type_ids: ``(B, T)``
            - hidden: ``(B, T, E)``
            - attentions: L tensors ``(B, H, T, T)``; padded keys get weight 0

        Returns:
            ``(hidden, attentions)``.
        """
        check_token_ids(input_ids, "input_ids", 2, "(B, T)", self.config.vocab_size)
        B, T = input_ids.shape
        if T > self.config.max_position_embeddings:
            raise ValueError(
                f"input_ids must have at most {self.config.max_position_embeddings} "
                f"tokens, got shape {fmt_shape(input_ids.shape)}"
            )
        L, H = self.config.num_hidden_layers, self.config.num_attention_heads
        if head_mask is not None:
            check_tensor(head_mask, "head_mask")
        if head_mask is not None and tuple(head_mask.shape) != (L, H):
            raise ValueError(
                f"head_mask must have shape (L, H) = ({L}, {H}), "
                f"got {fmt_shape(head_mask.shape)}"
            )
        for name, t in (
            ("attention_mask", attention_mask),
            ("token_type_ids", token_type_ids),
        ):
            if t is not None:
                check_tensor(t, name)
            if t is not None and tuple(t.shape) != (B, T):
                raise ValueError(
                    f"{name} must have the shape of input_ids (B, T) = "
                    f"{fmt_shape((B, T))}, got {fmt_shape(t.shape)}"
                )
        if token_type_ids is not None:
            types = self.config.type_vocab_size
            check_token_ids(
                token_type_ids, "token_type_ids", 2, "(B, T)", types, "type_vocab_size"
            )
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(input_ids)
        positions = torch.arange(T, device=input_ids.device)  # (T,)
        x = (
            self.word_embeddings(input_ids)
            + self.token_type_embeddings(token_type_ids)
            + self.position_embeddings(positions)
        )  # (B, T, E)
        x = self.norm(x)
        mask = None  # (B, T) -> (B, 1, 1, S), True = may attend
        if attention_mask is not None:
            mask = attention_mask.bool()[:, None, None, :]
        attentions = []
        for i, layer in enumerate(self.layers):
            x, weights = layer(x, mask, None if head_mask is None else head_mask[i])
            attentions.append(weights)  # (B, H, T, T)
        return x, tuple(attentions)

    @classmethod
    def from_pretrained(cls, path: str | Path | None = None) -> BertEncoder:
        """Build the encoder from ``config.json``; copy ``model.safetensors`` into it.

        Every parameter is copied exactly (strict loading); the checkpoint's
        pooler and its ``position_ids`` buffer are not used.

        Args:
            path: Folder with ``config.json`` and ``model.safetensors``;
                default :func:`minilm_dir`.

        Returns:
            The encoder, in eval mode.
        """
        folder = minilm_dir() if path is None else Path(path)
        encoder = cls(BertConfig.from_json(folder / "config.json"))
        encoder.load_state_dict(load_state_dict(folder), strict=True)
        return encoder.eval()
