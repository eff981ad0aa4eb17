"""The handwritten digits, the Vision Transformer and the measures of its heads."""

import gzip
import hashlib
import importlib.util
import json
import math
from collections import Counter
from importlib import resources

import pytest
import torch

from mha_book.vision import measures
from mha_book.vision.data import (
    digits_source,
    from_patches,
    load_digits,
    patch_centers,
    to_patches,
)
from mha_book.vision.train import make_model, train_digits
from mha_book.vision.vit import PixelMLP, VisionTransformer, ViTConfig, parameter_count
from tools import ship_digits

FOLDER = resources.files("mha_book") / "data" / "digits"


# --- the shipped data -------------------------------------------------------


def test_the_shipped_file_is_the_wheels_and_its_digest_holds():
    data = (FOLDER / "digits.csv.gz").read_bytes()
    source = digits_source()
    assert hashlib.sha256(data).hexdigest() == source["file_sha256"]
    assert source["file_sha256"] == ship_digits.SHA256[ship_digits.DATA]
    text = gzip.decompress(data)
    assert hashlib.sha256(text).hexdigest() == source["text_sha256"]
    split = (FOLDER / "split.json").read_bytes()
    assert hashlib.sha256(split).hexdigest() == source["split_sha256"]


def test_counts_and_values_match_the_digest():
    source = digits_source()
    every = load_digits("all")
    assert every.images.shape == (1797, 8, 8) == (source["images"], 8, 8)
    counts = Counter(every.labels.tolist())
    assert [counts[d] for d in range(10)] == source["per_digit"]
    levels = every.images * 16
    assert (
        torch.equal(levels, levels.round()) and levels.min() == 0 and levels.max() == 16
    )
    # the first image of the file, by hand: a 0
    first = gzip.decompress((FOLDER / "digits.csv.gz").read_bytes()).split(b"\n")[0]
    values = [int(v) for v in first.split(b",")]
    assert every.labels[0] == values[-1] == 0
    assert (every.images[0].flatten() * 16).tolist() == values[:-1]


def test_the_split_is_fixed_stratified_and_a_partition():
    every, train, test = load_digits("all"), load_digits("train"), load_digits("test")
    source = digits_source()
    assert (len(train), len(test)) == (source["train"], source["test"]) == (1347, 450)
    labels = every.labels.tolist()
    indices = json.loads((FOLDER / "split.json").read_text())["test"]
    assert indices == ship_digits.stratified_test(labels, 0, 0.25)  # fixed by rule
    per_digit, in_test = Counter(labels), Counter(labels[i] for i in indices)
    assert all(in_test[d] == round(per_digit[d] / 4) for d in range(10))
    assert [in_test[d] for d in range(10)] == source["test_per_digit"]
    is_test = torch.zeros(len(labels), dtype=torch.bool)
    is_test[indices] = True
    assert torch.equal(test.images, every.images[is_test])
    assert torch.equal(train.labels, every.labels[~is_test])


@pytest.mark.skipif(
    importlib.util.find_spec("sklearn") is None, reason="needs scikit-learn 1.9.1"
)
def test_the_tool_regenerates_the_shipped_files(capsys):
    assert ship_digits.main(["--check"]) == 0
    assert "matches its source" in capsys.readouterr().out


def test_the_tool_refuses_a_changed_file():
    files = {ship_digits.DATA: b"not the file", ship_digits.DESCR: b""}
    with pytest.raises(SystemExit, match="SHA-256 differs"):
        ship_digits.checked(files)


# --- patches ----------------------------------------------------------------


@pytest.mark.parametrize("patch", [1, 2, 4, 8])
def test_patches_round_trip_and_hold_the_right_pixels(patch):
    x = torch.rand(3, 8, 8)
    p = to_patches(x, patch)
    G = 8 // patch
    assert p.shape == (3, G * G, patch * patch)
    assert torch.equal(from_patches(p, patch), x)
    for i in range(G * G):
        row, col = divmod(i, G)  # row-major over the grid
        block = x[:, row * patch : (row + 1) * patch, col * patch : (col + 1) * patch]
        assert torch.equal(p[:, i], block.reshape(3, -1))


def test_patch_centers_are_the_middle_of_each_patch():
    centers = patch_centers(2)
    assert centers.shape == (16, 2)
    x = torch.zeros(1, 8, 8)
    x[0, 5, 2] = 1.0  # row 5 (y), column 2 (x)
    hit = to_patches(x, 2)[0].sum(-1).argmax()
    assert centers[hit].tolist() == [3.0, 5.0]  # columns 2-3, rows 4-5


# --- the models -------------------------------------------------------------


def _permuted(images, perm):
    return from_patches(to_patches(images, 2)[:, perm], 2)


def test_without_positions_the_model_is_permutation_equivariant():
    torch.manual_seed(0)
    model = VisionTransformer(ViTConfig(positions=False)).eval()
    images, perm = torch.rand(4, 8, 8), torch.randperm(16)
    with torch.no_grad():
        tokens, _ = model.encode(images)
        moved, _ = model.encode(_permuted(images, perm))
    assert torch.allclose(moved[:, 1:], tokens[:, 1:][:, perm], atol=1e-5)
    assert torch.allclose(moved[:, 0], tokens[:, 0], atol=1e-5)  # [CLS]: invariant


def test_with_positions_the_order_of_patches_matters():
    torch.manual_seed(0)
    model = VisionTransformer(ViTConfig()).eval()
    with torch.no_grad():
        model.positions.weight.normal_()  # type: ignore[union-attr]
        images, perm = torch.rand(4, 8, 8), torch.randperm(16)
        a, b = model(images), model(_permuted(images, perm))
    assert not torch.allclose(a, b, atol=1e-3)


def test_the_mlp_baseline_has_about_the_vits_parameters():
    vit = make_model("vit", ViTConfig())
    mlp = make_model("mlp", ViTConfig())
    assert isinstance(mlp, PixelMLP)
    assert abs(parameter_count(mlp) - parameter_count(vit)) < 0.02 * parameter_count(
        vit
    )
    nopos = make_model("vit-nopos", ViTConfig())
    assert isinstance(nopos, VisionTransformer) and nopos.positions is None


@pytest.fixture
def one_thread():
    """Train on one thread, as the book's kernels do (a busy machine's
    threads would make the steps slow), then put the count back."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def test_a_run_is_its_seeds(one_thread):
    a, _ = train_digits("vit", steps=4, batch_size=16, seed=1)
    b, _ = train_digits("vit", steps=4, batch_size=16, seed=1)
    c, _ = train_digits("vit", steps=4, batch_size=16, seed=2)
    assert a.losses == b.losses and a.losses != c.losses


# --- the measures, on attention built by hand ---------------------------------


def _heads(*patch_maps, cls_share=0.0):
    """(1, H, 17, 17) weights whose patch rows are ``patch_maps`` (16×16 each),
    scaled to leave ``cls_share`` on the [CLS] token."""
    w = torch.zeros(1, len(patch_maps), 17, 17)
    for h, m in enumerate(patch_maps):
        w[0, h, 1:, 1:] = m * (1 - cls_share)
        w[0, h, 1:, 0] = cls_share
        w[0, h, 0] = 1 / 17
    return w


def _step_map(dx, dy):
    """Each patch attends the patch (dx, dy) grid steps away, or itself at the edge."""
    m = torch.zeros(16, 16)
    for q in range(16):
        r, c = divmod(q, 4)
        if 0 <= r + dy < 4 and 0 <= c + dx < 4:
            m[q, (r + dy) * 4 + c + dx] = 1.0
        else:
            m[q, q] = 1.0
    return m


def test_mean_attention_distance_on_hand_built_maps():
    uniform = torch.full((16, 16), 1 / 16)
    w = _heads(torch.eye(16), _step_map(1, 0), uniform, _step_map(1, 1), cls_share=0.5)
    got = measures.mean_attention_distance(w).tolist()
    # every pair of centres, by hand: grid steps times 2 pixels
    pairs = [(a, b) for a in range(16) for b in range(16)]
    by_hand = sum(2 * math.dist(divmod(a, 4), divmod(b, 4)) for a, b in pairs) / len(
        pairs
    )
    # 12 of 16 patches have a right neighbour (2 px), 9 a diagonal one (2√2 px)
    expected = [0.0, 12 * 2 / 16, by_hand, 9 * 2 * math.sqrt(2) / 16]
    assert got == pytest.approx(expected, abs=1e-5)
    assert measures.uniform_distance(2) == pytest.approx(by_hand)


def test_head_offsets_find_a_heads_direction():
    w = _heads(_step_map(0, 1), _step_map(-1, 0), cls_share=0.3)
    o = measures.head_offsets(w)
    assert o.peak.tolist() == [[0.0, 2.0], [-2.0, 0.0]]  # down, left (pixels)
    assert o.share.tolist() == pytest.approx([12 / 16, 12 / 16])
    assert torch.allclose(o.mean, torch.tensor([[0.0, 1.5], [-1.5, 0.0]]))
    flat = measures.head_offsets(_heads(torch.full((16, 16), 1 / 16)))
    assert flat.share.tolist() == pytest.approx([1 / 16])  # the yardstick


def test_rollout_multiplies_the_layers_in_order():
    torch.manual_seed(0)
    a = torch.softmax(torch.randn(2, 1, 2, 5, 5), -1)  # (L, B, H, T, T)
    step = [0.5 * layer[0].mean(0) + 0.5 * torch.eye(5) for layer in a]
    expected = step[1] @ step[0]  # the second layer reads the first's output
    got = measures.attention_rollout(a)[0]
    assert torch.allclose(got, expected, atol=1e-6)
    assert not torch.allclose(got, step[0] @ step[1], atol=1e-3)  # order matters
    assert torch.allclose(got.sum(-1), torch.ones(5), atol=1e-6)


def test_position_similarity_reads_the_patches_rows_only():
    model = VisionTransformer(ViTConfig())
    table = model.positions.weight  # type: ignore[union-attr]
    with torch.no_grad():
        centers = patch_centers(2)
        table[1:] = 0.0
        table[1:, :2] = centers - 3.5  # each position is its place on the grid
        table[0] = 100.0  # the [CLS] token's row: not a patch
    sim = measures.position_similarity(model)
    assert sim.shape == (16, 16)
    assert torch.allclose(sim.diagonal(), torch.ones(16), atol=1e-6)
    assert measures.distance_correlation(sim) < -0.5
    d = torch.cdist(centers, centers)
    assert measures.distance_correlation(-d) == pytest.approx(-1.0)


def test_head_ablation_matches_zeroing_the_heads_columns_by_hand():
    torch.manual_seed(0)
    model = VisionTransformer(ViTConfig(num_layers=1, num_heads=2)).eval()
    digits = load_digits("test")
    got = measures.head_ablation(model, digits)
    out_proj = model.layers[0].self_attn.out_proj  # type: ignore[union-attr]
    for head in range(2):
        saved = out_proj.weight.detach().clone()
        with torch.no_grad():
            out_proj.weight[:, head * 16 : (head + 1) * 16] = 0.0  # D = 32 / 2
            right = (model(digits.images).argmax(-1) == digits.labels).float().mean()
            out_proj.weight.copy_(saved)
        assert got[0, head].item() == pytest.approx(right.item())


# --- errors name the argument ------------------------------------------------


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (
            lambda: to_patches(torch.zeros(2, 8, 7)),
            r"images must have shape \(B, 8, 8\)",
        ),
        (lambda: to_patches(torch.zeros(2, 8, 8), 3), "patch must divide the side 8"),
        (
            lambda: from_patches(torch.zeros(2, 16, 3)),
            r"patches must have shape \(B, 16, 4\)",
        ),
        (
            lambda: load_digits("val"),
            "part must be 'train', 'test' or 'all', got 'val'",
        ),
        (lambda: make_model("cnn", ViTConfig()), "kind must be one of"),
        (
            lambda: measures.mean_attention_distance(torch.zeros(1, 2, 16, 16)),
            r"weights must have shape \(B, H, 17, 17\)",
        ),
        (
            lambda: measures.distance_correlation(torch.zeros(4, 4)),
            r"similarity must have shape \(16, 16\)",
        ),
        (
            lambda: measures.position_similarity(make_model("vit-nopos", ViTConfig())),
            "positions=True",
        ),
    ],
)
def test_errors_name_the_argument(call, words):
    with pytest.raises(ValueError, match=words):
        call()
