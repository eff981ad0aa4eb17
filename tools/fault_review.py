"""Feed bad and edge inputs to the public API, one argument at a time, and sort the outcomes.

Every public entry point gets a valid call (its baseline); then each argument
in turn is replaced by values of the wrong type, dtype, rank, size, sign or
finiteness, and by edge values that must work (numpy ints, empty sizes). Each
call ends in one of these classes:

- ``named error``: a ``ValueError``/``TypeError`` whose message names the
  argument (or the tensor it must agree with). The goal for bad input.
- ``result``: accepted; the output is finite wherever the inputs were.
- ``NaN from non-finite input``: NaN or inf went in and NaN came out, as in
  torch itself.
- ``unnamed error``, ``other exception``, ``NaN from finite input`` and, for
  a damaged checkpoint that loads, ``silently changed weights``: defects.

``python tools/fault_review.py`` prints the counts per class and every defect;
``tests/test_fault_review.py`` fails on any defect. The hypothesis tests in
``tests/test_bad_input.py`` explore random shapes; this catalogue is fixed, so
its figures can be compared from run to run.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy
import torch

import mha_book
from mha_book.attention.kv_cache import KVCache
from mha_book.lm import charlm, checkpoint, training

DEFECTS = (
    "unnamed error",
    "other exception",
    "NaN from finite input",
    "silently changed weights",
)


@dataclass
class Outcome:
    api: str
    arg: str
    variant: str
    kind: str
    detail: str = ""


@dataclass
class Api:
    """A public callable, the arguments of a valid call, and what to bend."""

    name: str
    call: Callable[..., object]
    baseline: Callable[[], dict[str, object]]  # fresh valid arguments per call
    names: dict[str, tuple[str, ...]] | None = None  # argument -> names it may use


def _float_variants(x: torch.Tensor) -> Iterator[tuple[str, object]]:
    yield "None", None
    yield "str", "x"
    yield "nested list", x.tolist()
    yield "one dim fewer", x[0]
    yield "one dim more", x[None]
    yield "last dim + 1", torch.cat([x, x[..., :1]], dim=-1)
    yield "first dim + 1", torch.cat([x, x[:1]], dim=0)
    yield "float64", x.double()
    yield "int64", x.long()
    yield "bool", x > 0
    yield "empty first dim", x[:0]
    nan = x.clone()
    nan.view(-1)[0] = float("nan")
    yield "contains NaN", nan
    inf = x.clone()
    inf.view(-1)[0] = float("inf")
    yield "contains inf", inf


def _mask_variants(m: torch.Tensor) -> Iterator[tuple[str, object]]:
    yield "str", "mask"
    yield "float", m.float()
    yield "int64", m.long()
    yield "last dim + 1", torch.cat([m, m[..., :1]], dim=-1)
    yield "rank 3 (B, T, S)", m.reshape(-1, *m.shape[-2:])[:2]
    yield "(B, S) with B != T", m.reshape(-1, m.shape[-1])[:1].expand(7, -1)
    yield "all False", torch.zeros_like(m)


def _id_variants(ids: torch.Tensor, vocab: int) -> Iterator[tuple[str, object]]:
    yield "None", None
    yield "float", ids.float()
    yield "id = vocab size", torch.full_like(ids, vocab)
    yield "id = -1", torch.full_like(ids, -1)
    yield "one dim fewer", ids[0]
    yield "one dim more", ids[None]
    yield "empty", ids[..., :0]


def _int_variants(n: int) -> Iterator[tuple[str, object]]:
    yield "0", 0
    yield "-1", -1
    yield "float", float(n) + 0.5
    yield "bool True", True
    yield "str", str(n)
    yield "None", None
    yield "numpy.int64 (valid)", numpy.int64(n)


def _float_arg_variants(p: float) -> Iterator[tuple[str, object]]:
    yield "nan", float("nan")
    yield "inf", float("inf")
    yield "-1.0", -1.0
    yield "str", "0.5"
    yield "bool True", True
    yield "numpy.float64 (valid)", numpy.float64(p)


def _variants(value: object, api: Api, arg: str) -> Iterator[tuple[str, object]]:
    if isinstance(value, torch.Tensor) and value.dtype == torch.bool:
        return _mask_variants(value)
    if isinstance(value, torch.Tensor) and not value.is_floating_point():
        return _id_variants(value, 11)
    if isinstance(value, torch.Tensor):
        return _float_variants(value)
    if isinstance(value, bool):
        return iter([("int 1", 1), ("None", None), ("str", "yes")])
    if isinstance(value, int):
        return _int_variants(value)
    if isinstance(value, float):
        return _float_arg_variants(value)
    if isinstance(value, str):
        return iter([("int", 1), ("unknown name", "no-such-choice")])
    if is_dataclass(value):  # a config: its fields as a dict are not one
        return iter([("dict of its fields", asdict(value)), ("None", None)])
    return iter(())


def _qkv(shape=(2, 3, 4, 8), dtype=torch.float32):
    torch.manual_seed(0)
    return {
        name: torch.randn(shape, dtype=dtype) for name in ("q", "k", "v")
    }  # (B, H, T, D) each


def _module_args(**extra):
    torch.manual_seed(0)
    x = torch.randn(2, 5, 12)  # (B, T, E)
    return {"query": x, "key": x, "value": x, **extra}


def _decoder() -> mha_book.CausalDecoder:
    torch.manual_seed(0)
    return mha_book.CausalDecoder(mha_book.DecoderConfig(11, 8, 2, 1, 16)).eval()


def _checkpoint_path(folder: Path) -> Path:
    """A valid checkpoint in ``folder``."""
    tokenizer = mha_book.CharTokenizer.from_text("abcdefghijk")
    return checkpoint.save_checkpoint(folder / "model.pt", _decoder(), tokenizer)


def _position_apis() -> list[Api]:
    """Learned and rotary positions, and the module with rope."""
    rope = mha_book.RotaryEmbedding(8, rotary_dim=4)
    rope_mha = mha_book.MultiHeadAttention(
        12, 3, num_kv_heads=1, rope=mha_book.RotaryEmbedding(4)
    )
    learned = mha_book.LearnedPositions(8, 6)
    x = torch.randn(2, 3, 5, 8)  # (B, H, T, D)
    return [
        Api(
            "LearnedPositions()",
            mha_book.LearnedPositions,
            lambda: {"max_len": 8, "embed_dim": 6},
        ),
        Api(
            "LearnedPositions.forward",
            learned,
            lambda: {"x": torch.randn(2, 5, 6), "offset": 2},
        ),
        Api(
            "RotaryEmbedding()",
            mha_book.RotaryEmbedding,
            lambda: {"head_dim": 8, "base": 10000.0, "rotary_dim": 4},
        ),
        Api(
            "RotaryEmbedding.__call__",
            rope,
            lambda: {"q": x.clone(), "k": x[:, :1].clone(), "offset": 2},
            {"q": ("q", "k"), "k": ("q", "k")},
        ),
        Api(
            "apply_rotary",
            mha_book.apply_rotary,
            lambda: {
                "x": x.clone(),
                "positions": torch.arange(5),
                "base": 10000.0,
                "rotary_dim": 4,
            },
            {"x": ("x",), "positions": ("positions",)},
        ),
        Api("rotate_half", mha_book.rotate_half, lambda: {"x": x.clone()}),
        Api(
            "rotary_frequencies",
            mha_book.rotary_frequencies,
            lambda: {"rotary_dim": 8, "base": 10000.0},
        ),
        Api(
            "rotary_cos_sin",
            mha_book.rotary_cos_sin,
            lambda: {"positions": torch.arange(5), "rotary_dim": 8, "base": 100.0},
        ),
        Api(
            "MultiHeadAttention.forward (rope)",
            rope_mha.eval(),
            lambda: _module_args(mask=mha_book.causal_mask(5), need_weights=True),
            {a: ("query", "key", "value") for a in ("query", "key", "value")},
        ),
        Api(
            "MultiHeadAttention.forward_step (rope)",
            lambda **kw: rope_mha.forward_step(kv_cache=KVCache(), **kw),
            lambda: {"x": torch.randn(2, 5, 12), "need_weights": True},
        ),
    ]


def catalogue() -> list[Api]:
    """Every public entry point with a valid baseline call."""
    qk_names = {a: ("q", "k", "v") for a in ("q", "k", "v")}
    mha = mha_book.MultiHeadAttention(12, 3).eval()
    step_mha = mha_book.MultiHeadAttention(12, 3).eval()
    encoder = mha_book.EncoderLayer(12, 3, 24).eval()
    decoder_layer = mha_book.DecoderLayer(12, 3, 24).eval()
    decoder = _decoder()
    tokenizer = mha_book.CharTokenizer.from_text("abcdefghijk")
    ids = torch.randint(0, 11, (2, 6))  # (B, T)
    corpus = torch.randint(0, 11, (200,))
    return [
        Api(
            "scaled_dot_product_attention",
            mha_book.scaled_dot_product_attention,
            lambda: {
                **_qkv(),
                "mask": mha_book.causal_mask(4),
                "bias": torch.randn(4, 4),
                "dropout_p": 0.1,
                "scale": 0.5,
            },
            qk_names,
        ),
        Api(
            "fused_attention",
            mha_book.fused_attention,
            lambda: {
                **_qkv(),
                "mask": mha_book.causal_mask(4),
                "bias": torch.randn(4, 4),
                "scale": 0.5,
            },
            qk_names,
        ),
        Api(
            "flash_attention",
            mha_book.flash_attention,
            lambda: {
                **_qkv(),
                "mask": mha_book.causal_mask(4),
                "bias": torch.randn(4, 4),
                "block_size": 2,
                "scale": 0.5,
            },
            qk_names,
        ),
        Api(
            "split_heads",
            mha_book.split_heads,
            lambda: {"x": torch.randn(2, 5, 12), "num_heads": 3},
        ),
        Api(
            "merge_heads", mha_book.merge_heads, lambda: {"x": torch.randn(2, 3, 5, 4)}
        ),
        Api(
            "repeat_kv",
            mha_book.repeat_kv,
            lambda: {"x": torch.randn(2, 3, 5, 4), "n_rep": 2},
        ),
        Api("causal_mask", mha_book.causal_mask, lambda: {"T": 4, "S": 6}),
        Api(
            "padding_mask",
            mha_book.padding_mask,
            lambda: {"lengths": [3, 5], "max_len": 5},
        ),
        Api(
            "sliding_window_mask",
            mha_book.sliding_window_mask,
            lambda: {"T": 4, "window": 2, "S": 6},
        ),
        Api(
            "padded_causal_mask",
            mha_book.padded_causal_mask,
            lambda: {"lengths": [3, 5], "max_len": 5, "side": "left"},
        ),
        Api("alibi_slopes", mha_book.alibi_slopes, lambda: {"num_heads": 6}),
        Api(
            "alibi_bias",
            mha_book.alibi_bias,
            lambda: {"num_heads": 4, "T": 3, "S": 5},
        ),
        Api(
            "flip_mask_convention",
            mha_book.flip_mask_convention,
            lambda: {"mask": mha_book.causal_mask(4)},
        ),
        Api(
            "MultiHeadAttention()",
            mha_book.MultiHeadAttention,
            lambda: {
                "embed_dim": 12,
                "num_heads": 3,
                "num_kv_heads": 3,
                "dropout": 0.1,
                "kdim": 6,
                "vdim": 6,
            },
        ),
        Api(
            "MultiHeadAttention.forward",
            mha,
            lambda: _module_args(
                mask=mha_book.causal_mask(5),
                key_mask=torch.ones(2, 5, dtype=torch.bool),
                bias=torch.randn(5, 5),
                need_weights=True,
            ),
            {a: ("query", "key", "value") for a in ("query", "key", "value")},
        ),
        Api(
            "MultiHeadAttention.forward_step",
            lambda **kw: step_mha.forward_step(kv_cache=KVCache(), **kw),
            lambda: {
                "x": torch.randn(2, 5, 12),
                "mask": mha_book.causal_mask(5),
                "key_mask": torch.ones(2, 5, dtype=torch.bool),
                "bias": torch.randn(5, 5),
                "need_weights": True,
            },
        ),
        Api(
            "KVCache.update",
            lambda **kw: KVCache().update(**kw),
            lambda: {"k": torch.randn(2, 3, 1, 4), "v": torch.randn(2, 3, 1, 4)},
            {"k": ("k", "v"), "v": ("k", "v")},
        ),
        Api(
            "kv_cache_bytes_per_token",
            mha_book.kv_cache_bytes_per_token,
            lambda: {
                "num_layers": 2,
                "num_kv_heads": 4,
                "head_dim": 8,
                "bytes_per_element": 2,
            },
        ),
        Api(
            "EncoderLayer.forward",
            encoder,
            lambda: {"x": torch.randn(2, 5, 12), "mask": mha_book.causal_mask(5)},
        ),
        Api(
            "DecoderLayer.forward",
            decoder_layer,
            lambda: {
                "x": torch.randn(2, 5, 12),
                "memory": torch.randn(2, 7, 12),
                "self_mask": mha_book.causal_mask(5),
                "memory_mask": torch.ones(2, 1, 1, 7, dtype=torch.bool),
            },
            {"x": ("x", "memory"), "memory": ("x", "memory")},
        ),
        Api(
            "sinusoidal_positions",
            mha_book.sinusoidal_positions,
            lambda: {"max_len": 8, "embed_dim": 6},
        ),
        Api(
            "DecoderConfig()",
            mha_book.DecoderConfig,
            lambda: {
                "vocab_size": 11,
                "embed_dim": 8,
                "num_heads": 2,
                "num_layers": 1,
                "max_len": 16,
                "dropout": 0.1,
                "positions": "learned",
            },
        ),
        Api(
            "CausalDecoder()",
            mha_book.CausalDecoder,
            lambda: {"config": mha_book.DecoderConfig(11, 8, 2, 1, 16)},
        ),
        Api(
            "CausalDecoder.forward",
            decoder,
            lambda: {"idx": ids.clone(), "need_weights": True},
        ),
        Api(
            "CausalDecoder.generate",
            decoder.generate,
            lambda: {"idx": ids.clone(), "max_new_tokens": 3, "temperature": 0.8},
        ),
        Api(
            "CharTokenizer.encode",
            tokenizer.encode,
            lambda: {"text": "abc"},
        ),
        Api(
            "CharTokenizer.decode",
            tokenizer.decode,
            lambda: {"ids": torch.tensor([0, 1, 2])},
        ),
        Api(
            "get_batch",
            charlm.get_batch,
            lambda: {"ids": corpus.clone(), "batch_size": 4, "block_size": 8},
        ),
        Api(
            "evaluate",
            lambda **kw: charlm.evaluate(decoder, **kw),
            lambda: {"ids": corpus.clone(), "block_size": 8, "batch_size": 4},
        ),
        Api(
            "lm_loss",
            charlm.lm_loss,
            lambda: {
                "logits": torch.randn(2, 6, 11),
                "targets": torch.randint(0, 11, (2, 6)),
            },
            {"logits": ("logits", "targets"), "targets": ("logits", "targets")},
        ),
        Api(
            "split_ids",
            charlm.split_ids,
            lambda: {"ids": corpus.clone(), "val_fraction": 0.1},
        ),
        Api(
            "sample",
            lambda **kw: training.sample(decoder, tokenizer, **kw),
            lambda: {"prompt": "ab", "num_chars": 3, "temperature": 0.8},
        ),
        Api(
            "plot_attention",
            mha_book.plot_attention,
            lambda: {"weights": torch.rand(2, 3, 3), "ncols": 2},
        ),
        Api(
            "explore",
            mha_book.explore,
            lambda: {
                "tokens": ["a", "b", "c"],
                "attentions": torch.softmax(torch.randn(2, 3, 3, 3), dim=-1),
                "title": "t",
                "layer": 1,
                "head": 2,
            },
        ),
        *_position_apis(),
    ]


def _nan_in(result: object) -> bool:
    tensors = result if isinstance(result, (tuple, list)) else (result,)
    return any(
        isinstance(t, torch.Tensor) and t.is_floating_point() and t.isnan().any()
        for t in tensors
    )


def _finite(value: object) -> bool:
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        return bool(value.isfinite().all())
    if isinstance(value, float):
        return value == value and abs(value) != float("inf")
    return True


def _names_argument(message: str, names: tuple[str, ...]) -> bool:
    return any(re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", message) for n in names)


def run_case(api: Api, arg: str, variant: str, value: object) -> Outcome:
    kwargs = api.baseline()
    kwargs[arg] = value
    names = (api.names or {}).get(arg, (arg,))
    try:
        result = api.call(**kwargs)
    # FileNotFoundError is Python's own error for a missing file: named if it
    # names the file
    except (ValueError, TypeError, FileNotFoundError) as err:
        message = str(err)
        kind = "named error" if _names_argument(message, names) else "unnamed error"
        return Outcome(api.name, arg, variant, kind, f"{type(err).__name__}: {message}")
    except Exception as err:  # noqa: BLE001  (sorting every outcome is the point)
        return Outcome(api.name, arg, variant, "other exception", repr(err)[:200])
    finally:
        plt.close("all")  # plot_attention's figures
    if _nan_in(result):
        finite = all(_finite(v) for v in kwargs.values())
        kind = "NaN from finite input" if finite else "NaN from non-finite input"
        return Outcome(api.name, arg, variant, kind)
    return Outcome(api.name, arg, variant, "result")


def run_all(flips: int = 64) -> list[Outcome]:
    outcomes = []
    for api in catalogue():
        for arg, value in api.baseline().items():
            for variant, bad in _variants(value, api, arg):
                outcomes.append(run_case(api, arg, variant, bad))
    with tempfile.TemporaryDirectory(prefix="mha_book_faults_") as folder:
        outcomes.extend(_checkpoint_faults(Path(folder), flips))
    return outcomes


def _loader(file_name: str) -> Api:
    """load_checkpoint as an entry point whose errors must name ``file_name``."""
    names = {"path": (file_name,)}
    return Api("load_checkpoint", checkpoint.load_checkpoint, lambda: {}, names)


def _checkpoint_faults(folder: Path, flips: int = 64) -> list[Outcome]:
    """Damaged checkpoint files: each must fail with the file's name.

    A flipped byte may also land where it changes nothing (zip padding, say):
    then the load must give the saved weights back, bit for bit.
    """
    good = _checkpoint_path(folder)
    data = good.read_bytes()
    damage = {
        "truncated": data[: len(data) // 2],
        "empty": b"",
        "not a checkpoint": b"hello",
    }
    step = max(1, len(data) // flips) if flips else 1  # 0: every byte
    for pos in range(0, len(data), step):
        flipped = data[:pos] + bytes([data[pos] ^ 1]) + data[pos + 1 :]
        damage[f"byte {pos} flipped"] = flipped
    saved = checkpoint.load_checkpoint(good)[0].state_dict()
    outcomes = []
    for variant, content in damage.items():
        path = good.with_name(f"{variant.replace(' ', '-')}.pt")
        path.write_bytes(content)
        outcome = run_case(_loader(path.name), "path", variant, path)
        if outcome.kind == "result":
            loaded = checkpoint.load_checkpoint(path)[0].state_dict()
            if not all(torch.equal(loaded[k], w) for k, w in saved.items()):
                outcome.kind = "silently changed weights"
        outcomes.append(outcome)
    missing = good.with_name("missing.pt")
    outcomes.append(run_case(_loader(missing.name), "path", "missing file", missing))
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="list every outcome")
    parser.add_argument(
        "--flips",
        type=int,
        default=64,
        help="checkpoint bytes to flip, spread evenly (0: every byte, ~20 s)",
    )
    args = parser.parse_args(argv)
    outcomes = run_all(args.flips)
    counts = Counter(o.kind for o in outcomes)
    apis = len({o.api for o in outcomes})
    print(f"{len(outcomes)} inputs to {apis} public entry points")
    for kind, n in counts.most_common():
        print(f"  {n:4d}  {kind}")
    shown = outcomes if args.all else [o for o in outcomes if o.kind in DEFECTS]
    for o in shown:
        print(f"{o.kind:26s} {o.api}({o.arg}={o.variant}) {o.detail}")
    return 1 if any(o.kind in DEFECTS for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
