"""mha_book: multi-head attention from scratch in PyTorch.

The package behind the bilingual book: every page imports it, so every shape,
number and figure in the book comes from this code.

Legend used throughout: B batch, H heads, T query length, S key length,
D head dim, E = H * D embedding dim.
"""

from typing import TYPE_CHECKING

from mha_book._lazy import lazy_exports

# name -> the submodule that defines it, imported on first use (mha_book._lazy)
_EXPORTS = {
    "alibi_bias": "attention.alibi",
    "alibi_slopes": "attention.alibi",
    "flash_attention": "attention.flash",
    "online_softmax_update": "attention.flash",
    "merge_heads": "attention.heads",
    "repeat_kv": "attention.heads",
    "split_heads": "attention.heads",
    "KVCache": "attention.kv_cache",
    "kv_cache_bytes_per_token": "attention.kv_cache",
    "padded_causal_mask": "attention.mask_helpers",
    "sliding_window_mask": "attention.mask_helpers",
    "causal_mask": "attention.masks",
    "flip_mask_convention": "attention.masks",
    "padding_mask": "attention.masks",
    "MultiHeadAttention": "attention.mha",
    "LearnedPositions": "attention.positions",
    "sinusoidal_positions": "attention.positions",
    "RotaryEmbedding": "attention.rope",
    "apply_rotary": "attention.rope",
    "rotary_cos_sin": "attention.rope",
    "rotary_frequencies": "attention.rope",
    "rotate_half": "attention.rope",
    "fused_attention": "attention.scaled_dot_product",
    "scaled_dot_product_attention": "attention.scaled_dot_product",
    "ShapeTrace": "attention.trace",
    "trace_shapes": "attention.trace",
    "book_language": "book",
    "Spread": "seeds",
    "over_seeds": "seeds",
    "CharTokenizer": "lm.charlm",
    "BertEncoder": "models.bert",
    "DecoderOnlyBlock": "models.blocks",
    "CausalDecoder": "models.decoder",
    "DecoderConfig": "models.decoder",
    "DecoderLayer": "models.layers",
    "EncoderLayer": "models.layers",
    "AttentionExplorer": "viz.explorer",
    "explore": "viz.explorer",
    "plot_attention": "viz.heatmap",
}
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:
    from mha_book.attention.alibi import alibi_bias, alibi_slopes
    from mha_book.attention.flash import flash_attention, online_softmax_update
    from mha_book.attention.heads import merge_heads, repeat_kv, split_heads
    from mha_book.attention.kv_cache import KVCache, kv_cache_bytes_per_token
    from mha_book.attention.mask_helpers import padded_causal_mask, sliding_window_mask
    from mha_book.attention.masks import causal_mask, flip_mask_convention, padding_mask
    from mha_book.attention.mha import MultiHeadAttention
    from mha_book.attention.positions import LearnedPositions, sinusoidal_positions
    from mha_book.attention.rope import (
        RotaryEmbedding,
        apply_rotary,
        rotary_cos_sin,
        rotary_frequencies,
        rotate_half,
    )
    from mha_book.attention.scaled_dot_product import (
        fused_attention,
        scaled_dot_product_attention,
    )
    from mha_book.attention.trace import ShapeTrace, trace_shapes
    from mha_book.book import book_language
    from mha_book.lm.charlm import CharTokenizer
    from mha_book.models.bert import BertEncoder
    from mha_book.models.blocks import DecoderOnlyBlock
    from mha_book.models.decoder import CausalDecoder, DecoderConfig
    from mha_book.models.layers import DecoderLayer, EncoderLayer
    from mha_book.seeds import Spread, over_seeds
    from mha_book.viz.explorer import AttentionExplorer, explore
    from mha_book.viz.heatmap import plot_attention

__version__ = "0.1.0"

__all__ = [
    "AttentionExplorer",
    "BertEncoder",
    "CausalDecoder",
    "CharTokenizer",
    "DecoderConfig",
    "DecoderOnlyBlock",
    "sinusoidal_positions",
    "LearnedPositions",
    "RotaryEmbedding",
    "apply_rotary",
    "rotary_cos_sin",
    "rotary_frequencies",
    "rotate_half",
    "KVCache",
    "flash_attention",
    "fused_attention",
    "kv_cache_bytes_per_token",
    "online_softmax_update",
    "repeat_kv",
    "DecoderLayer",
    "EncoderLayer",
    "MultiHeadAttention",
    "ShapeTrace",
    "book_language",
    "Spread",
    "over_seeds",
    "causal_mask",
    "explore",
    "flip_mask_convention",
    "merge_heads",
    "padding_mask",
    "plot_attention",
    "scaled_dot_product_attention",
    "split_heads",
    "trace_shapes",
    "alibi_bias",
    "alibi_slopes",
    "padded_causal_mask",
    "sliding_window_mask",
]
