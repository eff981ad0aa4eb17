"""mha_book.explore: the payload, the validation and the HTML of the attention explorer.

The widget itself (explorer.js in a browser) is tested in tests/e2e/test_explorer.py.
"""

import json
import re
from pathlib import Path

import pytest
import torch

from mha_book import AttentionExplorer, explore
from mha_book.viz.explorer import _labels, static_asset

ROOT = Path(__file__).resolve().parents[2]


def softmax_weights(L=2, H=3, T=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.softmax(
        torch.randn(L, H, T, T, generator=g) * 3, dim=-1
    )  # (L, H, T, T)


TOKENS = ["[CLS]", "it", "was", "[SEP]"]


def embedded_json(html: str) -> dict:
    m = re.search(
        r'<script type="application/json" class="mha-explorer-data">(.*?)</script>',
        html,
        re.S,
    )
    assert m, "no JSON data in the HTML"
    return json.loads(m.group(1))


def test_payload_holds_every_weight_rounded_to_three_decimals():
    w = softmax_weights()
    explorer = explore(TOKENS, w, title="t")
    assert isinstance(explorer, AttentionExplorer)
    payload = explorer.payload
    assert payload["tokens"] == TOKENS and payload["title"] == "t"
    assert (payload["layer"], payload["head"]) == (0, 0)
    shown = torch.tensor(payload["weights"], dtype=torch.float64)  # (L, H, T, T)
    assert shown.shape == w.shape
    assert (shown - w.double()).abs().max() <= 5e-4
    assert torch.equal(shown, (shown * 1000).round() / 1000)  # three decimals
    assert repr(explorer) == "AttentionExplorer(layers=2, heads=3, tokens=4)"


def test_the_three_input_forms_give_the_same_payload():
    w = softmax_weights()  # (L, H, T, T)
    as_tensor = explore(TOKENS, w).payload
    as_list = explore(TOKENS, list(w)).payload  # L x (H, T, T)
    as_batches = explore(TOKENS, tuple(a[None] for a in w)).payload  # L x (1, H, T, T)
    assert as_tensor == as_list == as_batches


def test_the_first_view_and_all_heads():
    w = softmax_weights()
    payload = explore(TOKENS, w, layer=1, head="all").payload
    assert (payload["layer"], payload["head"]) == (1, "all")


def test_gradients_and_low_precision_are_accepted():
    w = softmax_weights().half().requires_grad_()
    shown = torch.tensor(explore(TOKENS, w).payload["weights"])
    assert (shown - w.detach().float()).abs().max() <= 5e-4


def bad(**change):
    """Arguments of explore with one of them changed."""
    args = {"tokens": TOKENS, "attentions": softmax_weights()}
    args.update(change)
    return args


w4 = softmax_weights()
nan = w4.clone()
nan[1, 2, 3, 0] = float("nan")
negative = w4.clone()
negative[0, 1, 2] = torch.tensor([1.2, -0.2, 0.0, 0.0])
unnormalised = w4.clone()
unnormalised[1, 0, 2] *= 0.9


@pytest.mark.parametrize(
    "args,error,pattern",
    [
        (bad(tokens="abcd"), TypeError, r"tokens must be a list of str.*got str"),
        (
            bad(tokens=["a", 1, "c", "d"]),
            TypeError,
            r"tokens\[1\] must be a str, got int",
        ),
        (bad(tokens=[]), ValueError, r"tokens must hold at least one token"),
        (bad(tokens=TOKENS[:3]), ValueError, r"attentions\[0\] must have shape"),
        (
            bad(attentions=w4[0]),
            ValueError,
            r"attentions must be a tensor of shape \(L, H, T, T\).*got a tensor of "
            r"shape \(3, 4, 4\)",
        ),
        (bad(attentions=w4.numpy()), TypeError, r"attentions must be a torch.Tensor"),
        (bad(attentions=[]), ValueError, r"attentions must hold at least one layer"),
        (
            bad(attentions=[w4[0], "x"]),
            TypeError,
            r"attentions\[1\] must be a torch.Tensor, got str",
        ),
        (
            bad(attentions=[w4[0], w4[1, :2]]),
            ValueError,
            r"attentions\[1\] must have shape \(H, T, T\) = \(3, 4, 4\).*"
            r"got \(2, 4, 4\)",
        ),
        (
            bad(attentions=[w4[0], w4[1, None, None]]),
            ValueError,
            r"attentions\[1\] must have shape \(H, T, T\) or \(1, H, T, T\), "
            r"got \(1, 1, 3, 4, 4\)",
        ),
        (
            bad(attentions=(w4 * 100).long()),
            TypeError,
            r"attentions\[0\] must be a floating-point tensor, got torch.int64",
        ),
        (bad(attentions=nan), ValueError, r"attentions must be finite.*\(1, 2, 3, 0\)"),
        (bad(attentions=negative), ValueError, r"non-negative.*\(0, 1, 2, 1\)"),
        (
            bad(attentions=unnormalised),
            ValueError,
            r"each row of attentions must sum to 1 within 0.001.*got 0.9 at "
            r"\(layer, head, query\) = \(1, 0, 2\)",
        ),
        (bad(layer=2), ValueError, r"layer must be in \[0, 2\), got 2"),
        (bad(layer=1.0), TypeError, r"layer must be an int, got 1.0"),
        (bad(head=3), ValueError, r"head must be in \[0, 3\) or 'all', got 3"),
        (bad(head="al"), TypeError, r"head must be an int or 'all', got 'al'"),
        (bad(title=3), TypeError, r"title must be a str or None, got int"),
    ],
)
def test_bad_input_names_the_argument(args, error, pattern):
    with pytest.raises(error, match=pattern):
        explore(args.pop("tokens"), args.pop("attentions"), **args)


def test_rows_within_the_tolerance_pass():
    w = softmax_weights()
    w[0, 0, 0] *= 1 + 5e-4  # sums to 1.0005
    explore(TOKENS, w)


def test_html_carries_the_data_the_script_and_the_style():
    explorer = explore(TOKENS, softmax_weights(), title="Ti")
    html = explorer._repr_html_()
    assert html.startswith('<div class="mha-explorer">')
    assert embedded_json(html) == explorer.wire == json.loads(explorer.json)
    shown = torch.tensor(explorer.wire["weights"], dtype=torch.float64) / 1000
    assert torch.equal(
        shown, torch.tensor(explorer.payload["weights"], dtype=torch.float64)
    )
    assert static_asset("explorer.js") in html
    assert static_asset("explorer.css") in html
    assert "<noscript>" in html


def test_html_fetches_nothing_and_the_data_cannot_end_its_script():
    tokens = ["</script><script>alert(1)</script>", "<!--", "&amp;", "b"]
    html = explore(tokens, softmax_weights())._repr_html_()
    assert not re.search(r"https?:|//[a-z]", html, re.I)  # no URL at all
    assert not re.search(r"\b(src|href)=", html)
    assert "alert(1)</script>" not in html and "<!--" not in html
    assert embedded_json(html)["tokens"] == tokens


def test_the_words_come_from_python_in_the_book_language(monkeypatch):
    monkeypatch.setenv("MHA_BOOK_LANG", "zh")
    zh = explore(TOKENS, softmax_weights()).payload["labels"]
    monkeypatch.setenv("MHA_BOOK_LANG", "en")
    en = explore(TOKENS, softmax_weights()).payload["labels"]
    assert zh.keys() == en.keys() and zh["layer"] == "层" and en["layer"] == "Layer"
    script = static_asset("explorer.js")
    code = re.sub(r"(^|\s)//.*$", "", script, flags=re.M)  # without comments
    for name, words in en.items():
        assert words not in code, f"{name}: {words!r} is written in explorer.js"
    for key in _labels().keys() - {"noscript"}:  # noscript: in the HTML itself
        assert f"labels.{key}" in script, f"explorer.js never shows labels.{key}"


def test_the_widget_files_are_package_data_and_reach_the_site():
    for name in ("explorer.js", "explorer.css"):
        assert (ROOT / "mha_book" / "viz" / "static" / name).is_file()
    with pytest.raises(ValueError, match="name must be one of"):
        static_asset("book.js")
    assert '"viz/static/*"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    conf = (ROOT / "conf.py").read_text(encoding="utf-8")
    assert 'str(ROOT / "mha_book" / "viz" / "static")' in conf  # html_static_path


def test_genuine_bfloat16_softmax_weights_are_accepted_and_bad_ones_are_not():
    """A softmax computed in bfloat16 sums to 1 only within bfloat16's rounding
    (1.002 here): such rows were refused against a fixed 1e-3."""
    scores = torch.randn(2, 7, 7, generator=torch.Generator().manual_seed(3))
    weights = torch.softmax(scores.to(torch.bfloat16), dim=-1)  # (H, T, T)
    sums = weights.double().sum(-1)
    assert (sums - 1).abs().max() > 1e-3  # what was refused
    explore(list("abcdefg"), [weights])
    with pytest.raises(ValueError, match="sum to 1 within 0.0078125"):
        explore(list("abcdefg"), [weights * 1.05])
    with pytest.raises(ValueError, match="sum to 1 within 0.001"):
        explore(list("abcdefg"), [weights.float() * 1.002])


def test_cross_attention_has_its_own_key_tokens():
    w = torch.softmax(
        torch.randn(1, 2, 3, 5), dim=-1
    )  # (L, H, T, S): 3 queries, 5 keys
    explorer = explore(["a", "b", "c"], w, key_tokens=list("vwxyz"), head=1)
    assert explorer.payload["key_tokens"] == list("vwxyz")
    assert torch.tensor(explorer.payload["weights"]).shape == (1, 2, 3, 5)
    assert (
        repr(explorer) == "AttentionExplorer(layers=1, heads=2, tokens=3, key_tokens=5)"
    )
    assert explore(["a", "b"], w[..., :2, :2].softmax(-1)).payload["key_tokens"] is None
    with pytest.raises(
        ValueError, match=r"\(H, T, S\) = \(2, 3, 4\).*S = len\(key_tokens\)"
    ):
        explore(["a", "b", "c"], w, key_tokens=list("wxyz"))
    with pytest.raises(TypeError, match=r"key_tokens\[1\] must be a str, got int"):
        explore(["a", "b", "c"], w, key_tokens=["v", 1, "x", "y", "z"])
    with pytest.raises(ValueError, match=r"\(H, T, T\) = \(2, 3, 3\)"):
        explore(["a", "b", "c"], w)  # without key_tokens, the keys are the tokens
    AttentionExplorer(explorer.payload)  # its own payload passes the checks
