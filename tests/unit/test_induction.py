"""mha_book.lm.induction: the repeated-segment task, the attention-only model,
the two head scores, the runs' storage and the probes of trained decoders."""

import math

import pytest
import torch

from mha_book.lm.heads.masking import attention_heads, masked
from mha_book.lm.induction.measures import (
    copy_losses,
    measure,
    prefix_matching_scores,
    previous_token_scores,
    uniform_scores,
)
from mha_book.lm.induction.model import AttentionOnlyConfig, AttentionOnlyDecoder
from mha_book.lm.induction.natural import probe_decoder, repeated_characters
from mha_book.lm.induction.runs import head_roles, phase_change_step
from mha_book.lm.induction.task import (
    InductionBatch,
    InductionTask,
    copy_masks,
    induction_batch,
)
from mha_book.lm.induction.train import TrainedInduction, train_induction

TASK = InductionTask(vocab_size=16, seq_len=20, segment_len=5)


def test_the_repeat_is_where_the_batch_says_and_the_distance_varies():
    b = induction_batch(TASK, 400, torch.Generator().manual_seed(0))
    distance = b.second - b.first
    assert int(distance.min()) >= TASK.segment_len
    assert int((b.second + TASK.segment_len).max()) <= TASK.seq_len
    assert set(distance.tolist()) == set(TASK.distances)  # every distance drawn
    for row, a, r in zip(b.tokens, b.first.tolist(), b.second.tolist()):
        assert torch.equal(row[a : a + 5], row[r : r + 5])


def test_copy_masks_mark_the_positions_that_predict_the_segment():
    b = induction_batch(TASK, 50, torch.Generator().manual_seed(1))
    first, repeat = copy_masks(b)
    assert first.sum(1).tolist() == repeat.sum(1).tolist() == [4] * 50
    for i in range(50):
        where = repeat[i].nonzero()[:, 0]
        # the token after each marked position is the repeat's 2nd..L-th token
        nxt = b.tokens[i, where + 1]
        start = int(b.first[i])
        assert torch.equal(nxt, b.tokens[i, start + 1 : start + 5])
        assert int(where[0]) == int(b.second[i])


def test_previous_token_score_on_hand_built_patterns():
    T = 6
    previous = torch.zeros(T, T)
    previous[0, 0] = 1.0
    previous[torch.arange(1, T), torch.arange(T - 1)] = 1.0  # i -> i - 1
    uniform = torch.tril(torch.ones(T, T))
    uniform = uniform / uniform.sum(-1, keepdim=True)
    w = torch.stack([previous, torch.eye(T), uniform])[None]  # (1, 3, T, T)
    scores = previous_token_scores(w)
    b = InductionBatch(
        torch.zeros(1, T, dtype=torch.long), *torch.tensor([[0], [3]]), 3
    )
    assert scores[:2].tolist() == [1.0, 0.0]
    assert scores[2].item() == pytest.approx(uniform_scores(b)[0])


def test_prefix_matching_score_finds_the_token_after_the_earlier_copy():
    b = induction_batch(TASK, 8, torch.Generator().manual_seed(2))
    B, T = b.tokens.shape
    induction = torch.zeros(B, 1, T, T)
    shifted = torch.zeros(B, 1, T, T)  # one key too early: the copy itself
    for i, (a, r) in enumerate(zip(b.first.tolist(), b.second.tolist())):
        for k in range(TASK.segment_len - 1):
            induction[i, 0, r + k, a + k + 1] = 1.0
            shifted[i, 0, r + k, a + k] = 1.0
    w = torch.cat([induction, shifted], 1)  # (B, 2, T, T)
    assert prefix_matching_scores(w, b).tolist() == [1.0, 0.0]


def test_untrained_model_scores_near_uniform_and_loses_near_chance():
    torch.manual_seed(0)
    model = AttentionOnlyDecoder(AttentionOnlyConfig(16, 32, 2, 2, 20))
    b = induction_batch(TASK, 64, torch.Generator().manual_seed(3))
    m = measure(model, b)
    previous, prefix = uniform_scores(b)
    assert torch.allclose(m["previous"], torch.tensor(previous).float(), atol=0.05)
    assert torch.allclose(m["prefix"], torch.tensor(prefix).float(), atol=0.05)
    for name in ("first", "repeat"):
        assert abs(float(m[name]) - math.log(16)) < 0.4


def test_copy_losses_match_a_cross_entropy_by_hand():
    torch.manual_seed(1)
    model = AttentionOnlyDecoder(AttentionOnlyConfig(16, 16, 2, 1, 20)).eval()
    b = induction_batch(TASK, 4, torch.Generator().manual_seed(4))
    out = copy_losses(model, b)
    with torch.no_grad():
        logits, _ = model(b.tokens)
    i, k = 2, 1
    t = int(b.second[i]) + k  # predicts the repeat's token k + 2
    by_hand = torch.nn.functional.cross_entropy(logits[:, t][i], b.tokens[i, t + 1])
    losses = [
        torch.nn.functional.cross_entropy(
            logits[j, int(b.second[j]) + k], b.tokens[j, int(b.second[j]) + k + 1]
        )
        for j in range(4)
    ]
    assert float(out["repeat"][k]) == pytest.approx(float(sum(losses) / 4), abs=1e-5)
    assert float(by_hand) == pytest.approx(float(losses[i]))


def test_silencing_every_head_leaves_no_context_and_gates_are_undone():
    torch.manual_seed(2)
    model = AttentionOnlyDecoder(AttentionOnlyConfig(16, 16, 2, 2, 20)).eval()
    tokens = induction_batch(TASK, 3).tokens
    with masked(model, attention_heads(model)):
        silenced, _ = model(tokens)
    # no head: each position's logits depend only on its own token and place
    other = tokens.clone()
    other[:, :5] = (other[:, :5] + 1) % 16
    with masked(model, attention_heads(model)):
        changed, _ = model(other)
    assert torch.allclose(silenced[:, 5:], changed[:, 5:], atol=1e-6)
    full, _ = model(tokens)
    assert not torch.allclose(full, silenced)
    assert torch.equal(model(tokens)[0], full)  # the gates are gone after the block


def test_a_one_layer_models_keys_hold_nothing_of_the_previous_token():
    torch.manual_seed(3)
    model = AttentionOnlyDecoder(AttentionOnlyConfig(16, 16, 2, 2, 20)).eval()
    seen = {}
    hooks = [
        layer.attn.k_proj.register_forward_hook(
            lambda mod, args, out, n=n: seen.__setitem__(n, out)
        )
        for n, layer in enumerate(model.layers)
    ]
    tokens = induction_batch(TASK, 2).tokens
    model(tokens)
    keys = dict(seen)
    other = tokens.clone()
    other[:, 6] = (other[:, 6] + 3) % 16  # change the token before key 7
    model(other)
    for h in hooks:
        h.remove()
    assert torch.equal(keys[0][:, 7], seen[0][:, 7])  # layer 0: same key
    assert not torch.allclose(keys[1][:, 7], seen[1][:, 7])  # layer 1: changed


def test_training_stores_snapshots_and_loads_them_back(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_BOOK_ARTIFACTS", str(tmp_path))
    config = AttentionOnlyConfig(16, 16, 2, 2, 20)
    run, loaded = train_induction(config, TASK, steps=6, batch_size=4, every=3)
    again, loaded_again = train_induction(config, TASK, steps=6, batch_size=4, every=3)
    assert (loaded, loaded_again) == (False, True)
    assert run.snapshots["step"].tolist() == [0, 3, 6]
    assert run.snapshots["previous"].shape == (3, 2, 2)
    for name, value in run.snapshots.items():
        assert torch.equal(value, again.snapshots[name])
    assert again.losses == run.losses and again.task == TASK


def test_phase_change_step_and_head_roles_on_made_up_snapshots():
    snaps = {
        "step": torch.tensor([0, 10, 20, 30, 40]),
        "repeat": torch.tensor([2.9, 2.7, 2.6, 1.2, 0.8]),
        "previous": torch.tensor([[[0.1, 0.6], [0.1, 0.1]]] * 5),
        "prefix": torch.tensor([[[0.0, 0.0], [0.7, 0.1]]] * 5),
    }
    run = TrainedInduction(None, TASK, [], snaps, 0, 0.0)  # type: ignore[arg-type]
    # halfway between log 16 = 2.77 and 0.8 is 1.79: first below at step 30
    assert phase_change_step(run) == 30
    assert head_roles(run) == {
        "previous-token": ("layers.0.attn", 1),
        "induction": ("layers.1.attn", 0),
        "control": ("layers.0.attn", 0),
    }
    flat = {**snaps, "repeat": torch.tensor([2.9, 2.8, 2.8, 2.75, 2.72])}
    assert phase_change_step(TrainedInduction(None, TASK, [], flat, 0, 0.0)) is None


def test_probe_decoder_on_a_causal_decoder():
    from mha_book.models.decoder import CausalDecoder, DecoderConfig

    torch.manual_seed(4)
    model = CausalDecoder(DecoderConfig(30, 16, 2, 2, max_len=64)).eval()
    batch = repeated_characters(30, num_sequences=8)
    out = probe_decoder(model, batch)
    assert out["prefix"].shape == (2, 2) and out["chance"] == pytest.approx(
        math.log(30)
    )
    assert out["best_prefix"] == pytest.approx(float(out["prefix"].max()))
    assert abs(out["best_prefix"] - out["uniform_prefix"]) < 0.05  # untrained
    with pytest.raises(ValueError, match=r"batch must hold ids in \[0, 20\)"):
        probe_decoder(CausalDecoder(DecoderConfig(20, 16, 2, 1, max_len=64)), batch)


@pytest.mark.parametrize(
    "make, match",
    [
        (
            lambda: InductionTask(16, 10, 6),
            r"segment_len must be at most seq_len / 2 = 5",
        ),
        (
            lambda: InductionTask(1, 10, 3),
            r"vocab_size and segment_len must be at least 2",
        ),
        (
            lambda: InductionTask(16, 20, 5, min_distance=3),
            r"min_distance must be in .* = \[5, 15\], got 3",
        ),
        (
            lambda: AttentionOnlyConfig(16, 30, 4),
            r"num_heads must divide embed_dim = 30",
        ),
        (lambda: AttentionOnlyConfig(16, 30, 10, positions="rope"), r"even head dim"),
        (
            lambda: AttentionOnlyConfig(16, positions="alibi"),
            r"positions must be one of",
        ),
        (
            lambda: AttentionOnlyDecoder(AttentionOnlyConfig(8, 8, 2, 1, 4))(
                torch.zeros(1, 5, dtype=torch.long)
            ),
            r"idx must be at most max_len = 4 tokens long, got T = 5",
        ),
        (
            lambda: previous_token_scores(torch.zeros(1, 2, 3, 4)),
            r"weights must be \(B, H, T, T\), got \(1, 2, 3, 4\)",
        ),
        (
            lambda: train_induction(AttentionOnlyConfig(16, max_len=12), TASK, steps=1),
            r"config.max_len must be at least task.seq_len = 20, got 12",
        ),
    ],
)
def test_bad_input_names_the_argument(make, match):
    with pytest.raises(ValueError, match=match):
        make()
