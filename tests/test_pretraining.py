"""The pretraining chapter's committed models (``data/checkpoints/bert.pt``, ``gpt_reviews.pt``,
``elmo_brown.pt``, and the two stages ``bert_english.pt`` and ``bert_english_tapt.pt``) load with the current
classes and have learnt something, and ``benchmarks/pretraining.py --tiny`` writes every system, the recipes and
the distributed runs."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from nlpcourse.data import load_reviews, review_pieces, review_split, split_indices
from nlpcourse.data.batching import pad_batch
from nlpcourse.data.vocab import SPECIALS as WORD_SPECIALS
from nlpcourse.data.wordpiece import CLS_ID, SEP_ID, SPECIALS, WordPieces, train_wordpiece
from nlpcourse.models.bert import BertConfig, bert_from_config, build_bert, mlm_corrupt, mlm_loss
from nlpcourse.models.elmo import bilm_from_config
from nlpcourse.models.gpt import gpt_from_config, gpt_loss
from nlpcourse.train import load_checkpoint, save_checkpoint
from nlpcourse.vectors import WordVectors

ROOT = Path(__file__).resolve().parents[1]
CHECKPOINTS = ROOT / "data" / "checkpoints"

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/conftest.py


@pytest.fixture(scope="module")
def bert_ck():
    return load_checkpoint(CHECKPOINTS / "bert.pt", build=bert_from_config)


@pytest.fixture(scope="module")
def valid_ids(bert_ck):
    """The validation snippets of the CNN chapter's split, in the checkpoint's pieces."""
    return first_valid_snippets(bert_ck)


def first_valid_snippets(ck, n: int = 400) -> torch.Tensor:
    """(n, T): the first ``n`` validation snippets of the CNN chapter's split, [CLS] pieces [SEP] in ``ck``'s
    pieces, cut to 64 and padded."""
    wp = WordPieces.from_json(ck.extra["tokenizer"])
    reviews = load_reviews()
    valid = split_indices(len(reviews), (0.8, 0.1, 0.1), seed=0, groups=[r.movie for r in reviews])[1]
    return pad_batch([wp.pair(reviews[i].text, max_len=64).ids for i in valid[:n]]).tokens


def test_review_pieces_is_the_cnn_split_in_bert_input(bert_ck, valid_ids):
    """The same snippets and labels as the CNN chapter's split, part by part, each [CLS] pieces [SEP] and cut to
    max_len; the first 400 validation snippets are the ones the tests above read at max_len 64."""
    parts, words = review_pieces(bert_ck.extra["tokenizer"], 24), review_split()
    for name in ("train", "valid", "test"):
        ids, labels = parts[name]
        assert torch.equal(labels, getattr(words, name).labels), name
        assert all(row[0] == CLS_ID and row[-1] == SEP_ID and 3 <= len(row) <= 24 for row in ids), name
    long = review_pieces(bert_ck.extra["tokenizer"], 64)["valid"][0][:400]
    assert torch.equal(pad_batch(long).tokens, valid_ids)
    assert review_pieces(bert_ck.extra["tokenizer"], 24) is parts, "cached: built once per vocabulary and length"


def unigram_entropy(ids: torch.Tensor, vocab: int) -> float:
    """Nats per piece of the pieces' own frequencies: what a model that ignores the context gets at best."""
    counts = torch.bincount(ids[ids >= len(SPECIALS)], minlength=vocab).float()
    p = counts[counts > 0] / counts.sum()
    return float(-(p * p.log()).sum())


def test_committed_bert_predicts_masked_pieces_from_their_context(bert_ck, valid_ids):
    model = bert_ck.model
    assert WordPieces.from_json(bert_ck.extra["tokenizer"]).vocab_size == model.config.vocab
    inputs, labels = mlm_corrupt(valid_ids, torch.Generator().manual_seed(0), vocab=model.config.vocab)
    with torch.no_grad():
        loss = float(mlm_loss(model, inputs, labels))
    assert loss < unigram_entropy(valid_ids, model.config.vocab) - 1.0, loss
    assert len(bert_ck.extra["losses"]) == bert_ck.extra["settings"]["steps"] and bert_ck.extra["seconds"] > 0


def test_committed_gpt_shares_the_vocabulary_and_beats_the_unigram_model(bert_ck, valid_ids):
    ck = load_checkpoint(CHECKPOINTS / "gpt_reviews.pt", build=gpt_from_config)
    assert ck.extra["tokenizer"] == bert_ck.extra["tokenizer"]
    with torch.no_grad():
        loss = float(gpt_loss(ck.model.float(), valid_ids))
    assert loss == pytest.approx(ck.extra["val_loss"], abs=0.15)  # 400 of the validation snippets
    assert loss < unigram_entropy(valid_ids, ck.model.config.vocab) - 0.5, loss


def held_out_mlm(ck) -> tuple[float, float]:
    """(masked-LM loss, the pieces' unigram entropy) in nats on 400 validation snippets, in ``ck``'s pieces."""
    ids = first_valid_snippets(ck)
    inputs, labels = mlm_corrupt(ids, torch.Generator().manual_seed(0), vocab=ck.model.config.vocab)
    with torch.no_grad():
        return float(mlm_loss(ck.model.eval(), inputs, labels)), unigram_entropy(ids, ck.model.config.vocab)


def test_committed_stages_english_then_the_snippets_record_their_runs_and_each_helps_on_reviews():
    """``bert_english.pt`` read only the course's English; ``bert_english_tapt.pt`` went on from it on the
    training snippets, and keeps the first stage's record. Neither saw a validation snippet, yet the English
    alone already predicts them, and the snippet stage lowers the loss a good deal further."""
    english = load_checkpoint(CHECKPOINTS / "bert_english.pt", build=bert_from_config)
    tapt = load_checkpoint(CHECKPOINTS / "bert_english_tapt.pt", build=bert_from_config)
    assert english.extra["settings"]["corpus"] == "english" and english.extra["stages"] == []
    assert tapt.extra["settings"]["corpus"] == "reviews" and tapt.extra["tokenizer"] == english.extra["tokenizer"]
    (first,) = tapt.extra["stages"]
    assert first["losses"] == english.extra["losses"] and first["settings"] == english.extra["settings"]
    for ck in (english, tapt):
        assert len(ck.extra["losses"]) == ck.extra["settings"]["steps"] and ck.extra["seconds"] > 0
    (loss_english, entropy), (loss_tapt, _) = held_out_mlm(english), held_out_mlm(tapt)
    assert loss_english < entropy - 2.0, (loss_english, entropy)  # measured 4.19 against 6.39
    assert loss_tapt < loss_english - 0.5, (loss_tapt, loss_english)  # measured 3.42


def test_committed_elmo_loads_with_its_vocabulary_and_learnt_the_brown_corpus():
    ck = load_checkpoint(CHECKPOINTS / "elmo_brown.pt", build=bilm_from_config)
    model = ck.model.float()
    assert model.config.vocab == len(ck.vocab)
    ids = torch.tensor([ck.vocab.encode("the man said that he would come back .".split(), True, True)])
    with torch.no_grad():
        loss = float(model.loss(ids))
    assert loss < math.log(len(ck.vocab)) - 2, loss  # far better than a uniform guess
    assert len(model.layers(ids)) == model.config.layers + 1


@pytest.mark.slow
def benchmark_module():
    """``benchmarks/pretraining.py`` imported as a module."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import pretraining
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return pretraining


def test_benchmark_tiny_writes_every_system_recipe_and_the_distributed_runs(tmp_path):
    out = tmp_path / "pretraining.json"
    proc = subprocess.run([sys.executable, "benchmarks/pretraining.py", "--tiny", "--threads", "1", "--json",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert set(report["systems"]) == {"bert_pretrained", "bert_scratch", "best_bow", "best_cnn"}
    for name, result in report["systems"].items():
        assert 0 <= result["accuracy"] <= 1 and result["wall_s"] >= 0, name
    assert len(report["recipes"]) == 6 and report["systems"]["bert_pretrained"]["pretrain_s"] > 0
    ddp = report["ddp"]
    assert ddp["agree"] and len(ddp["losses_1proc"]) == len(ddp["losses_2proc"]) == 8
    assert ddp["pieces_per_s_1proc"] > 0 and ddp["pieces_per_s_2proc"] > 0


def test_benchmark_word_order_pairs_the_pretrained_bert_with_its_twin(tmp_path):
    """``--word-order`` adds the two networks' test AUCs on the bigram-shift snippets, seed by seed, and their
    paired difference, keeping the file's other results; the held-out part keeps both versions of a snippet."""
    out = tmp_path / "pretraining.json"
    out.write_text(json.dumps({"systems": {"kept": 1}}))
    proc = subprocess.run([sys.executable, "benchmarks/pretraining.py", "--word-order", "--tiny", "--curve-seeds", "2",
                           "--jobs", "2", "--threads", "1", "--json", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    order = report["word_order"]
    assert report["systems"] == {"kept": 1} and order["setup"]["seeds"] == 2
    assert all(0 < a < 1 for a in order["pretrained_auc"] + order["scratch_auc"])
    assert order["pretrained_auc"] != order["scratch_auc"]
    d = [a - b for a, b in zip(order["pretrained_auc"], order["scratch_auc"])]
    assert order["diff_mean"] == pytest.approx(sum(d) / 2)
    ids, labels = benchmark_module()._every_pair(([[1], [1, 2], [3], [3, 4], [5], [5, 6]], torch.tensor([0, 1] * 3)), 2)
    assert ids == [[1], [1, 2], [5], [5, 6]] and labels.tolist() == [0, 1, 0, 1]


def test_benchmark_curve_pairs_pretrained_and_scratch_on_the_same_label_subsets(tmp_path, capsys):
    """``--curve`` adds one entry per label budget to the JSON file's other results: per-seed accuracies of
    both networks and bag-of-words on the same subsets, and the paired difference's interval."""
    out = tmp_path / "pretraining.json"
    out.write_text(json.dumps({"systems": {"kept": 1}}))
    proc = subprocess.run([sys.executable, "benchmarks/pretraining.py", "--curve", "--tiny", "--curve-seeds", "2",
                           "--jobs", "2", "--threads", "1", "--json", str(out)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["systems"] == {"kept": 1} and report["curve_setup"]["seeds"] == 2
    curve = report["curve"]
    assert [c["all"] for c in curve] == [False, True] and curve[0]["labels"] == 20 < curve[1]["labels"]
    for c in curve:
        assert all(len(c[k]) == 2 for k in ("pretrained", "scratch", "bow", "pretrained_auc", "scratch_auc"))
        d = [a - b for a, b in zip(c["pretrained"], c["scratch"])]
        assert c["diff_mean"] == pytest.approx(sum(d) / 2)
        lo, hi = c["diff_ci95"]
        assert lo <= c["diff_mean"] <= hi and (lo < hi or d[0] == d[1])
    # --cnn-curve: both CNNs on the same subsets, added to each point, the rest of the file kept
    proc = subprocess.run([sys.executable, "benchmarks/pretraining.py", "--cnn-curve", "--tiny", "--jobs", "2",
                           "--threads", "1", "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    after = json.loads(out.read_text())
    assert after["systems"] == {"kept": 1} and after["curve_setup"]["cnn"]["variants"]["cnn_vectors"] == "nonstatic"
    for c, before in zip(after["curve"], curve):
        assert {k: c[k] for k in before} == before
        assert len(c["cnn_rand"]) == len(c["cnn_vectors"]) == 2 and all(0 < a < 1 for a in c["cnn_rand"])
        d = [a - b for a, b in zip(c["cnn_vectors"], c["cnn_rand"])]
        assert c["cnn"]["diff_mean"] == pytest.approx(sum(d) / 2)
    # --gpt-curve: the GPT on the same subsets, paired with both BERTs
    proc = subprocess.run([sys.executable, "benchmarks/pretraining.py", "--gpt-curve", "--tiny", "--jobs", "2",
                           "--threads", "1", "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    final = json.loads(out.read_text())
    assert final["curve_setup"]["gpt"]["lm_weight"] == 0.5 and "cnn" in final["curve_setup"]
    for c, before in zip(final["curve"], after["curve"]):
        assert {k: c[k] for k in before} == before
        assert len(c["gpt"]) == len(c["gpt_auc"]) == 2 and all(0 < a < 1 for a in c["gpt"] + c["gpt_auc"])
        for key, other in (("gpt_vs_scratch", "scratch"), ("gpt_vs_bert", "pretrained")):
            d = [a - b for a, b in zip(c["gpt"], c[other])]
            assert c[key]["diff_mean"] == pytest.approx(sum(d) / 2)
    # --gpt-scratch-curve: the GPT's network from random weights, paired with the pretrained GPT
    proc = subprocess.run([sys.executable, "benchmarks/pretraining.py", "--gpt-scratch-curve", "--tiny", "--jobs",
                           "2", "--threads", "1", "--json", str(out)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    gpt_final, final = final, json.loads(out.read_text())
    for c, before in zip(final["curve"], gpt_final["curve"]):
        assert {k: c[k] for k in before} == before and len(c["gpt_scratch"]) == len(c["gpt_scratch_auc"]) == 2
        assert all(r != g for r, g in zip(c["gpt_scratch_auc"], c["gpt_auc"]))  # the checkpoint not loaded
        for key, mine, other in (("gpt_vs_gpt_scratch", "gpt", "gpt_scratch"),
                                 ("gpt_auc_vs_gpt_scratch", "gpt_auc", "gpt_scratch_auc")):
            d = [a - b for a, b in zip(c[mine], c[other])]
            assert c[key]["diff_mean"] == pytest.approx(sum(d) / 2)
    # --stage-curve: another pretraining (a tiny BERT with the record of two stages, as scripts/pretrain_bert.py
    # writes it: test_bert.py runs the script) on the same subsets, under its name
    second = tmp_path / "tapt.pt"
    wp = WordPieces(train_wordpiece([r.text for r in load_reviews()[:1000]], 300))
    bert = build_bert(BertConfig(wp.vocab_size, 32, 2, 1, 64, 64), seed=99)  # not a curve seed's draw
    save_checkpoint(second, bert, bert.config, extra={
        "tokenizer": wp.to_json(), "settings": {"corpus": "reviews"}, "losses": [5.0, 4.5], "seconds": 1.0,
        "stages": [{"settings": {"corpus": "english"}, "losses": [7.0, 6.0], "seconds": 2.0}]})
    proc = subprocess.run([sys.executable, "benchmarks/pretraining.py", "--stage-curve", "tapt", "--checkpoint",
                           str(second), "--tiny", "--jobs", "2", "--threads", "1", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    staged = json.loads(out.read_text())
    setup = staged["curve_setup"]["stages"]["tapt"]
    assert [st["corpus"] for st in setup["pretraining"]] == ["english", "reviews"] and "gpt" in staged["curve_setup"]
    for c, before in zip(staged["curve"], final["curve"]):
        assert {k: c[k] for k in before} == before and len(c["tapt"]) == len(c["tapt_auc"]) == 2
        for key, mine, other in (("tapt_vs_scratch", "tapt", "scratch"), ("tapt_vs_bert", "tapt", "pretrained"),
                                 ("tapt_auc_vs_scratch", "tapt_auc", "scratch_auc")):
            d = [a - b for a, b in zip(c[mine], c[other])]
            assert c[key]["diff_mean"] == pytest.approx(sum(d) / 2)
    # --stage-scratch: that checkpoint's network from random weights, in its vocabulary, paired with the stage
    proc = subprocess.run([sys.executable, "benchmarks/pretraining.py", "--stage-curve", "tapt_rand", "--stage-scratch",
                           "--checkpoint", str(second), "--tiny", "--jobs", "2", "--threads", "1", "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    controlled = json.loads(out.read_text())
    setup = controlled["curve_setup"]["stages"]["tapt_rand"]
    assert setup["pretrained_from"] is None and setup["paired_with"] == ["tapt"]
    for c, before in zip(controlled["curve"], staged["curve"]):
        assert {k: c[k] for k in before} == before and all(r != t for r, t in zip(c["tapt_rand_auc"], c["tapt_auc"]))
        for key, mine, other in (("tapt_vs_tapt_rand", "tapt", "tapt_rand"),
                                 ("tapt_auc_vs_tapt_rand", "tapt_auc", "tapt_rand_auc")):
            d = [a - b for a, b in zip(c[mine], c[other])]
            assert c[key]["diff_mean"] == pytest.approx(sum(d) / 2)
    with pytest.raises(SystemExit, match="2"):
        benchmark_module().parse(["--stage-scratch", "--tiny"])
    assert "--stage-scratch needs --stage-curve" in capsys.readouterr().err
    for name in ("gpt", "scratch_auc", "not a name"):  # a name the curve uses already, or no name
        with pytest.raises(SystemExit, match="2"):
            benchmark_module().parse(["--stage-curve", name, "--tiny"])
        assert f"--stage-curve: {name!r} must be a name" in capsys.readouterr().err
    assert benchmark_module().parse(["--stage-curve", "english_tapt"])[0].stage_curve == "english_tapt"


def test_a_cnn_from_vectors_knows_every_word_with_a_vector_and_cnn_rand_only_its_labelled_words():
    pretraining = benchmark_module()
    wv = WordVectors(["good", "bad", "film"], torch.randn(3, 4))
    vocab = pretraining.vector_vocab([["good", "plot", "plot"], ["good", "acting"]], wv)
    assert vocab.itos[:4] == list(WORD_SPECIALS) and set(vocab.itos[4:]) == {"good", "plot", "bad", "film"}
    assert vocab.itos[4:6] == ["good", "plot"]  # the labelled words first, by count (training_vocab)
    assert "acting" not in vocab.itos  # seen once, no vector


def test_curve_label_subsets_are_nested_and_seeded():
    pretraining = benchmark_module()
    small, large = pretraining.label_subset(500, 30, seed=3), pretraining.label_subset(500, 100, seed=3)
    assert large[:30] == small and len(set(large)) == 100 and small == pretraining.label_subset(500, 30, seed=3)
    assert small != pretraining.label_subset(500, 30, seed=4)
    assert sorted(pretraining.label_subset(500, None, seed=3)) == list(range(500))
    assert [pretraining.curve_epochs(n) for n in (100, 300, 1000, 3000, 10_255)] == [20, 20, 10, 4, 3]


def test_fine_tuning_reads_the_same_split_as_the_cnn_benchmark(bert_ck):
    """The benchmark's classifier sees [CLS] pieces [SEP] of the CNN chapter's split, nothing of the test part
    in training."""
    pretraining = benchmark_module()
    pieces, words = pretraining.review_parts(WordPieces.from_json(bert_ck.extra["tokenizer"]), 8, 64)
    assert [len(p[0]) for p in pieces] == [len(w.tokens) for w in words]
    assert all(x[0] == CLS_ID and x[-1] == SEP_ID and len(x) <= 64 for id_lists, _ in pieces for x in id_lists)
    assert all(torch.equal(p[1], w.labels) for p, w in zip(pieces, words))
    assert F.one_hot(pieces[0][1]).sum(0).min() > 0  # both labels in training
