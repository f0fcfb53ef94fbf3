"""The word-vector library: the corpus, the word2vec trainer, PPMI + SVD, the word2vec file format,
the evaluations, the explorer widget, the training script and the benchmark.

The trainer's hand-written update is checked against autograd on the loss it claims to minimise (CBOW's
default update, the C tool's, which is not that gradient, against a hand computation); its windows
against a brute-force loop; its quality on a corpus with a planted structure; its reproducibility as
its module docstring promises it: bitwise on the CPU, and bitwise run after run on CUDA. Every test
that is not about CUDA trains on the CPU explicitly (``device="cpu"``), so that it means the same
with and without a GPU; the CUDA variants are marked ``gpu`` (skipped where there is none).
"""
from __future__ import annotations

import contextlib
import gzip
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from nlpcourse.data.word_corpus import WordCorpus, build_word_corpus, bundled_sentences, words_only
from nlpcourse.errors import ConfigError, CourseError, DataError
from nlpcourse.models.ppmi_svd import cooccurrence, ppmi, ppmi_svd_vectors
from nlpcourse.models.word2vec import Word2Vec, Word2VecConfig, interleave, keep_probability
from nlpcourse.vectors import WordVectors, evaluate_analogies, evaluate_similarity, evaluation_path
from scripts.train_word2vec import median_lengths

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINT = ROOT / "data" / "checkpoints" / "word2vec_sg.bin"
#: The devices a test that is about the trainer's arithmetic runs on: the CPU always, CUDA where present.
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


# ------------------------------------------------------------------ a corpus with a planted structure


def planted_sentences(n: int = 3000, seed: int = 0) -> list[list[str]]:
    """Sentences of 8 words, each drawn from one of two topics (a0..a9 or b0..b9), plus a shared
    filler word: words of the same topic share contexts, words of different topics never do."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        topic = "ab"[int(torch.randint(2, (1,), generator=g))]
        words = [f"{topic}{int(i)}" for i in torch.randint(10, (7,), generator=g)]
        out.append(words[:3] + ["the"] + words[3:])
    return out


@pytest.fixture(scope="module")
def planted() -> WordCorpus:
    return build_word_corpus(planted_sentences(), min_count=1)


def small_config(**kw) -> Word2VecConfig:
    return Word2VecConfig(**{"dim": 16, "epochs": 3, "batch_size": 256, "sample": 0.0, "lr": 0.05,
                             "noise_table_size": 100_000, **kw})


# ------------------------------------------------------------------ corpus


def test_corpus_counts_ids_and_sentences():
    c = build_word_corpus([["a", "b", "a"], ["c", "a"], ["b", "rare"]], min_count=2)
    assert c.words == ["a", "b"]  # most frequent first; rare words and c dropped
    assert c.counts.tolist() == [3, 2]
    assert c.ids.tolist() == [0, 1, 0, 0, 1]
    assert c.sentence.tolist() == [0, 0, 0, 1, 2]
    assert c.raw_tokens == 7 and len(c) == 5
    assert c.encode(["b", "a"]).tolist() == [1, 0]
    with pytest.raises(KeyError, match="'zebra'"):
        c.encode(["zebra"])


def test_corpus_bad_input_names_the_problem():
    with pytest.raises(DataError, match="empty"):
        build_word_corpus([[], []])
    with pytest.raises(DataError, match="min_count=10"):
        build_word_corpus([["a", "b"]], min_count=10)
    with pytest.raises(ValueError, match="min_count"):
        build_word_corpus([["a"]], min_count=0)


def test_bundled_sentences_are_lowercase_words():
    sents = bundled_sentences(["austen"], max_tokens=5000)
    assert 0 < sum(map(len, sents)) <= 5000
    assert all(w == w.lower() and w[0].isalnum() for s in sents for w in s)
    assert words_only(["well", ",", "don't", "!", "1811"]) == ["well", "don't", "1811"]


# ------------------------------------------------------------------ subsampling, windows


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(1, 10**6), min_size=2, max_size=50), st.sampled_from([1e-3, 1e-4, 1e-5]))
def test_keep_probability_is_a_probability_that_falls_with_frequency(counts, t):
    c = torch.tensor(counts)
    p = keep_probability(c, t)
    assert ((p > 0) & (p <= 1)).all()
    order = torch.argsort(c)
    assert (p[order].diff() <= 1e-12).all()  # more frequent: kept less often
    f = c.double() / c.sum()
    assert (p[f <= t] == 1).all()  # words rarer than t are always kept


def test_keep_probability_zero_sample_keeps_everything():
    assert (keep_probability(torch.tensor([5, 1000]), 0.0) == 1).all()


def brute_force_contexts(ids, sent, radius, centre):
    return sorted(j for j in range(len(ids)) if j != centre and abs(j - centre) <= radius[centre]
                  and sent[j] == sent[centre])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=40), st.integers(0, 2**31 - 1))
def test_windows_respect_radius_and_sentences(sentence_lengths, seed):
    g = torch.Generator().manual_seed(seed)
    sent = torch.cat([torch.full((n,), k) for k, n in enumerate(sentence_lengths)])
    ids = torch.randint(5, (len(sent),), generator=g)
    corpus = build_word_corpus([["w0", "w1", "w2", "w3", "w4"]], min_count=1)
    model = Word2Vec(small_config(window=4, noise_table_size=100), corpus, device="cpu")
    radius = torch.randint(1, 5, (len(ids),), generator=g)
    V = corpus.vocab_size
    for r in range(1, 5):
        centres = (radius == r).nonzero().squeeze(1)
        context, valid = model._contexts(ids, sent, centres, r)  # (n, 2r)
        offsets = [o for o in range(-r, r + 1) if o]
        for row, i in enumerate(centres.tolist()):
            got = sorted(i + offsets[k] for k in range(len(offsets)) if valid[row, k])
            assert got == brute_force_contexts(ids.tolist(), sent.tolist(), radius.tolist(), i)
            for k in range(len(offsets)):  # a filled slot holds the word there; an empty one the zero row V
                assert context[row, k] == (ids[i + offsets[k]] if valid[row, k] else V)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 200), st.integers(0, 50), st.integers(1, 12))
def test_interleaved_cbow_steps_cover_the_block_once_with_windows_apart(start, n, stride):
    """CBOW's steps: every centre of the block exactly once, and two centres of one step at least
    ``stride`` positions apart (stride 2 * window + 1: their windows never overlap)."""
    block = torch.arange(start, start + n)
    order, ends = interleave(block, stride)
    assert sorted(order.tolist()) == block.tolist() and ends[0] == 0 and ends[-1] == n
    for a, b in zip(ends[:-1], ends[1:]):
        assert a < b and (order[a:b].diff() == stride).all()


# ------------------------------------------------------------------ the update is SGD on the loss


def one_batch(planted, device, **kw):
    """A model on ``device`` (no row repeats enough to be damped, output vectors not all zero so that every
    term matters), a batch of 40 centres of radius 3 (many of their slots empty: the planted sentences have
    8 words), and the noise words ``_step`` will draw for it, on the CPU."""
    cfg = small_config(dim=6, negatives=3, max_row_repeats=10**9, **kw)
    model = Word2Vec(cfg, planted, device=device)
    n = 40
    g = torch.Generator().manual_seed(1)
    ids, sent = planted.ids.to(device), planted.sentence.to(device)
    centres = torch.arange(100, 100 + n, device=device)
    context, valid = model._contexts(ids, sent, centres, 3)  # radius 3 for all
    assert valid.any() and not valid.all()  # both filled and empty slots
    model.W_out = (torch.randn(model.W_out.shape, generator=g) * 0.3).to(device)
    # the noise words _step will draw: the same call on the model's generator, which lives on its device
    state = model.generator.get_state()
    draws = torch.randint(len(model.noise_table), (n * cfg.negatives,), generator=model.generator, device=model.device)
    negatives = model.noise_table[draws].long().view(n, cfg.negatives).cpu()
    model.generator.set_state(state)
    return model, context, valid, ids[centres], negatives


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("architecture,update", [("skipgram", "tool"), ("cbow", "exact")])
def test_hand_written_update_is_sgd_on_the_negative_sampling_loss(planted, architecture, update, device):
    """One batch: W_new = W - lr * d(loss)/dW, with the loss of the module docstring and the same noise
    words, by autograd: skip-gram, and CBOW with ``cbow_update="exact"`` (the true gradient of the mean).
    The model and its batch live on ``device``; the autograd reference is computed on the CPU in float64."""
    model, context, valid, centre, negatives = one_batch(planted, device, architecture=architecture,
                                                         cbow_update=update)
    n, K, lr = len(centre), model.config.negatives, 0.1
    W_in = model.W_in.detach().cpu().double().requires_grad_()
    W_out = model.W_out.detach().cpu().double().requires_grad_()
    logsig = torch.nn.functional.logsigmoid
    ctx, ok, cen = context.cpu(), valid.cpu(), centre.cpu()
    loss = torch.zeros((), dtype=torch.float64)
    for i in range(n):
        if architecture == "skipgram":
            inputs = [W_in[ctx[i, k]] for k in range(ctx.shape[1]) if ok[i, k]]
        else:
            members = [W_in[ctx[i, k]] for k in range(ctx.shape[1]) if ok[i, k]]
            inputs = [torch.stack(members).mean(0)] if members else []
        for x in inputs:
            loss = loss - logsig(W_out[cen[i]] @ x)
            for k in range(K):
                if negatives[i, k] != cen[i]:
                    loss = loss - logsig(-W_out[negatives[i, k]] @ x)
    d_in, d_out = torch.autograd.grad(loss, (W_in, W_out))
    got_loss = model._step(context, valid, centre, lr)
    assert model.W_in.device.type == model.W_out.device.type == torch.device(device).type
    assert float(got_loss) == pytest.approx(float(loss.detach()), rel=1e-4)
    torch.testing.assert_close(model.W_in.cpu().double(), (W_in - lr * d_in).detach(), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(model.W_out.cpu().double(), (W_out - lr * d_out).detach(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_cbow_tool_update_adds_the_full_dh_to_every_context_word(planted, device):
    """CBOW's default update, that of the C tool and gensim (``cbow_mean=1``), by hand: with ``h`` the
    mean of a centre's context vectors and ``dh`` the gradient of its loss with respect to ``h``, every
    filled context slot gets ``-lr * dh`` in full (not ``dh / C``, the true gradient), every output
    vector ``-lr * dloss/du``, as in the exact update; the zero row of the empty slots stays zero."""
    model, context, valid, centre, negatives = one_batch(planted, device, architecture="cbow")
    assert model.config.cbow_update == "tool"
    n, lr = len(centre), 0.1
    W_in, W_out = model.W_in.cpu().double(), model.W_out.cpu().double()
    new_in, new_out = W_in.clone(), W_out.clone()
    ctx, ok, cen = context.cpu(), valid.cpu(), centre.cpu()
    for i in range(n):
        members = [int(ctx[i, k]) for k in range(ctx.shape[1]) if ok[i, k]]
        if not members:
            continue
        h = W_in[members].mean(0)
        dh = torch.zeros_like(h)
        targets = [(int(cen[i]), 1.0)] + [(int(w), 0.0) for w in negatives[i] if w != cen[i]]
        for word, label in targets:  # d/ds of -log σ(s) is σ(s) - 1; of -log σ(-s), σ(s)
            coef = float(torch.sigmoid(W_out[word] @ h)) - label
            dh += coef * W_out[word]
            new_out[word] -= lr * coef * h
        for word in members:  # a word in two slots gets dh twice
            new_in[word] -= lr * dh
    model._step(context, valid, centre, lr)
    torch.testing.assert_close(model.W_in.cpu().double(), new_in, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(model.W_out.cpu().double(), new_out, rtol=1e-4, atol=1e-5)
    assert not model.W_in[-1].any()  # the padding row: untouched
    # and so C times the exact update: one centre with C filled slots, both ways, from the same start
    i = int(torch.nonzero(ok.sum(1) >= 3)[0])
    C = int(ok[i].sum())
    moved = {}
    for update in ("tool", "exact"):
        one, *_ = one_batch(planted, device, architecture="cbow", cbow_update=update)
        start = one.W_in.clone()
        one._step(context[i:i + 1], valid[i:i + 1], centre[i:i + 1], lr)
        moved[update] = (one.W_in - start).cpu().double()
    assert moved["tool"].abs().sum() > 0
    torch.testing.assert_close(moved["tool"], C * moved["exact"], rtol=1e-4, atol=1e-6)


def test_damping_scales_only_rows_used_too_often(planted):
    model = Word2Vec(small_config(max_row_repeats=4), planted, device="cpu")
    rows = torch.tensor([[0, 1], [0, 2], [0, 1], [0, 3], [0, 3]])
    uses = torch.ones(5, 2)
    scale = model._damping(rows, uses)
    assert torch.allclose(scale[:, 0], torch.full((5,), 4 / 5))  # word 0: 5 uses, scaled to 4
    assert (scale[:, 1] == 1).all()


# ------------------------------------------------------------------ training


def train_planted(planted, device, **kw) -> tuple[Word2Vec, list[float]]:
    model = Word2Vec(small_config(**kw), planted, device=device)
    history = model.fit(planted, progress=False)
    return model, history["loss"]


def test_a_report_without_a_sampled_batch_waits_instead_of_saying_zero(planted):
    """More reports than sampled batches (one in LOSS_EVERY): every logged loss is a measured one."""
    model = Word2Vec(small_config(epochs=1, batch_size=64), planted, device="cpu")
    history = model.fit(planted, progress=False, reports=400)
    assert len(history["loss"]) > 10 and min(history["loss"]) > 0.1


def assert_learns_the_planted_topics(planted, model, loss):
    assert loss[-1] < 0.8 * loss[0]
    wv = model.vectors()
    E = wv.unit()
    a = [wv.index[f"a{i}"] for i in range(10)]
    b = [wv.index[f"b{i}"] for i in range(10)]
    within = (E[a] @ E[a].T).mean() + (E[b] @ E[b].T).mean()
    across = 2 * (E[a] @ E[b].T).mean()
    assert within - across > 0.5, (within, across)
    assert all(w.startswith("a") for w in nearest_words(wv, "a3", 5))


def nearest_words(wv: WordVectors, word: str, k: int) -> list[str]:
    """The ``k`` nearest words by cosine, computed here rather than by gensim (``WordVectors.nearest``): the
    CUDA tests run on the lent GPU machine, where gensim is not installed (scripts/gpu_carry.sh)."""
    E = wv.unit()
    sims = E @ E[wv.index[word]]  # (V,D) x (D,) -> (V,)
    sims[wv.index[word]] = -2.0  # not itself
    return [wv.words[i] for i in sims.topk(k).indices.tolist()]


@contextlib.contextmanager
def deterministic_algorithms(mode: bool, warn_only: bool = False):
    """``torch.use_deterministic_algorithms(mode, warn_only=...)`` for the block, then the setting as it
    was: the flag is global, and ``seed_everything`` (another test) may have left it on."""
    before = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(mode, warn_only=warn_only)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])


def test_training_is_deterministic_and_learns_the_planted_topics(planted):
    """The CPU promise: the same seed gives bitwise-identical vectors and loss curve."""
    runs = [train_planted(planted, "cpu") for _ in range(2)]
    (first, loss), (second, loss_again) = runs
    assert torch.equal(first.W_in, second.W_in) and torch.equal(first.W_out, second.W_out)
    assert loss == loss_again
    assert not first.W_in[-1].any()  # the padding row of the empty context slots stays zero
    assert_learns_the_planted_topics(planted, first, loss)
    other, _ = train_planted(planted, "cpu", seed=1)
    assert not torch.equal(first.W_in, other.W_in)  # the seed does decide the run


@pytest.mark.gpu
@pytest.mark.parametrize("architecture,update", [("skipgram", "tool"), ("cbow", "tool"), ("cbow", "exact")])
def test_cuda_training_is_deterministic_and_learns_the_planted_topics(planted, architecture, update):
    """The CUDA promise: bitwise-identical vectors and loss curve run after run on one GPU, with
    ``torch.use_deterministic_algorithms`` off (the promise must not lean on that global flag) and the
    same with it on, where none of the trainer's operations may be one it warns about."""
    with deterministic_algorithms(False):
        runs = [train_planted(planted, "cuda", architecture=architecture, cbow_update=update) for _ in range(2)]
    (first, loss), (second, loss_again) = runs
    assert first.W_in.is_cuda and first.generator.device.type == "cuda"
    assert torch.equal(first.W_in, second.W_in) and torch.equal(first.W_out, second.W_out)
    assert loss == loss_again
    assert bool(torch.isfinite(first.W_in).all()) and not first.W_in[-1].any()  # the padding row stays zero
    with warnings.catch_warnings(record=True) as caught, deterministic_algorithms(True, warn_only=True):
        warnings.simplefilter("always")
        third, loss_det = train_planted(planted, "cuda", architecture=architecture, cbow_update=update)
    flagged = {str(w.message).split(" does not have")[0] for w in caught
               if "does not have a deterministic implementation" in str(w.message)}
    assert not flagged, f"operations torch.use_deterministic_algorithms flags: {sorted(flagged)}"
    assert torch.equal(first.W_in, third.W_in) and loss == loss_det
    if architecture == "skipgram":
        assert_learns_the_planted_topics(planted, first, loss)
    else:
        assert loss[-1] < loss[0]
        assert all(w.startswith("b") for w in nearest_words(first.vectors(), "b1", 5))


@pytest.mark.parametrize("update", ["tool", "exact"])
def test_cbow_trains_too(planted, update):
    model, loss = train_planted(planted, "cpu", architecture="cbow", cbow_update=update)
    assert loss[-1] < loss[0]
    assert all(w.startswith("b") for w, _ in model.vectors().nearest("b1", 5))
    again, loss_again = train_planted(planted, "cpu", architecture="cbow", cbow_update=update)
    assert torch.equal(model.W_in, again.W_in) and loss == loss_again  # the CPU promise holds for CBOW too


def test_learning_rate_defaults_to_the_c_tools_per_architecture():
    """lr=None: 0.025 for skip-gram, 0.05 for CBOW (the C tool's); resolved when read, so that replacing
    the architecture of a config gives the new one's default; an explicit lr is kept."""
    import dataclasses

    sg = Word2VecConfig()
    assert sg.lr is None and sg.initial_lr == 0.025 and sg.cbow_update == "tool"
    assert Word2VecConfig(architecture="cbow").initial_lr == 0.05
    assert dataclasses.replace(sg, architecture="cbow").initial_lr == 0.05
    assert Word2VecConfig(architecture="cbow", lr=0.025).initial_lr == 0.025
    with pytest.raises(ConfigError, match="min_lr"):
        Word2VecConfig(architecture="cbow", min_lr=0.06)  # above CBOW's default lr


def test_config_rejects_bad_values():
    for kwargs, field in [({"architecture": "glove"}, "architecture"), ({"negatives": 0}, "negatives"),
                          ({"dim": 0}, "dim"), ({"sample": -1e-3}, "sample"),
                          ({"lr": 0.01, "min_lr": 0.1}, "min_lr"), ({"cbow_update": "sum"}, "cbow_update"),
                          ({"architecture": "cbow", "cbow_update": "mean"}, "cbow_update")]:
        with pytest.raises(ConfigError, match=field) as info:
            Word2VecConfig(**kwargs)
        assert isinstance(info.value, CourseError) and isinstance(info.value, ValueError)
        assert "Word2VecConfig" in str(info.value)


def test_fit_rejects_another_vocabulary_and_an_empty_corpus(planted):
    other = build_word_corpus([["x", "y", "x"]], min_count=1)
    model = Word2Vec(small_config(), planted, device="cpu")
    with pytest.raises(ConfigError, match=r"another vocabulary \(2 words\).*\(21 words\)"):
        model.fit(other, progress=False)
    empty = WordCorpus(words=planted.words, counts=planted.counts, ids=planted.ids[:0],
                       sentence=planted.sentence[:0], raw_tokens=0)
    with pytest.raises(ConfigError, match="no tokens"):
        model.fit(empty, progress=False)


# ------------------------------------------------------------------ PPMI + SVD


def test_cooccurrence_matches_a_brute_force_count():
    sents = [["a", "b", "c", "a"], ["b", "a"], ["c"]]
    corpus = build_word_corpus(sents, min_count=1)
    M = cooccurrence(corpus, window=2).to_dense()
    expected = torch.zeros_like(M)
    for s in sents:
        for i, w in enumerate(s):
            for j in range(max(0, i - 2), min(len(s), i + 3)):
                if j != i:
                    expected[corpus.index[w], corpus.index[s[j]]] += 1
    assert torch.equal(M, expected)
    assert torch.equal(M, M.T)


def test_ppmi_is_positive_and_svd_vectors_separate_the_topics(planted):
    P = ppmi(cooccurrence(planted, window=3))
    assert (P.values() > 0).all()
    wv = ppmi_svd_vectors(planted, dim=4, window=3, vocab_size=21)
    assert wv.vectors.shape == (21, 4)
    assert all(w.startswith("a") for w, _ in wv.nearest("a5", 4))


# ------------------------------------------------------------------ the word2vec format


@pytest.mark.parametrize("name,binary", [("v.bin", True), ("v.txt", False), ("v.bin.gz", True)])
def test_word2vec_format_round_trip_and_gensim_reads_it(tmp_path, name, binary):
    from gensim.models import KeyedVectors

    wv = WordVectors(["the", "darcy's", "well-known", "été"], torch.randn(4, 7))
    path = wv.save(tmp_path / name, binary=binary)
    back = WordVectors.load(path)
    assert back.words == wv.words
    torch.testing.assert_close(back.vectors, wv.vectors, rtol=1e-5, atol=1e-6)
    kv = KeyedVectors.load_word2vec_format(str(path), binary=binary)
    assert list(kv.index_to_key) == wv.words
    torch.testing.assert_close(torch.from_numpy(kv.vectors), wv.vectors, rtol=1e-5, atol=1e-6)
    assert not list(tmp_path.glob("*.tmp"))


def test_word2vec_format_bad_input(tmp_path):
    with pytest.raises(ValueError, match="white space"):
        WordVectors(["new york"], torch.zeros(1, 2)).save(tmp_path / "x.bin")
    with pytest.raises(DataError, match="no word-vector file"):
        WordVectors.load(tmp_path / "missing.bin")
    (tmp_path / "cut.bin").write_bytes(b"3 4\nabc " + b"\0" * 5)
    with pytest.raises(DataError, match="cut.bin"):
        WordVectors.load(tmp_path / "cut.bin")
    with pytest.raises(ValueError, match="2 words"):
        WordVectors(["a", "b"], torch.zeros(3, 2))
    with pytest.raises(KeyError, match="'zebra'"):
        WordVectors(["a"], torch.ones(1, 2))["zebra"]


# ------------------------------------------------------------------ evaluations


def test_analogy_evaluation_on_vectors_built_to_answer(tmp_path):
    """Vectors where b - a + c is exactly d: every covered question is right, with both methods;
    a question with an unknown word is not covered."""
    g = torch.Generator().manual_seed(0)
    base = {w: torch.randn(16, generator=g) for w in ["man", "king", "paris", "x", "y"]}
    base["woman"], base["queen"] = base["man"] + 3 * base["x"], base["king"] + 3 * base["x"]
    base["france"] = base["paris"] + 3 * base["y"]
    base["london"] = torch.randn(16, generator=g)
    base["england"] = base["london"] + 3 * base["y"]
    wv = WordVectors(list(base), torch.stack(list(base.values())))
    questions = tmp_path / "q.txt"
    questions.write_text(": family\nman woman king queen\n: capitals\nParis France London England\n"
                         "Paris France Rome Italy\n")
    for method in ("3CosAdd", "3CosMul"):
        r = evaluate_analogies(wv, method, path=questions)
        assert (r.correct, r.covered, r.total) == (2, 2, 3), method
        assert r.sections == {"family": (1, 1), "capitals": (1, 1)}
    with pytest.raises(ValueError, match="3CosAdd"):
        evaluate_analogies(wv, "cosine", path=questions)


def test_evaluation_sets_come_from_gensim():
    for name in ("analogies", "wordsim353", "simlex999"):
        assert evaluation_path(name).is_file()
    with pytest.raises(KeyError, match="men"):
        evaluation_path("men")


@pytest.fixture(scope="module")
def committed() -> WordVectors:
    return WordVectors.load(CHECKPOINT)


def test_committed_vectors_load_and_their_report_is_reproduced(committed):
    """The committed vectors: the evaluation in their JSON report is what the evaluation code gives today."""
    report = json.loads(CHECKPOINT.with_suffix(".json").read_text())
    assert (len(committed), committed.dim) == (report["vocab_size"], report["config"]["dim"])
    ws = evaluate_similarity(committed, "wordsim353")
    assert ws.spearman == pytest.approx(report["similarity"]["wordsim353"]["spearman"], abs=1e-6)
    add = evaluate_analogies(committed, "3CosAdd")
    assert add.accuracy == pytest.approx(report["analogies"]["3CosAdd"]["accuracy"], abs=1e-9)
    assert add.accuracy > 0.08  # the quality the chapter and the benchmark report
    assert committed.nearest("daughter", 3)[0][0] in {"wife", "sister", "mother", "son"}


def test_embedding_explorer_redraws(committed):
    from nlpcourse.widgets import embedding_explorer

    box = embedding_explorer(committed.first(3000), word="heaven", analogy=("man", "woman", "king"))
    assert "queen" in box.answer.value
    box.word.value = "daughter"
    assert "daughter" in box.neighbours.value and "<table>" in box.neighbours.value
    box.a.value = "zzzz"
    assert "Not in the vocabulary" in box.answer.value
    assert repr(box).startswith("EmbeddingExplorer(")
    with pytest.raises(ValueError, match="three words"):
        embedding_explorer(committed, analogy=("a", "b"))


# ------------------------------------------------------------------ the script and the benchmark


def test_training_script_tiny_run(tmp_path):
    out = tmp_path / "w.bin"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "train_word2vec.py"), "--tiny", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wv = WordVectors.load(out)
    assert wv.dim == 16 and len(wv) > 500
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["config"]["epochs"] == 1 and len(report["history"]["loss"]) > 10
    assert set(report["analogies"]) == {"3CosAdd", "3CosMul"}
    assert report["config"]["architecture"] == "skipgram"
    assert report["median_length"]["input"] > 0 and report["median_length"]["output"] > 0


def test_training_script_trains_cbow_with_the_update_asked_for(tmp_path):
    """The chapter's two CBOW checkpoints: the update named in the report, and the median lengths the
    chapter compares, which are those of the trained matrices (the input ones without the padding row)."""
    out, script = tmp_path / "c.bin", str(ROOT / "scripts" / "train_word2vec.py")
    proc = subprocess.run([sys.executable, script, "--tiny", "--architecture", "cbow", "--cbow-update", "exact",
                           "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["config"]["architecture"] == "cbow" and report["config"]["cbow_update"] == "exact"
    assert WordVectors.load(out).dim == 16 and report["median_length"]["input"] > 0
    corpus = build_word_corpus(["a b a c".split()], min_count=1)
    model = Word2Vec(Word2VecConfig(dim=4), corpus)
    model.W_in[:-1], model.W_out[:] = 3.0, torch.tensor([[0.0] * 4, [1.0] * 4, [2.0] * 4])
    assert median_lengths(model) == {"input": 6.0, "output": 2.0}
    proc = subprocess.run([sys.executable, script, "--tiny", "--cbow-update", "exact", "--out", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2 and "--cbow-update exact is for --architecture cbow" in proc.stderr


def test_benchmark_small_run_writes_the_documented_json(tmp_path):
    out = tmp_path / "bench.json"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "word2vec.py"), "--max-tokens", "30000",
                           "--epochs", "1", "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(out.read_text())
    for side in ("course", "gensim", "course_cbow", "gensim_cbow"):
        for key in ("analogy_accuracy", "ws353_spearman", "simlex_spearman", "wall_s", "words_per_s"):
            assert isinstance(data[side][key], float), (side, key)
    assert data["ratio"]["wall_s"] == pytest.approx(data["course"]["wall_s"] / data["gensim"]["wall_s"])
    assert data["ratio_cbow"]["wall_s"] == pytest.approx(data["course_cbow"]["wall_s"] / data["gensim_cbow"]["wall_s"])
    assert data["setup"]["lr"] == {"skipgram": 0.025, "cbow": 0.05}
    assert "course/gensim" in proc.stdout and "cbow targets" in proc.stdout


def test_committed_benchmark_table_has_the_documented_keys():
    data = json.loads((ROOT / "benchmarks" / "results" / "word2vec.json").read_text())
    for side in ("course", "gensim", "course_cbow", "gensim_cbow"):
        assert {"analogy_accuracy", "ws353_spearman", "simlex_spearman", "wall_s", "words_per_s"} <= set(data[side])
    assert data["setup"]["corpus_words"] > 2_000_000 and data["setup"]["threads"] == 2


def test_gzip_helper_reads_what_gzip_wrote(tmp_path):
    """A .gz vectors file is a real gzip stream (other tools can read it)."""
    path = WordVectors(["a", "b"], torch.ones(2, 3)).save(tmp_path / "v.txt.gz", binary=False)
    with gzip.open(path, "rt") as fh:
        assert fh.readline().strip() == "2 3"
