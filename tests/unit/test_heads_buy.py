"""mha_book.lm.heads: the recall task, its model, the sweeps' storage and pruning."""

import pytest
import torch
from torch import nn

from mha_book.attention.mha import MultiHeadAttention
from mha_book.lm.heads.masking import attention_heads, head_gates, masked
from mha_book.lm.heads.measures import (
    ablation_accuracies,
    equal_parameters,
    numerical_rank,
    retrieval_shares,
    score_ranks,
)
from mha_book.lm.heads.pruning import (
    head_importance,
    pruning_curve,
    pruning_study,
    random_order,
)
from mha_book.lm.heads.recall import RecallConfig, RecallModel, cache_numbers_per_token
from mha_book.lm.heads.task import RecallTask, recall_batch
from mha_book.lm.heads.train import recall_accuracy, train_recall, train_recall_runs
from mha_book.lm.training import torch_threads

TASK = RecallTask(num_pairs=4, num_keys=6, num_values=3)


def test_equal_parameters_same_shapes_and_count_for_every_head_count():
    shapes = equal_parameters(48, [1, 2, 3, 4, 6, 8, 12, 16, 24, 48])
    first = shapes[1]
    assert all(table == first for table in shapes.values())
    counts = {
        H: sum(p.numel() for p in MultiHeadAttention(48, H).parameters())
        for H in (1, 48)
    }
    assert counts[1] == counts[48] == 4 * 48 * 48 + 4 * 48


def test_recall_batch_answers_are_the_asked_values_in_order():
    task = RecallTask(num_pairs=5, num_keys=9, num_values=4)
    b = recall_batch(task, 300, torch.Generator().manual_seed(1))
    assert all(len(set(row.tolist())) == 5 for row in b.keys)  # keys differ
    assert bool((b.where[:, 0] != b.where[:, 1]).all())
    first = b.values[torch.arange(300), b.where[:, 0]]
    second = b.values[torch.arange(300), b.where[:, 1]]
    assert torch.equal(b.answer, 4 * first + second)
    assert torch.equal(b.asked[:, 0], b.keys[torch.arange(300), b.where[:, 0]])
    # the first and the second value differ in role: swapping them changes the answer
    assert bool((b.answer != 4 * second + first).any())


def test_recall_batch_is_reproducible():
    a = recall_batch(TASK, 7, torch.Generator().manual_seed(3))
    b = recall_batch(TASK, 7, torch.Generator().manual_seed(3))
    assert torch.equal(a.keys, b.keys) and torch.equal(a.answer, b.answer)


@pytest.mark.parametrize(
    "make, word",
    [
        (lambda: RecallTask(num_pairs=5, num_keys=4), "num_keys"),
        (lambda: RecallTask(num_pairs=1), "num_pairs"),
        (lambda: RecallTask(num_values=1), "num_values"),
        (lambda: RecallConfig(TASK, embed_dim=30, num_heads=4), "num_heads"),
        (lambda: RecallConfig(TASK, 16, 4, num_kv_heads=2, latent_dim=4), "latent_dim"),
        (lambda: recall_batch(TASK, 0), "batch_size"),
    ],
)
def test_bad_arguments_name_the_argument(make, word):
    with pytest.raises(ValueError, match=word):
        make()


def test_cache_numbers_per_token_follow_the_kind():
    kinds = {g: RecallConfig(TASK, 32, 8, num_kv_heads=g).kind for g in (None, 8, 4, 1)}
    assert kinds == {None: "MHA", 8: "MHA", 4: "GQA", 1: "MQA"}
    assert cache_numbers_per_token(RecallConfig(TASK, 32, 8, num_kv_heads=4)) == 32
    mla = RecallConfig(TASK, 32, 8, latent_dim=10, rope_dim=2)
    assert mla.kind == "MLA" and cache_numbers_per_token(mla) == 12


def test_model_reads_only_content_not_position():
    torch.manual_seed(0)
    model = RecallModel(RecallConfig(TASK, 16, 2)).eval()
    b = recall_batch(TASK, 8, torch.Generator().manual_seed(0))
    perm = torch.randperm(TASK.num_pairs)
    shuffled = type(b)(b.keys[:, perm], b.values[:, perm], b.asked, b.where, b.answer)
    assert torch.allclose(model(b), model(shuffled), atol=1e-5)


def test_attention_maps_and_retrieval_shares():
    torch.manual_seed(0)
    model = RecallModel(RecallConfig(TASK, 16, 4))
    b = recall_batch(TASK, 10)
    maps = model.attention_maps(b)
    assert maps.shape == (10, 4, TASK.num_pairs + 1)
    assert torch.allclose(maps.sum(-1), torch.ones(10, 4))
    shares = retrieval_shares(model, b)
    expected_first = maps[torch.arange(10), :, b.where[:, 0]].mean(0)  # (H,)
    assert torch.allclose(shares[:, 0], expected_first)


def test_score_matrix_is_the_heads_query_key_product_and_its_rank_is_at_most_d():
    torch.manual_seed(0)
    task = RecallTask(8, 16, 4)
    model = RecallModel(RecallConfig(task, 32, 8))
    ranks = score_ranks(model, rtol=1e-6)
    assert ranks.shape == (8, 2) and int(ranks.max()) == 4  # D = 4 < K = 16
    one = RecallModel(RecallConfig(task, 32, 1))
    assert int(score_ranks(one, rtol=1e-6).min()) == 16  # D = 32: full rank K
    # entry [a, k] against a direct computation for head 3, second slot
    a, k, D = 5, 9, 4
    attn = model.attn
    q = attn.q_proj(model.second_emb.weight[a])[3 * D : 4 * D]
    key = attn.k_proj(model.key_emb.weight[k] + model.value_emb.weight.mean(0))
    want = q @ key[3 * D : 4 * D] / D**0.5
    assert torch.allclose(model.score_matrix(3, 1)[a, k], want, atol=1e-6)


def test_numerical_rank():
    torch.manual_seed(0)
    low = torch.randn(20, 5) @ torch.randn(5, 12)
    assert numerical_rank(low) == 5 and numerical_rank(torch.zeros(3, 3)) == 0
    with pytest.raises(ValueError, match="rtol"):
        numerical_rank(low, rtol=2.0)


def test_masking_every_head_leaves_the_output_bias():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2)
    model = nn.ModuleDict({"attn": mha})
    x = torch.randn(2, 3, 8)
    full, _ = mha(x, x, x)
    with masked(model, [("attn", 0), ("attn", 1)]):
        out, _ = mha(x, x, x)
    assert torch.allclose(out, mha.out_proj.bias.expand_as(out))
    after, _ = mha(x, x, x)  # the hooks are gone
    assert torch.equal(after, full)


def test_gradient_importance_is_the_mean_absolute_gradient_per_example():
    torch.manual_seed(0)
    model = nn.ModuleDict({"attn": MultiHeadAttention(8, 4)}).double()
    x = torch.randn(3, 5, 8, dtype=torch.float64)

    def loss(x=x):
        return model["attn"](x, x, x)[0].pow(2).mean()

    scores = head_importance(model, loss, method="gradient")
    eps = 1e-6
    for head, score in scores.items():
        slopes = []
        for b in range(3):  # one example at a time, by a central difference
            one = x[b : b + 1]
            with torch.no_grad(), head_gates(model, {head: 1 + eps}):
                up = loss(one).item()
            with torch.no_grad(), head_gates(model, {head: 1 - eps}):
                down = loss(one).item()
            slopes.append(abs(up - down) / (2 * eps))
        assert score == pytest.approx(sum(slopes) / 3, rel=1e-5)
    # not the gradient of the batch's loss, whose signs can cancel
    whole = {}
    for head in scores:
        gate = torch.ones((), dtype=torch.float64, requires_grad=True)
        with head_gates(model, {head: gate}):
            whole[head] = torch.autograd.grad(loss(), gate)[0].abs().item()
    assert all(whole[h] <= scores[h] + 1e-12 for h in scores)


def test_mask_importance_and_pruning_curve():
    torch.manual_seed(0)
    model = nn.ModuleDict(
        {"a": MultiHeadAttention(8, 2), "b": MultiHeadAttention(8, 2)}
    )
    x = torch.randn(2, 3, 8)

    def loss():
        return model["b"](model["a"](x, x, x)[0], x, x)[0].pow(2).mean().item()

    scores = head_importance(model, loss)
    base = loss()
    with masked(model, [("b", 1)]):
        assert scores[("b", 1)] == pytest.approx(loss() - base)
    order = random_order(model, seed=1)
    curve = pruning_curve(model, loss, order)
    assert [s for s, _ in curve] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert curve[0][1] == pytest.approx(base)
    with pytest.raises(ValueError, match="heads"):
        pruning_curve(model, loss, [("a", 2)])
    with pytest.raises(ValueError, match="method"):
        head_importance(model, loss, method="taylor")


def test_attention_heads_of_the_translator_and_an_mla_model():
    from mha_book.seq2seq.translator import Translator, TranslatorConfig

    config = TranslatorConfig(vocab_size=12, embed_dim=16, num_heads=4)
    heads = attention_heads(Translator(config))
    assert len(heads) == 4 * (config.encoder_layers + 2 * config.decoder_layers)
    mla = RecallModel(RecallConfig(TASK, 16, 4, latent_dim=6))
    assert attention_heads(mla) == [("attn", h) for h in range(4)]
    assert len(ablation_accuracies(mla, 50)) == 4


def test_two_heads_learn_the_task_far_above_chance():
    task = RecallTask(num_pairs=3, num_keys=4, num_values=3)
    with torch_threads(1):  # tiny matrices: a second thread only waits
        run, loaded = train_recall(
            RecallConfig(task, 16, 2), steps=80, batch_size=64, lr=2e-2
        )
    assert not loaded and run.accuracy > 0.95
    untrained = recall_accuracy(RecallModel(RecallConfig(task, 16, 2)))
    assert untrained < 0.5 and 0.95 > 8 * task.chance


def test_runs_are_stored_once_and_loaded_identically(tmp_path, monkeypatch):
    monkeypatch.setenv("MHA_BOOK_ARTIFACTS", str(tmp_path))
    config = RecallConfig(TASK, 16, 2)
    first = train_recall_runs({"h2": config}, [0, 1], steps=3, batch_size=8)
    second, loaded = train_recall(config, steps=3, batch_size=8, seed=1)
    assert loaded and second.losses == first["h2"][1].losses
    for a, b in zip(
        second.model.state_dict().values(), first["h2"][1].model.state_dict().values()
    ):
        assert torch.equal(a, b)


def test_prune_order_and_recall_loss():
    from mha_book.lm.heads.measures import recall_loss
    from mha_book.lm.heads.pruning import prune_order

    assert prune_order({("a", 0): 2.0, ("a", 1): -1.0}) == [("a", 1), ("a", 0)]
    torch.manual_seed(0)
    model = RecallModel(RecallConfig(TASK, 16, 2))
    b = recall_batch(TASK, 50, torch.Generator().manual_seed(2))
    want = nn.functional.cross_entropy(model(b), b.answer)
    assert torch.allclose(recall_loss(model, b), want)


def test_sweep_configs_differ_only_in_attention():
    from mha_book.lm.heads.sweeps import head_configs, sharing_configs

    configs = {**head_configs(), **sharing_configs()}
    assert len({c.task for c in configs.values()}) == 1
    assert len({c.embed_dim for c in configs.values()}) == 1
    assert sharing_configs()["MHA"] == head_configs()["H=8"]
    counts = {
        name: sum(p.numel() for p in RecallModel(c).parameters())
        for name, c in head_configs().items()
    }
    assert len(set(counts.values())) == 1  # equal parameters at every head count


def test_key_match_shares_count_rows_whose_top_score_is_the_named_key():
    from mha_book.lm.heads.measures import key_match_shares

    torch.manual_seed(0)
    model = RecallModel(RecallConfig(TASK, 12, 2))
    shares = key_match_shares(model)
    for h in range(2):
        for slot in (0, 1):
            scores = model.score_matrix(h, slot)  # (K, K)
            want = sum(int(scores[a].argmax()) == a for a in range(6)) / 6
            assert float(shares[h, slot]) == pytest.approx(want)


def test_pruning_study_orders_by_importance_and_keeps_random_yardsticks():
    torch.manual_seed(0)
    model = nn.ModuleDict({"attn": MultiHeadAttention(8, 4)})
    x = torch.randn(2, 3, 8)

    def loss():
        return model["attn"](x, x, x)[0].pow(2).mean().item()

    study = pruning_study(model, loss, loss, random_seeds=[0, 1, 2])
    order = sorted(study["importance"], key=study["importance"].get)
    removed_first = study["by_importance"][1]
    with masked(model, [order[0]]):
        assert removed_first[1] == pytest.approx(loss())
    assert len(study["random"]) == 3 and all(len(c) == 5 for c in study["random"])


def test_stored_study_is_computed_once(tmp_path, monkeypatch):
    from mha_book.lm.heads.pruning import stored_study

    monkeypatch.setenv("MHA_BOOK_ARTIFACTS", str(tmp_path))
    calls = []

    def compute():
        calls.append(1)
        return {"importance": {("attn", 0): 0.5}, "random": [[(0.0, 1.0)]]}

    code = ["mha_book.lm.heads.pruning"]
    first = stored_study("study", {"w": torch.ones(2)}, compute, code)
    again = stored_study("study", {"w": torch.ones(2)}, compute, code)
    other = stored_study("study", {"w": torch.zeros(2)}, compute, code)
    assert first == again == other and len(calls) == 2


def test_pruning_study_measures_each_set_of_masked_heads_once():
    torch.manual_seed(0)
    model = nn.ModuleDict({"attn": MultiHeadAttention(8, 4)})
    x = torch.randn(2, 3, 8)
    calls = []

    def measure():
        calls.append(1)
        return model["attn"](x, x, x)[0].pow(2).mean().item()

    study = pruning_study(model, measure, measure, random_seeds=[0, 1, 2])
    curves = [study["by_importance"], *study["random"]]
    orders = [sorted(study["importance"], key=study["importance"].get)]
    orders += [random_order(model, seed) for seed in (0, 1, 2)]
    sets = {frozenset(order[:k]) for order in orders for k in range(5)}
    sets |= {frozenset([head]) for head in study["importance"]}  # the scores
    assert len(calls) == len(sets) < 5 + 4 * 5  # each set once
    fresh = pruning_curve(model, measure, orders[1])  # no shared values
    assert fresh == curves[1]
    with pytest.raises(ValueError, match="every"):
        pruning_curve(model, measure, orders[1], every=0)


def test_pruning_curve_every_second_head_keeps_the_last():
    model = nn.ModuleDict(
        {"a": MultiHeadAttention(8, 2), "b": MultiHeadAttention(8, 4)}
    )
    x = torch.randn(1, 3, 8)

    def measure():
        return model["b"](model["a"](x, x, x)[0], x, x)[0].sum().item()

    curve = pruning_curve(model, measure, random_order(model), every=2)
    assert [share for share, _ in curve] == [0.0, 2 / 6, 4 / 6, 1.0]
    assert curve == [
        point
        for point in pruning_curve(model, measure, random_order(model))
        if point[0] in (0.0, 2 / 6, 4 / 6, 1.0)
    ]


def test_mla_reads_the_last_row_of_causal_self_attention():
    torch.manual_seed(0)
    model = RecallModel(RecallConfig(TASK, 16, 4, latent_dim=6))
    b = recall_batch(TASK, 5, torch.Generator().manual_seed(4))
    query, seq = model.tokens(b)
    read = model._latent_read(query, seq[:, :-1])  # the query decoded alone
    assert torch.allclose(read, model.attn(seq)[:, -1:], atol=1e-6)
