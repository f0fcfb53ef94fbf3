"""``nlpcourse.models.cnn``: the Kim (2014) CNN sentence classifier, its pretrained embeddings and its
training recipe; ``benchmarks/cnn.py`` and ``scripts/train_cnn.py`` on a tiny subset (seconds).

Everything is seeded; the CUDA variants are marked ``gpu`` (skipped where there is none).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from benchmark_support import load_benchmark
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import sparse

import nlpcourse
from nlpcourse.data import Vocab
from nlpcourse.errors import ConfigError, CourseError, ShapeError
from nlpcourse.models.cnn import (
    CNNTrainSettings,
    KimCNN,
    KimCNNConfig,
    build_kim_cnn,
    decisive_ngrams,
    masked_kmax,
    masked_max,
    max_norm_,
    pretrained_embeddings,
    top_ngrams,
    train_kim_cnn,
    window_preactivations,
    window_span,
)
from nlpcourse.vectors import WordVectors

ROOT = Path(__file__).resolve().parents[1]
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]
V, D = 30, 8


pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


def small(variant: str = "rand", seed: int = 0, **kw) -> KimCNN:
    nlpcourse.seed_everything(seed)
    cfg = KimCNNConfig(vocab_size=V, embed_dim=D, maps=4, variant=variant, **kw)
    pre = None if variant == "rand" else torch.randn(V, D, generator=torch.Generator().manual_seed(seed + 1))
    return KimCNN(cfg, pre)


def tokens_of(lengths: list[int], T: int | None = None, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """A right-padded (B,T) batch of random ids 1..V-1 with the given lengths, and the lengths."""
    g = torch.Generator().manual_seed(seed)
    T = T or max(lengths)
    x = torch.zeros(len(lengths), T, dtype=torch.long)
    for i, n in enumerate(lengths):
        x[i, :n] = torch.randint(1, V, (n,), generator=g)
    return x, torch.tensor(lengths)


# ---------------------------------------------------------------- shapes and the convolution


@pytest.mark.parametrize("variant", ["rand", "static", "nonstatic", "multichannel"])
@pytest.mark.parametrize("pooling", ["max", "mean"])
def test_shapes(variant, pooling):
    model = small(variant, pooling=pooling)
    x, lengths = tokens_of([7, 1, 3])
    assert model.features(x, lengths).shape == (3, 12)  # F = 4 maps x 3 widths
    assert model(x, lengths).shape == (3, 2)
    assert torch.allclose(model.predict_proba(x, lengths).sum(-1), torch.ones(3))


def reference_pooled(model: KimCNN, ids: list[int]) -> torch.Tensor:
    """One sentence, no batching: pad W-1 zero vectors on each side, slide each filter with explicit loops."""
    emb = model.embed.weight[ids]  # (L,D)
    if model.embed_static is not None:
        emb = torch.cat([emb, model.embed_static.weight[ids]], dim=1)  # (L,2D)
    out = []
    for w, conv in zip(model.config.widths, model.convs):
        padded = torch.cat([torch.zeros(w - 1, emb.shape[1]), emb, torch.zeros(w - 1, emb.shape[1])])
        windows = []
        for j in range(len(ids) + w - 1):
            patch = padded[j:j + w]  # (w,CD)
            windows.append(torch.einsum("mcw,wc->m", conv.weight, patch) + conv.bias)  # (M,)
        acts = torch.stack(windows)  # (L+w-1,M)
        out.append(acts.max(dim=0).values.relu() if model.config.pooling == "max" else acts.relu().mean(dim=0))
    return torch.cat(out)


@pytest.mark.parametrize("variant, pooling", [("rand", "max"), ("multichannel", "max"), ("nonstatic", "mean")])
def test_convolution_matches_a_loop_reference(variant, pooling):
    model = small(variant, pooling=pooling)
    x, lengths = tokens_of([9, 2, 5], T=12)
    with torch.no_grad():
        got = model.features(x, lengths)
        for i, n in enumerate(lengths.tolist()):
            want = reference_pooled(model, x[i, :n].tolist())
            assert torch.allclose(got[i], want, atol=1e-5), i


# ---------------------------------------------------------------- masking (property tests)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 9), extra=st.integers(0, 6), seed=st.integers(0, 10_000),
       pooling=st.sampled_from(["max", "mean"]))
def test_padding_does_not_change_a_sentence_output(n, extra, seed, pooling):
    model = small("nonstatic", seed=seed % 7, pooling=pooling).eval()
    x, _ = tokens_of([n], seed=seed)
    padded = torch.cat([x, torch.full((1, extra), 5, dtype=torch.long)], dim=1)  # junk after the end
    with torch.no_grad():
        alone = model(x, torch.tensor([n]))
        in_batch = model(padded, torch.tensor([n]))
    assert torch.allclose(alone, in_batch, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 8), extra=st.integers(1, 6), seed=st.integers(0, 10_000))
def test_padding_never_wins_the_max_when_every_real_activation_is_negative(n, extra, seed):
    model = small("rand", seed=seed % 5).eval()
    with torch.no_grad():
        model.embed.weight.uniform_(0.5, 1.0)  # positive embeddings, negative filters, no bias:
        for conv in model.convs:  # every window touching a word is negative, a window of zeros is 0
            conv.weight.uniform_(-1.0, -0.1)
            conv.bias.zero_()
        x, _ = tokens_of([n], T=n + extra, seed=seed)
        pooled = model.pooled_preactivations(x, torch.tensor([n]))
    assert (pooled < 0).all()


@settings(max_examples=25, deadline=None)
@given(a=st.lists(st.floats(-1e3, -1e-3), min_size=2, max_size=8), k=st.integers(1, 8))
def test_masked_max_ignores_invalid_positions(a, k):
    t = torch.tensor(a).view(1, 1, -1)
    k = min(k, len(a))
    valid = torch.arange(len(a))[None] < k
    assert masked_max(t, valid).item() == t[0, 0, :k].max().item()


@settings(max_examples=25, deadline=None)
@given(a=st.lists(st.floats(-1e3, 1e3), min_size=3, max_size=9, unique=True), n=st.integers(2, 9),
       k=st.integers(1, 2))
def test_masked_kmax_keeps_the_k_largest_valid_values_in_their_order(a, n, k):
    t = torch.tensor(a, dtype=torch.float64).view(1, 1, -1)
    n = min(n, len(a))
    valid = torch.arange(len(a))[None] < n
    largest = sorted(range(n), key=lambda i: a[i])[-k:]  # positions of the k largest valid values
    assert masked_kmax(t, valid, k)[0, 0].tolist() == [a[i] for i in sorted(largest)]


def test_one_max_pooling_is_max_pooling_and_k_max_sees_no_padding():
    x, lengths = tokens_of([2, 5, 1], T=8)
    with torch.no_grad():
        one = small("rand", seed=3, pooling="kmax", k=1).eval()
        plain = small("rand", seed=3).eval()
        assert torch.equal(one(x, lengths), plain(x, lengths))
        two = small("rand", seed=3, pooling="kmax", k=2).eval()
        h = two.features(x, lengths)  # (B, 3 widths * 4 maps * 2)
        assert h.shape == (3, 24)
        alone = two.features(x[:1, :2], lengths[:1])
        assert torch.allclose(h[:1], alone)


@pytest.mark.parametrize("variant", ["rand", "multichannel"])
def test_one_token_sentence_works_with_widths_3_4_5(variant):
    model = small(variant)
    out = model(torch.tensor([[7]]), torch.tensor([1]))
    assert out.shape == (1, 2) and torch.isfinite(out).all()


# ---------------------------------------------------------------- max-norm, frozen embeddings, dropout


def test_max_norm_projection():
    g = torch.Generator().manual_seed(0)
    w = torch.randn(5, 20, generator=g)
    w[1] *= 0.01  # this row is well under s
    small_row = w[1].clone()
    max_norm_(w, 3.0)
    assert (w.norm(dim=1) <= 3.0 + 1e-5).all()
    assert torch.equal(w[1], small_row)
    assert torch.allclose(w.norm(dim=1)[[0, 2, 3, 4]], torch.full((4,), 3.0))


def step(model: KimCNN) -> None:
    x, lengths = tokens_of([6, 4, 2])
    opt = torch.optim.Adam(model.trainable_parameters(), lr=0.1)
    F.cross_entropy(model(x, lengths), torch.tensor([0, 1, 1])).backward()
    opt.step()


def test_multichannel_frozen_copy_gets_no_gradient_and_does_not_move():
    model = small("multichannel")
    frozen, trained = model.embed_static.weight.clone(), model.embed.weight.clone()
    step(model)
    assert model.embed_static.weight.grad is None and not model.embed_static.weight.requires_grad
    assert torch.equal(model.embed_static.weight, frozen)
    assert not torch.equal(model.embed.weight, trained)


def test_static_embedding_does_not_change_and_the_rest_learns():
    model = small("static")
    before, conv_before = model.embed.weight.clone(), model.convs[0].weight.clone()
    step(model)
    assert torch.equal(model.embed.weight, before)
    assert not torch.equal(model.convs[0].weight, conv_before)


def test_dropout_only_in_train_mode():
    model = small("rand")
    x, lengths = tokens_of([5, 5])
    model.eval()
    assert torch.equal(model(x, lengths), model(x, lengths))
    model.train()
    assert not torch.equal(model(x, lengths), model(x, lengths))


def test_max_norm_is_applied_after_each_optimiser_step():
    from nlpcourse.models.cnn import make_optimizer

    model = small("rand", max_norm=0.05)
    opt = make_optimizer(model, CNNTrainSettings(lr=0.5))
    x, lengths = tokens_of([6, 3])
    F.cross_entropy(model(x, lengths), torch.tensor([0, 1])).backward()
    opt.step()
    assert (model.out.weight.norm(dim=1) <= 0.05 + 1e-6).all()


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("kw, word", [
    ({"vocab_size": 0}, "vocab_size"), ({"widths": ()}, "widths"), ({"widths": (3, 0)}, "widths"),
    ({"maps": 0}, "maps"), ({"dropout": 1.0}, "dropout"), ({"max_norm": 0.0}, "max_norm"),
    ({"n_classes": 1}, "n_classes"), ({"variant": "frozen"}, "variant"), ({"pooling": "sum"}, "pooling"),
    ({"pad_id": 99}, "pad_id"), ({"k": 2}, "kmax"), ({"pooling": "kmax", "k": 4, "widths": (3, 5)}, "min"),
    ({"pooling": "kmax", "k": 0}, "k must"),
])
def test_config_errors(kw, word):
    with pytest.raises(ConfigError, match=word):
        KimCNNConfig(**({"vocab_size": V} | kw))


def test_bad_inputs_raise_course_errors():
    with pytest.raises(ConfigError, match="pretrained"):
        KimCNN(KimCNNConfig(V, D, variant="static"))
    with pytest.raises(ShapeError, match="pretrained"):
        KimCNN(KimCNNConfig(V, D, variant="static"), torch.zeros(V, D + 1))
    model = small()
    with pytest.raises(ShapeError, match="tokens"):
        model(torch.zeros(3, dtype=torch.long))
    with pytest.raises(ShapeError, match="length"):
        model(torch.ones(2, 4, dtype=torch.long), torch.tensor([0, 4]))
    with pytest.raises(ConfigError, match="token ids"):
        model(torch.full((1, 3), V, dtype=torch.long))
    with pytest.raises(ConfigError, match="unknown config keys"):
        build_kim_cnn({"vocab_size": V, "colour": "red"})
    with pytest.raises(ConfigError, match="s must be"):
        max_norm_(torch.zeros(2, 2), 0.0)
    with pytest.raises(CourseError, match="optimizer"):
        CNNTrainSettings(optimizer="sgd")


# ---------------------------------------------------------------- pretrained embeddings


def test_pretrained_embeddings_coverage_and_unknown_word_scale():
    vocab = Vocab.build([["good", "bad", "film", "zzz"]])
    g = torch.Generator().manual_seed(0)
    words = ["good", "bad", "film", "other"] + [f"w{i}" for i in range(400)]
    wv = WordVectors(words, torch.randn(404, 6, generator=g))
    emb = pretrained_embeddings(vocab, wv, seed=0)
    assert (emb.covered, emb.total) == (3, 4) and emb.coverage == 0.75
    assert torch.equal(emb.weight[vocab["good"]], wv["good"])
    assert torch.equal(emb.weight[vocab.pad_id], torch.zeros(6))
    assert abs(emb.init_scale - (3 * wv.vectors.var(dim=0).mean()).sqrt().item()) < 1e-6
    assert emb.weight[vocab["zzz"]].abs().max() <= emb.init_scale
    assert torch.equal(emb.weight, pretrained_embeddings(vocab, wv, seed=0).weight)


# ---------------------------------------------------------------- training and devices


def toy_task(n: int = 120, seed: int = 0) -> tuple[list[list[int]], torch.Tensor]:
    """Label 1 iff token 3 occurs: a CNN learns it in a few epochs."""
    g = torch.Generator().manual_seed(seed)
    ids, labels = [], []
    for _ in range(n):
        s = torch.randint(4, V, (int(torch.randint(1, 8, (1,), generator=g)),), generator=g).tolist()
        y = int(torch.rand(1, generator=g) < 0.5)
        if y:
            s[int(torch.randint(0, len(s), (1,), generator=g))] = 3
        ids.append(s)
        labels.append(y)
    return ids, torch.tensor(labels)


def test_training_learns_a_toy_task_deterministically():
    runs = []
    for _ in range(2):
        model = small("rand")
        recipe = CNNTrainSettings(lr=0.01, batch_size=20, epochs=5, patience=5)
        hist = train_kim_cnn(model, toy_task(200), toy_task(60, seed=1), recipe)
        runs.append((hist.metrics["val_acc"], model.out.weight.clone()))
    assert max(runs[0][0]) >= 0.9
    assert runs[0][0] == runs[1][0] and torch.equal(runs[0][1], runs[1][1])


def test_checkpoint_round_trip(tmp_path):
    model = small("multichannel").eval()
    x, lengths = tokens_of([4, 2])
    nlpcourse.save_checkpoint(tmp_path / "c.pt", model, model.config)
    back = nlpcourse.load_checkpoint(tmp_path / "c.pt", build=build_kim_cnn).model
    assert torch.equal(back(x, lengths), model(x, lengths))


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["rand", "multichannel"])
def test_cuda_matches_cpu(variant):
    model = small(variant).eval()
    x, lengths = tokens_of([9, 1, 4])
    want = model(x, lengths)
    got = model.to("cuda")(x.cuda(), lengths.cuda()).cpu()
    assert torch.allclose(got, want, atol=1e-4)


# ---------------------------------------------------------------- what a trained model looks at


def test_window_preactivations_pool_to_the_model_features():
    model = small().eval()
    x, lengths = tokens_of([2, 7, 4])  # one sentence shorter than the widest filter
    maps = window_preactivations(model, x, lengths)
    pooled = torch.cat([a.amax(dim=2) for a in maps], dim=1)  # (B,F)
    assert torch.allclose(pooled, model.pooled_preactivations(x, lengths))
    for w, a in zip(model.config.widths, maps):
        assert a.shape == (3, model.config.maps, 7 + w - 1)
        assert torch.isinf(a[0, :, 2 + w - 1:]).all() and torch.isfinite(a[0, :, :2 + w - 1]).all()


@given(st.integers(0, 12), st.integers(1, 5), st.integers(1, 9))
def test_window_span_holds_the_tokens_of_the_window(j, width, length):
    start, stop = window_span(j, width, length)
    assert [t for t in range(j - width + 1, j + 1) if 0 <= t < length] == list(range(start, stop))


def test_decisive_ngrams_add_up_to_the_logits_and_point_at_their_window():
    model = small().eval()
    ids = tokens_of([6])[0][0].tolist()
    F_ = model.config.features
    evidence = decisive_ngrams(model, ids, k=F_)
    logits = model(torch.tensor([ids]))[0]
    total = sum(e.contribution for e in evidence) + model.out.bias
    assert torch.allclose(total, logits, atol=1e-5)
    predicted = int(logits.argmax())
    pushes = [float(e.contribution[predicted] - e.contribution[1 - predicted]) for e in evidence]
    assert pushes == sorted(pushes, reverse=True)
    maps = window_preactivations(model, torch.tensor([ids]))
    for e in evidence:  # h_f is the ReLU of the best window's pre-activation
        best = maps[model.config.widths.index(e.width)][0, e.filter].max()
        assert e.activation == pytest.approx(max(0.0, float(best)), abs=1e-6)
        assert 1 <= e.stop - e.start <= e.width


def test_top_ngrams_are_the_best_windows_of_their_sentences():
    model = small().eval()
    x, lengths = tokens_of([5, 3, 8, 6], seed=3)
    sentences = [x[i, :n].tolist() for i, n in enumerate(lengths.tolist())]
    found = top_ngrams(model, sentences, width_index=0, filters=[0, 2], k=3, batch_size=2)
    maps = window_preactivations(model, x, lengths)[0]  # (B,M,T+2)
    for f, rows in found.items():
        best = maps[:, f].amax(dim=1)  # (B,)
        assert [round(s, 5) for s, *_ in rows] == [round(v, 5) for v in best.sort(descending=True).values[:3].tolist()]
        assert len({b for _, b, _, _ in rows}) == len(rows)


def test_top_ngrams_lists_a_repeated_phrase_once():
    model = small().eval()
    sentence = tokens_of([6], seed=4)[0][0].tolist()
    found = top_ngrams(model, [sentence] * 4 + [sentence[::-1]], width_index=1, filters=[1], k=3)
    windows = [tuple(([sentence] * 4 + [sentence[::-1]])[b][s:e]) for _, b, s, e in found[1]]
    assert len(windows) == len(set(windows)) == 2


# ---------------------------------------------------------------- the script and the benchmark (tiny runs)


def run_tool(path: Path, *args: str, cwd: Path) -> str:
    proc = subprocess.run([sys.executable, str(path), *args], capture_output=True, text=True, timeout=300, cwd=cwd)
    assert proc.returncode == 0, f"{path.name} {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_train_cnn_tiny_writes_a_small_checkpoint_that_loads(tmp_path):
    out = tmp_path / "cnn.pt"
    run_tool(ROOT / "scripts" / "train_cnn.py", "--tiny", "--out", str(out), cwd=tmp_path)
    report = json.loads(out.with_suffix(".json").read_text())
    assert 0.0 <= report["test_acc"] <= 1.0 and report["seconds"] > 0
    ckpt = nlpcourse.load_checkpoint(out, build=build_kim_cnn)
    assert ckpt.model.config.vocab_size == len(ckpt.vocab) == report["config"]["vocab_size"]
    x = torch.tensor([ckpt.vocab.encode(["a", "great", "film"])])
    assert ckpt.model(x).shape == (1, 2)
    assert out.stat().st_size < 5 * 2**20
    assert not out.with_name(out.name + ".tmp").exists()


def test_benchmark_tiny_run_writes_every_system(tmp_path):
    out = tmp_path / "cnn.json"
    table = run_tool(ROOT / "benchmarks" / "cnn.py", "--tiny", "--json", str(out), cwd=tmp_path)
    assert "targets" in table
    report = json.loads(out.read_text())
    names = {"majority", "logreg", "nbsvm", "cbow_mean", "cnn_rand", "cnn_static", "cnn_nonstatic",
             "cnn_multichannel"}
    assert set(report["systems"]) == names
    for r in report["systems"].values():
        assert 0.0 <= r["accuracy"] <= 1.0 and 0.0 <= r["cv_mean"] <= 1.0 and r["cv_std"] >= 0 and r["wall_s"] >= 0
    setup = report["setup"]
    assert setup["vectors"] in ("chapter", "domain") and setup["folds_done"] == 2
    assert 0 < setup["chapter_type_coverage"] < 1 and 0 < setup["domain_type_coverage"] < 1



def test_benchmark_ablations_keep_the_rest_of_the_json_and_pair_each_seed(tmp_path):
    out = tmp_path / "cnn.json"
    out.write_text(json.dumps({"systems": {"kept": 1}}))
    run_tool(ROOT / "benchmarks" / "cnn.py", "--tiny", "--ablations", "--ablation-seeds", "2", "--json", str(out),
             cwd=tmp_path)
    report = json.loads(out.read_text())
    assert report["systems"] == {"kept": 1}
    ab = report["ablations"]
    assert set(ab) == {"kim", "no_dropout", "mean_pooling", "kmax_2", "setup"} and ab["setup"]["seeds"] == 2
    for name in ("no_dropout", "mean_pooling", "kmax_2"):
        r = ab[name]
        assert r["minus_kim"] == pytest.approx([a - k for a, k in zip(r["accuracy"], ab["kim"]["accuracy"])])
        lo, hi = r["diff_ci95"]
        assert lo <= r["diff_mean"] <= hi
    path = ROOT / "data" / "checkpoints" / "cnn.pt"
    ckpt = nlpcourse.load_checkpoint(path, build=build_kim_cnn)
    x = torch.tensor([ckpt.vocab.encode(["a", "moving", "and", "funny", "film"])])
    assert ckpt.model.predict_proba(x).shape == (1, 2)
    assert 0.5 < ckpt.extra["test_acc"] <= 1.0
    assert path.stat().st_size < 5 * 2**20


def test_sentence_explorer_classifies_and_redraws():
    from nlpcourse.widgets import sentence_explorer

    model = small().eval()
    vocab = Vocab(["<pad>", "<unk>", "<bos>", "<eos>"] + [f"w{i}" for i in range(V - 4)])
    box = sentence_explorer(model, vocab, str.split, "w1 w2 w3 w4", k=3)
    assert box.result.value.count("<tr>") == 1 + 3 and "p = " in box.result.value
    box.text.value = "w5 zzz"
    assert "zzz" in box.result.value and "Not in the vocabulary" in box.result.value
    box.text.value = "   "
    assert "Type a sentence" in box.result.value
    assert repr(box).startswith("SentenceExplorer(")
    with pytest.raises(ConfigError, match="labels"):
        sentence_explorer(model, vocab, str.split, "w1", labels=("a", "b", "c"))


def test_nb_ratio_is_the_smoothed_log_count_ratio_of_wang_and_manning():
    bench = load_benchmark("cnn")
    X = sparse.csr_matrix(np.array([[1, 0, 1], [1, 1, 0], [0, 1, 0]]))  # rows: pos, pos, neg
    r = bench.nb_ratio(X, np.array([1, 1, 0]), alpha=1.0)
    p, q = np.array([3, 2, 2]), np.array([1, 2, 1])  # counts + 1
    assert np.allclose(r, np.log(p / 7) - np.log(q / 4))


def test_nbsvm_without_interpolation_is_a_linear_svm_on_the_scaled_features():
    bench = load_benchmark("cnn")
    rng = np.random.default_rng(0)
    X = sparse.csr_matrix((rng.random((60, 12)) < 0.3).astype(float))
    y = (np.asarray(X[:, :3].sum(1)).ravel() > 0.5).astype(int)
    model = bench.NBSVM(C=1.0, beta=1.0).fit(X, y)
    svm = bench.LinearSVC(C=1.0, max_iter=10_000).fit(X.multiply(model.r).tocsr(), y)
    assert model.score(X, y) == svm.score(X.multiply(model.r).tocsr(), y) > 0.9
