"""The pretraining chapter's benchmark: the mini-BERT fine-tuned from its pretrained checkpoint against the same
network from scratch, bag-of-words and the CNN chapter's networks, on the movie-review snippets; and
distributed pretraining under ``torchrun``, in one run.

    python benchmarks/pretraining.py --json benchmarks/results/pretraining.json
    python benchmarks/pretraining.py --tiny            # a smoke run of a minute
    python benchmarks/pretraining.py --curve --jobs 2 --json benchmarks/results/pretraining.json
    python benchmarks/pretraining.py --cnn-curve --jobs 2 --json benchmarks/results/pretraining.json
    python benchmarks/pretraining.py --gpt-curve --jobs 2 --json benchmarks/results/pretraining.json
    python benchmarks/pretraining.py --gpt-scratch-curve --jobs 2 --json benchmarks/results/pretraining.json
    python benchmarks/pretraining.py --stage-curve tapt --checkpoint PATH --jobs 2 --json benchmarks/results/...
    python benchmarks/pretraining.py --stage-curve tapt_rand --stage-scratch --checkpoint PATH --jobs 2 --json ...
    python benchmarks/pretraining.py --word-order --jobs 2 --json benchmarks/results/pretraining.json

**The label-efficiency curve** (``--curve``, added to the JSON file's other results): for each budget of
``BUDGETS`` labelled training snippets, ``--curve-seeds`` random subsets (``label_subset``: the first n of a
seeded permutation, so each budget's subsets hold the smaller budgets'), each fine-tuned from the pretrained
checkpoint and from scratch with one recipe (``CURVE_RECIPE``, ``curve_epochs``: about ``CURVE_STEPS`` steps,
3 to 20 epochs, the best validation epoch kept), and the uni+bigram logistic regression trained on the same
subset; test accuracy and ROC AUC, and the paired difference pretrained - scratch with its 95% t interval.
``"curve": [{"labels", "pretrained": [acc per seed], "scratch": [...], "bow": [...], "pretrained_auc",
"scratch_auc", "diff_mean", "diff_ci95": [lo, hi], "auc": {"diff_mean", "diff_ci95"}}, ...]``.
With ``--cnn-curve`` (after ``--curve``), Kim's CNN on the same label subsets, from random embeddings
(``cnn_rand``) and from the CNN chapter's domain word vectors, fine-tuned (``cnn_vectors``: the oldest form of
pretraining; its vocabulary holds every word with a vector, ``vector_vocab``), the CNN chapter's recipe
(early-stopped on the validation part), and their paired difference (``"cnn": {"diff_mean", "diff_ci95"}``),
added to each point. With ``--gpt-curve`` (after ``--curve``), the chapter's GPT (``gpt_reviews.pt``) fine-tuned on
the same subsets with the curve's recipe and its own head and loss (``GPTClassifier``: the last token's state,
the auxiliary LM loss, lambda 0.5): ``gpt``, ``gpt_auc`` and its paired differences with the scratch and the
pretrained BERT (``gpt_vs_scratch``, ``gpt_vs_bert``); with ``--gpt-scratch-curve`` (after ``--gpt-curve``), the
same GPT network drawn at random with the same recipe, ``gpt_scratch``, ``gpt_scratch_auc`` and the pretrained
GPT's paired differences with it (``gpt_vs_gpt_scratch``, ``gpt_auc_vs_gpt_scratch``). With ``--stage-curve NAME
--checkpoint PATH`` (after ``--curve``), another pretrained BERT (a stage of ``scripts/pretrain_bert.py``: the
course's English, then the snippets) fine-tuned as the chapter's on the same subsets: ``NAME``, ``NAME_auc``,
``NAME_vs_scratch`` and ``NAME_vs_bert``, and in ``curve_setup["stages"][NAME]`` the corpus, steps and last loss of
each of its stages. With ``--stage-scratch`` beside ``--stage-curve NAME --checkpoint PATH``, that checkpoint's
network drawn at random instead (the control in the stage's own vocabulary): the same keys, ``"pretrained_from":
null`` in its stage setup, and each stage already on the curve in the same vocabulary gains ``STAGE_vs_NAME`` and
``STAGE_auc_vs_NAME``.

**Word order** (``--word-order``, added to the JSON file's other results): the pretrained BERT and the same
network from random weights, ``--curve-seeds`` seeds each, fine-tuned for one pass (``WORD_ORDER_TUNE``) on the
snippets' bigram-shift task (``review_order_pieces``: 8,000 training snippets cut to 12 ids, half with two
neighbouring words swapped), scored by test ROC AUC over every test snippet as written and swapped:
``"word_order": {"pretrained_auc": [...], "scratch_auc": [...], "diff_mean", "diff_ci95", "setup"}``.

**Classification.** The CNN chapter's seeded split (by movie, 80/10/10, seed 0). The pretrained network is
``data/checkpoints/bert.pt`` (``scripts/pretrain_bert.py``: masked-LM on the training part's snippets alone, no
label, no other text: domain-adaptive pretraining); the scratch network has the same configuration and vocabulary,
freshly initialised. Each is fine-tuned with three recipes (``RECIPES``), each with ``--seeds`` seeds (the
classifier's initial weights, the order of the examples, dropout): ``plain`` (BERT's: the pooled [CLS] state,
every layer at one rate under the slanted triangular schedule), ``mean`` (the same on the mean of the final
states: masked-LM pretraining never trains [CLS]) and ``ulmfit`` (the mean, ULMFiT's discriminative rates, each
layer group 2.6 times slower than the one above, and gradual unfreezing, one group more every ``unfreeze_every``
steps; its top rate higher, as the lower groups' are far lower). The rates were chosen by single-seed runs on the
validation part. Every run keeps its epoch of best validation accuracy; for each network the recipe with the best
mean validation accuracy is the system (``bert_pretrained``, ``bert_scratch``), and its test accuracy is the mean
over the seeds (the spread beside it). ``best_bow`` is the better, on the test part, of the CNN chapter's logistic
regression and NB-SVM on uni+bigrams, ``best_cnn`` the best of its CNNs (random, non-static and multichannel
embeddings): choosing the baselines by their test score favours them.

**Distributed pretraining.** ``scripts/pretrain_bert.py`` for ``--ddp-steps`` steps with dropout 0 and one
thread per process: one process, two processes under ``torchrun`` (gloo), and one process with two threads
(what the two cores give without DDP); pieces per second over the steps after the first five, and the
largest difference between the one- and two-process loss curves.

The JSON: ``{"systems": {NAME: {"accuracy", "wall_s", ...}}, "recipes": {...}, "ddp": {...}, "setup":
{...}}``, accuracies as fractions; ``wall_s`` is fine-tuning (mean over seeds) or training time, and
``bert_pretrained`` also gives ``pretrain_s``, the checkpoint's pretraining time.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path

import cnn  # benchmarks/cnn.py: the same baselines on the same split
import torch
from sklearn.metrics import roc_auc_score

import nlpcourse
from nlpcourse.data import load_reviews, split_indices, word_tokenize
from nlpcourse.data.batching import pad_batch
from nlpcourse.data.vocab import Vocab
from nlpcourse.data.wordpiece import WordPieces
from nlpcourse.finetune import FineTuneConfig, accuracy, fine_tune_classifier
from nlpcourse.models.bert import Bert, BertClassifier, bert_from_config, build_bert
from nlpcourse.models.cnn import training_vocab
from nlpcourse.models.gpt import GPTClassifier, gpt_from_config
from nlpcourse.report import write_json
from nlpcourse.torchrun import LaunchError, root_cause, torchrun

REPO = Path(__file__).resolve().parents[1]
CHECKPOINT = REPO / "data" / "checkpoints" / "bert.pt"
SCRIPT = REPO / "scripts" / "pretrain_bert.py"


@dataclass(frozen=True)
class Recipe:
    """How a BERT is fine-tuned: the classifier's input and the training."""

    pooling: str  # "cls": BERT's pooled [CLS]; "mean": the mean of the final states (BertClassifier)
    tune: FineTuneConfig  # rates, schedule, unfreezing


RECIPES = {
    "plain": Recipe("cls", FineTuneConfig(lr=5e-4)),
    "mean": Recipe("mean", FineTuneConfig(lr=5e-4)),
    "ulmfit": Recipe("mean", FineTuneConfig(lr=1e-3, decay=2.6, unfreeze_every=100)),
}
CNN_SYSTEMS = ("rand", "nonstatic", "multichannel")
BUDGETS = (100, 300, 1000, 3000, None)  # labelled training snippets per curve point (None: all of them)


@dataclass
class Options:
    """What a run does (recorded in ``setup``)."""

    seeds: int = 3  # fine-tuning seeds per network and recipe
    epochs: int = 3  # fine-tuning epochs of every recipe
    cnn_epochs: int = 12  # at most this many epochs per CNN (the CNN benchmark's)
    max_len: int = 64  # pieces per snippet, [CLS] and [SEP] included
    ddp_steps: int = 40  # pretraining steps of each distributed run
    stride: int = 1  # use every n-th snippet (the smoke run uses fewer)
    brown_tokens: int | None = None  # limit Brown for the CNNs' domain vectors (None: all of it, the CNN's)
    w2v_epochs: int = 5  # epochs of the CNNs' domain word2vec (the CNN benchmark's)
    device: str = "cpu"
    curve: bool = False  # the label-efficiency curve only, added to the JSON file's other results
    budgets: tuple = BUDGETS  # the curve's label budgets (None: all the training labels)
    curve_seeds: int = 5  # label subsets (and fine-tuning seeds) per budget
    curve_epochs_cap: int = 20  # at most this many fine-tuning epochs (the smoke run uses 1)
    jobs: int = 1  # curve runs at once, one thread each
    cnn_curve: bool = False  # the CNNs on the curve's label subsets only, added to the curve in the JSON file
    gpt_curve: bool = False  # the GPT on the curve's label subsets only, added to the curve in the JSON file
    stage_curve: str | None = None  # this name's line on the curve: the --checkpoint fine-tuned on its subsets
    stage_scratch: bool = False  # with stage_curve: the --checkpoint's network from random weights instead
    gpt_scratch_curve: bool = False  # the GPT from random weights on the curve's label subsets, added to it
    word_order: bool = False  # the BERT pretrained and from random weights on word order, added to the JSON file


# ------------------------------------------------------------------ data


def review_parts(wp: WordPieces, stride: int, max_len: int) -> tuple[list, list]:
    """The seeded split's parts as ([CLS] pieces [SEP] id lists, labels) and as word-token Parts for the
    baselines."""
    reviews = load_reviews()[::stride]
    idx = split_indices(len(reviews), (0.8, 0.1, 0.1), seed=0, groups=[r.movie for r in reviews])
    pieces = [([wp.pair(reviews[i].text, max_len=max_len).ids for i in ix],
               torch.tensor([reviews[i].label for i in ix])) for ix in idx]
    words = [cnn.Part([word_tokenize(reviews[i].text) for i in ix], labels) for ix, (_, labels) in zip(idx, pieces)]
    return pieces, words


# ------------------------------------------------------------------ the BERTs


def run_bert(pretrained: Bert | None, config, recipe: Recipe, seed: int, epochs: int, parts, device: str) -> dict:
    """Fine-tune a copy of ``pretrained`` (or a fresh network of ``config``, drawn with ``seed``)."""
    if pretrained is None:
        bert = build_bert(config, seed=seed, device=device)
    else:
        bert = bert_from_config(asdict(config)).to(device)
        bert.load_state_dict(pretrained.state_dict())
    torch.manual_seed(seed)
    model = BertClassifier(bert, classes=2, pooling=recipe.pooling).to(device)
    tune = replace(recipe.tune, seed=seed, epochs=epochs)
    result = fine_tune_classifier(model, parts[0], parts[1], tune, device)
    return {"valid": result.valid[result.best_epoch], "test": accuracy(model, *parts[2], device=device),
            "best_epoch": result.best_epoch + 1, "seconds": result.seconds}


def run_recipes(ck, parts, opts: Options, say) -> dict[str, dict]:
    """Every (network, recipe) pair over the seeds: {"scratch/plain": {"valid", "test", ...}, ...}."""
    out = {}
    for network, bert in (("scratch", None), ("pretrained", ck.model)):
        for name, recipe in RECIPES.items():
            runs = [run_bert(bert, ck.model.config, recipe, s, opts.epochs, parts, opts.device)
                    for s in range(opts.seeds)]
            out[f"{network}/{name}"] = summary = {
                key: statistics.fmean(r[key] for r in runs) for key in ("valid", "test", "seconds")} | {
                "test_std": statistics.stdev(r["test"] for r in runs) if len(runs) > 1 else 0.0,
                "tests": [r["test"] for r in runs], "best_epochs": [r["best_epoch"] for r in runs]}
            say(f"{network:10s} {name:14s} valid {summary['valid']:.4f} test {summary['test']:.4f} "
                f"+- {summary['test_std']:.4f} ({summary['seconds']:.0f} s a run)")
    return out


def chosen(recipes: dict[str, dict], network: str) -> tuple[str, dict]:
    """The recipe of ``network`` with the best mean validation accuracy."""
    name = max(RECIPES, key=lambda r: recipes[f"{network}/{r}"]["valid"])
    return name, recipes[f"{network}/{name}"]


# ------------------------------------------------------------------ the baselines


def run_baselines(words: list, opts: Options, say) -> dict[str, dict]:
    """The CNN chapter's bag-of-words models and CNNs on the same split (its domain word vectors)."""
    out = {}
    for name, fn in (("logreg", cnn.run_logreg), ("nbsvm", cnn.run_nbsvm)):
        start = time.perf_counter()
        out[name] = fn(words) | {"seconds": time.perf_counter() - start}
    cnn_opts = cnn.Options(device=opts.device, epochs=opts.cnn_epochs, brown_tokens=opts.brown_tokens,
                           w2v_epochs=opts.w2v_epochs)
    wv = cnn.domain_vectors(words[0], cnn_opts)
    for variant in CNN_SYSTEMS:
        out[f"cnn_{variant}"] = cnn.run_cnn(variant, words, wv, cnn_opts)
    say("  " + ", ".join(f"{k} {v['accuracy']:.4f} ({v['seconds']:.0f} s)" for k, v in out.items()))
    return out


def best_of(baselines: dict[str, dict], names) -> dict:
    name = max(names, key=lambda n: baselines[n]["accuracy"])
    return {"accuracy": baselines[name]["accuracy"], "wall_s": round(baselines[name]["seconds"], 1), "system": name}


# ------------------------------------------------------------------ the label-efficiency curve


CURVE_RECIPE = Recipe("mean", FineTuneConfig(lr=5e-4, batch=16))  # one recipe for every budget and network
CURVE_STEPS = 600  # epochs per budget: enough for about this many steps, clamped to [3, 20]


def curve_epochs(labels: int, batch: int = CURVE_RECIPE.tune.batch) -> int:
    """Fine-tuning epochs for ``labels`` examples: small budgets get more passes (about ``CURVE_STEPS``
    steps), never fewer than 3 (the recipes' epochs) or more than 20."""
    return min(20, max(3, math.ceil(CURVE_STEPS / math.ceil(labels / batch))))


def label_subset(n: int, labels: int | None, seed: int) -> list[int]:
    """The training examples of one curve point: the first ``labels`` of a permutation drawn with ``seed``;
    the same subset serves the pretrained network, the scratch network and bag-of-words."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(10_000 + seed)).tolist()
    return order if labels is None else order[:labels]


@torch.no_grad()
def fresh_probabilities(model, ids: list[list[int]], batch: int = 256) -> torch.Tensor:
    """(N,) the model's probability of "fresh" (label 1) for each id list; eval mode."""
    model.eval()
    return torch.cat([model(pad_batch(ids[i:i + batch]).tokens).softmax(-1)[:, 1]
                      for i in range(0, len(ids), batch)])


def curve_run(task: tuple) -> dict:
    """One (network, budget, seed) point: fine-tune on the label subset, keep the best validation epoch,
    score the test part (accuracy and ROC AUC)."""
    network, labels, seed, ck, parts, epochs_cap = task
    nlpcourse.use_threads(1)
    (ids, y), valid, (test_ids, test_y) = parts
    pick = label_subset(len(ids), labels, seed)
    train = ([ids[i] for i in pick], y[pick])
    epochs = min(epochs_cap, curve_epochs(len(pick)))
    model = curve_model(network, ck, seed)  # seeds the head's draws with ``seed`` itself
    result = fine_tune_classifier(model, train, valid, replace(CURVE_RECIPE.tune, seed=seed, epochs=epochs))
    prob = fresh_probabilities(model, test_ids)
    return {"network": network, "labels": labels, "seed": seed, "epochs": epochs,
            "accuracy": float(((prob > 0.5).long() == test_y).float().mean()),
            "auc": float(roc_auc_score(test_y.numpy(), prob.numpy())), "seconds": result.seconds}


GPT_CHECKPOINT = REPO / "data" / "checkpoints" / "gpt_reviews.pt"


@lru_cache(maxsize=1)
def gpt_checkpoint():
    return nlpcourse.load_checkpoint(GPT_CHECKPOINT, build=gpt_from_config)


def curve_model(network: str, ck, seed: int) -> torch.nn.Module:
    """The classifier of one curve run: BERT pretrained or drawn with ``seed`` (the mean of the final
    states), or the chapter's GPT with its own head (the last token's state, the auxiliary LM loss),
    pretrained (``gpt``) or the same network drawn with ``seed`` (``gpt_scratch``)."""
    if network in ("gpt", "gpt_scratch"):
        torch.manual_seed(seed)
        gpt = gpt_from_config(asdict(gpt_checkpoint().model.config))
        if network == "gpt":
            gpt.load_state_dict({k: v.float() for k, v in gpt_checkpoint().model.state_dict().items()})
        torch.manual_seed(seed)  # the head's draws: the same for both
        return GPTClassifier(gpt, classes=2)
    bert = build_bert(ck.model.config, seed=seed) if network == "scratch" else copy_bert(ck.model)
    torch.manual_seed(seed)
    return BertClassifier(bert, classes=2, pooling=CURVE_RECIPE.pooling)


def copy_bert(pretrained: Bert) -> Bert:
    bert = bert_from_config(asdict(pretrained.config))
    bert.load_state_dict(pretrained.state_dict())
    return bert


def bow_point(words: list, labels: int | None, seed: int) -> float:
    """Logistic regression on uni+bigrams (C tuned on the validation part) trained on the same subset."""
    pick = label_subset(len(words[0].tokens), labels, seed)
    train = cnn.Part([words[0].tokens[i] for i in pick], words[0].labels[pick])
    return cnn.run_logreg([train, words[1], words[2]])["accuracy"]


def run_curve(ck, pieces, words, opts: Options, say) -> list[dict]:
    """Every budget of ``opts.budgets`` on ``opts.curve_seeds`` label subsets, pretrained and scratch paired
    subset by subset, with bag-of-words on the same subsets."""
    runs = curve_runs(("pretrained", "scratch"), ck, pieces, opts, say)
    return [curve_point(runs, words, n, opts.curve_seeds) for n in opts.budgets]


def curve_runs(networks, ck, pieces, opts: Options, say) -> dict[tuple, dict]:
    """``curve_run`` for each network, budget and seed: {(network, labels, seed): result}."""
    from concurrent.futures import ProcessPoolExecutor

    todo = [(net, n, s, ck, pieces, opts.curve_epochs_cap) for n in opts.budgets
            for s in range(opts.curve_seeds) for net in networks]
    runs: dict[tuple, dict] = {}
    with ProcessPoolExecutor(max_workers=opts.jobs) as pool:
        for r in pool.map(curve_run, todo):
            runs[r["network"], r["labels"], r["seed"]] = r
            say(f"  {r['network']:10s} {r['labels'] or 'all'!s:>5s} labels, seed {r['seed']}: accuracy "
                f"{r['accuracy']:.4f}, AUC {r['auc']:.4f} ({r['epochs']} epochs, {r['seconds']:.0f} s)")
    return runs


def add_line(curve: list[dict], runs: dict[tuple, dict], network: str, name: str) -> None:
    """Each curve point gains ``name`` and ``<name>_auc``: the accuracy and AUC of ``network``'s runs, per seed."""
    for point in curve:
        labels = None if point["all"] else point["labels"]
        seeds = range(len(point["pretrained"]))
        point[name] = [runs[network, labels, s]["accuracy"] for s in seeds]
        point[f"{name}_auc"] = [runs[network, labels, s]["auc"] for s in seeds]


def add_gpt_curve(curve: list[dict], runs: dict[tuple, dict]) -> None:
    """Each curve point gains ``gpt`` and ``gpt_auc`` (per seed) and the paired differences of its accuracy
    with the scratch BERT's (``gpt_vs_scratch``) and the pretrained BERT's (``gpt_vs_bert``)."""
    add_line(curve, runs, "gpt", "gpt")
    for point in curve:
        point.update(gpt_vs_scratch=cnn.paired(point["gpt"], point["scratch"]),
                     gpt_vs_bert=cnn.paired(point["gpt"], point["pretrained"]))


def add_gpt_scratch_curve(curve: list[dict], runs: dict[tuple, dict]) -> None:
    """Each curve point gains ``gpt_scratch`` and ``gpt_scratch_auc`` (per seed: the GPT's network and recipe
    from random weights) and the paired differences of the pretrained GPT with it, in accuracy
    (``gpt_vs_gpt_scratch``) and AUC (``gpt_auc_vs_gpt_scratch``): what GPT's pretraining brings."""
    add_line(curve, runs, "gpt_scratch", "gpt_scratch")
    for point in curve:
        point.update(gpt_vs_gpt_scratch=cnn.paired(point["gpt"], point["gpt_scratch"]),
                     gpt_auc_vs_gpt_scratch=cnn.paired(point["gpt_auc"], point["gpt_scratch_auc"]))


#: Keys of a curve point that a --stage-curve name may not take.
CURVE_KEYS = {"labels", "all", "epochs", "pretrained", "scratch", "bow", "auc", "gpt", "cnn", "cnn_rand",
              "cnn_vectors", "diff_mean", "diff_ci95"}


def add_stage_curve(curve: list[dict], runs: dict[tuple, dict], name: str, network: str = "pretrained") -> None:
    """Each curve point gains ``name`` and ``<name>_auc`` (per seed: another checkpoint's BERT, pretrained or,
    with ``network`` "scratch", drawn at random, fine-tuned as the chapter's is, on the same subsets) and its
    accuracy's paired differences with the scratch BERT's (``<name>_vs_scratch``) and the chapter's pretrained
    BERT's (``<name>_vs_bert``), and its AUC's with the scratch BERT's (``<name>_auc_vs_scratch``)."""
    add_line(curve, runs, network, name)
    for point in curve:
        point.update(stage_differences(point, name))


def stage_differences(point: dict, name: str) -> dict:
    """The paired differences of a curve point's stage ``name`` (its per-seed lists) with the BERTs'."""
    return {f"{name}_vs_scratch": cnn.paired(point[name], point["scratch"]),
            f"{name}_vs_bert": cnn.paired(point[name], point["pretrained"]),
            f"{name}_auc_vs_scratch": cnn.paired(point[f"{name}_auc"], point["scratch_auc"])}


def curve_point(runs: dict, words: list, labels: int | None, seeds: int) -> dict:
    get = {(net, key): [runs[net, labels, s][key] for s in range(seeds)]
           for net in ("pretrained", "scratch") for key in ("accuracy", "auc")}
    return {"labels": labels if labels is not None else len(words[0].tokens), "all": labels is None,
            "epochs": runs["pretrained", labels, 0]["epochs"],
            "pretrained": get["pretrained", "accuracy"], "scratch": get["scratch", "accuracy"],
            "pretrained_auc": get["pretrained", "auc"], "scratch_auc": get["scratch", "auc"],
            "bow": [bow_point(words, labels, s) for s in range(seeds)],
            **cnn.paired(get["pretrained", "accuracy"], get["scratch", "accuracy"]),
            "auc": cnn.paired(get["pretrained", "auc"], get["scratch", "auc"])}


#: The oldest pretraining on the same curve: Kim's CNN from random embeddings against the same CNN started from
#: the CNN chapter's domain word vectors (skip-gram on Brown and the training snippets, no label), fine-tuned.
CNN_CURVE = ("rand", "nonstatic")
_CNN_DATA: dict = {}  # the split's word parts and the word vectors, set before the pool forks its workers


def vector_vocab(tokens: list[list[str]], wv) -> Vocab:
    """The labelled subset's vocabulary (``training_vocab``) and every other word that has a vector: a CNN
    started from pretrained vectors can read words its labels never showed it."""
    vocab = training_vocab(tokens, wv)
    extra = sorted(set(wv.index) - set(vocab.itos))
    return Vocab([*vocab.itos, *extra], vocab.counts)


def cnn_curve_run(task: tuple) -> dict:
    """One (variant, budget, seed) point: Kim's CNN on the label subset, early-stopped on the validation part
    (the CNN chapter's recipe), scored on the test part."""
    variant, labels, seed, epochs = task
    nlpcourse.use_threads(1)
    words, wv = _CNN_DATA["words"], _CNN_DATA["wv"]
    pick = label_subset(len(words[0].tokens), labels, seed)
    train = cnn.Part([words[0].tokens[i] for i in pick], words[0].labels[pick])
    vocab = vector_vocab(train.tokens, wv) if variant != "rand" else None
    r = cnn.run_cnn(variant, [train, words[1], words[2]], wv, cnn.Options(epochs=epochs, seed=seed), vocab)
    return {"variant": variant, "labels": labels, "seed": seed, "accuracy": r["accuracy"], "seconds": r["seconds"]}


def run_cnn_curve(words, opts: Options, say) -> dict[tuple, float]:
    """Both CNNs on every budget's label subsets: {(variant, labels, seed): test accuracy}."""
    from concurrent.futures import ProcessPoolExecutor

    _CNN_DATA.update(words=words, wv=cnn.domain_vectors(words[0], cnn.Options(
        brown_tokens=opts.brown_tokens, w2v_epochs=opts.w2v_epochs)))
    todo = [(v, n, s, opts.cnn_epochs) for n in opts.budgets for s in range(opts.curve_seeds) for v in CNN_CURVE]
    runs = {}
    with ProcessPoolExecutor(max_workers=opts.jobs) as pool:
        for r in pool.map(cnn_curve_run, todo):
            runs[r["variant"], r["labels"], r["seed"]] = r["accuracy"]
            say(f"  cnn {r['variant']:9s} {r['labels'] or 'all'!s:>5s} labels, seed {r['seed']}: accuracy "
                f"{r['accuracy']:.4f} ({r['seconds']:.0f} s)")
    return runs


def add_cnn_curve(curve: list[dict], runs: dict[tuple, float]) -> None:
    """Each curve point gains ``cnn_rand``, ``cnn_vectors`` (accuracy per seed) and ``cnn``: the paired
    difference vectors - rand."""
    for point in curve:
        labels = None if point["all"] else point["labels"]
        seeds = range(len(point["pretrained"]))
        rand, vectors = ([runs[v, labels, s] for s in seeds] for v in CNN_CURVE)
        point.update(cnn_rand=rand, cnn_vectors=vectors, cnn=cnn.paired(vectors, rand))


# ------------------------------------------------------------------ distributed pretraining


def pretrain_run(procs: int, threads: int, steps: int, vocab: Path, folder: Path, tiny: bool) -> list[dict]:
    """``scripts/pretrain_bert.py`` for ``steps`` steps, dropout 0; its loss log."""
    log, out = folder / f"p{procs}t{threads}.jsonl", folder / f"p{procs}t{threads}.pt"
    args = ["--steps", str(steps), "--warmup", "5", "--dropout", "0", "--threads", str(threads),
            "--tokenizer", str(vocab), "--loss-log", str(log), "--out", str(out)]
    args += ["--tiny"] if tiny else []
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    if procs > 1:
        torchrun(SCRIPT, args, procs, env=env, cwd=REPO, timeout=3600, fresh=[log, out])
    else:
        proc = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=REPO, env=env, capture_output=True,
                              text=True, timeout=3600)
        if proc.returncode != 0:
            raise LaunchError(f"{SCRIPT.name} exited with {proc.returncode}: {root_cause(proc.stderr)}")
    return [json.loads(line) for line in log.read_text().splitlines()]


def pieces_per_second(log: list[dict], skip: int = 5) -> float:
    pieces = sum(r["pieces"] for r in log[skip:])
    return pieces / (log[-1]["seconds"] - log[skip - 1]["seconds"])


def run_ddp(ck, opts: Options, tiny: bool, say) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        vocab = folder / "vocab.json"
        vocab.write_text(ck.extra["tokenizer"])
        logs = {f"{p}x{t}": pretrain_run(p, t, opts.ddp_steps, vocab, folder, tiny) for p, t in ((1, 1), (2, 1),
                                                                                                    (1, 2))}
    diff = max(abs(a["loss"] - b["loss"]) for a, b in zip(logs["1x1"], logs["2x1"], strict=True))
    rates = {k: pieces_per_second(v) for k, v in logs.items()}
    say(f"pretraining pieces/s: 1 process {rates['1x1']:.0f}, 2 processes {rates['2x1']:.0f}, 1 process with 2 "
        f"threads {rates['1x2']:.0f}; largest loss difference 1 vs 2 processes {diff:.2e}")
    return {"pieces_per_s_1proc": rates["1x1"], "pieces_per_s_2proc": rates["2x1"],
            "pieces_per_s_1proc_2threads": rates["1x2"], "speedup_2proc": rates["2x1"] / rates["1x1"],
            "max_loss_diff": diff, "tolerance": 1e-4, "agree": diff <= 1e-4, "steps": opts.ddp_steps,
            "losses_1proc": [r["loss"] for r in logs["1x1"]], "losses_2proc": [r["loss"] for r in logs["2x1"]]}


# ------------------------------------------------------------------ the run


# ------------------------------------------------------------------ word order


WORD_ORDER = {"train": 8000, "train_len": 12, "test_len": 64}  # snippets, ids a training / held-out snippet
WORD_ORDER_TUNE = FineTuneConfig(lr=5e-4, epochs=1, batch=32)  # one pass at the curve's rate


def word_order_run(task: tuple) -> dict:
    """One fine-tuning on the bigram-shift task of the snippets (``review_order_pieces``): the first
    ``WORD_ORDER["train"]`` training snippets, half of them with two neighbouring words swapped; test ROC AUC
    of "swapped" over every test snippet as written and swapped (0.5: blind to order)."""
    from nlpcourse.data import review_order_pieces

    network, seed, ck, stride = task
    nlpcourse.use_threads(1)
    tok = ck.extra["tokenizer"]
    ids, y = review_order_pieces(tok, "train", WORD_ORDER["train_len"])
    n = WORD_ORDER["train"] // stride
    valid, (test_ids, test_y) = (_every_pair(review_order_pieces(tok, part, WORD_ORDER["test_len"]), stride)
                                 for part in ("valid", "test"))
    model = curve_model(network, ck, seed)
    result = fine_tune_classifier(model, (ids[:n], y[:n]), valid, replace(WORD_ORDER_TUNE, seed=seed))
    prob = fresh_probabilities(model, test_ids)  # the probability of label 1: swapped
    return {"network": network, "seed": seed, "auc": float(roc_auc_score(test_y.numpy(), prob.numpy())),
            "accuracy": float(((prob > 0.5).long() == test_y).float().mean()), "seconds": result.seconds}


def _every_pair(part: tuple[list[list[int]], torch.Tensor], stride: int) -> tuple[list[list[int]], torch.Tensor]:
    """Every ``stride``-th held-out snippet with both its versions (as written, then swapped: rows 2i, 2i+1)."""
    keep = [i for i in range(len(part[0])) if (i // 2) % stride == 0]
    return [part[0][i] for i in keep], part[1][keep]


def word_order_main(ck, opts: Options, json_path: Path | None, say) -> dict:
    """The pretrained BERT and its twin from random weights on word order, ``opts.curve_seeds`` seeds each,
    written into the JSON file beside the results already there (``"word_order"``)."""
    from concurrent.futures import ProcessPoolExecutor

    todo = [(net, s, ck, opts.stride) for s in range(opts.curve_seeds) for net in ("pretrained", "scratch")]
    with ProcessPoolExecutor(max_workers=opts.jobs) as pool:
        runs = list(pool.map(word_order_run, todo))
    for r in runs:
        say(f"  {r['network']:10s} seed {r['seed']}: AUC {r['auc']:.4f}, accuracy {r['accuracy']:.4f} "
            f"({r['seconds']:.0f} s)")
    by = {net: [r["auc"] for r in runs if r["network"] == net] for net in ("pretrained", "scratch")}
    diff = cnn.paired(by["pretrained"], by["scratch"])
    lo, hi = diff["diff_ci95"]
    report = json.loads(json_path.read_text()) if json_path is not None and json_path.exists() else {}
    report["word_order"] = {
        "pretrained_auc": by["pretrained"], "scratch_auc": by["scratch"],
        "pretrained_accuracy": [r["accuracy"] for r in runs if r["network"] == "pretrained"],
        "scratch_accuracy": [r["accuracy"] for r in runs if r["network"] == "scratch"],
        **diff,
        "setup": {**WORD_ORDER, "tune": asdict(WORD_ORDER_TUNE), "pooling": CURVE_RECIPE.pooling,
                  "seeds": opts.curve_seeds, "stride": opts.stride, "date": time.strftime("%Y-%m-%d")}}
    write_json(json_path, report)
    say(f"word order, test AUC: pretrained {statistics.fmean(by['pretrained']):.4f}, from random weights "
        f"{statistics.fmean(by['scratch']):.4f}, difference {report['word_order']['diff_mean']:+.4f} "
        f"[{lo:+.4f}, {hi:+.4f}]")
    return report


def main(argv: list[str] | None = None) -> dict:
    opts, json_path, checkpoint, threads, tiny = parse(argv)
    torch.set_num_threads(threads)
    say = print
    ck = nlpcourse.load_checkpoint(checkpoint, build=bert_from_config)
    pieces, words = review_parts(WordPieces.from_json(ck.extra["tokenizer"]), opts.stride, opts.max_len)
    say(f"seeded split: train {len(words[0].tokens)}, val {len(words[1].tokens)}, test {len(words[2].tokens)}")
    if opts.word_order:
        return word_order_main(ck, opts, json_path, say)
    if opts.cnn_curve:
        return cnn_curve_main(words, opts, json_path, say)
    if opts.gpt_curve:
        return gpt_curve_main(ck, pieces, opts, json_path, say)
    if opts.gpt_scratch_curve:
        return gpt_scratch_curve_main(ck, pieces, opts, json_path, say)
    if opts.stage_curve:
        return stage_curve_main(ck, pieces, opts, json_path, checkpoint, say)
    if opts.curve:
        return curve_main(ck, pieces, words, opts, json_path, checkpoint, say)
    baselines = run_baselines(words, opts, say)
    recipes = run_recipes(ck, pieces, opts, say)
    report = summarise(recipes, baselines, ck, opts, threads, checkpoint)
    write_json(json_path, report)
    report["ddp"] = run_ddp(ck, opts, tiny, say)
    write_json(json_path, report)
    print_table(report)
    return report


def curve_main(ck, pieces, words, opts: Options, json_path: Path | None, checkpoint: Path, say) -> dict:
    """The curve alone, written into the JSON file beside the results already there."""
    curve = run_curve(ck, pieces, words, opts, say)
    report = json.loads(json_path.read_text()) if json_path is not None and json_path.exists() else {}
    report["curve"] = curve
    report["curve_setup"] = {
        "checkpoint": shown(checkpoint),
        "recipe": asdict(CURVE_RECIPE), "seeds": opts.curve_seeds, "steps_per_budget": CURVE_STEPS,
        "epochs_cap": opts.curve_epochs_cap, "stride": opts.stride, "subsets": "label_subset(n, labels, seed)",
        "threads_per_run": 1, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}
    write_json(json_path, report)
    print(f"\n{'labels':>6s} {'pretrained':>10s} {'scratch':>8s} {'bow':>6s}  pretrained - scratch [95%]")
    for c in curve:
        lo, hi = c["diff_ci95"]
        print(f"{c['labels']:6d} {statistics.fmean(c['pretrained']):10.4f} {statistics.fmean(c['scratch']):8.4f} "
              f"{statistics.fmean(c['bow']):6.4f}  {c['diff_mean']:+.4f} [{lo:+.4f}, {hi:+.4f}]")
    return report


def existing_curve(json_path: Path | None, opts: Options, flag: str) -> dict:
    """The JSON file whose curve ``flag`` adds to (``--curve`` must have written it, as tiny or not)."""
    report = json.loads(json_path.read_text()) if json_path is not None and json_path.exists() else {}
    if len(report.get("curve", [])) != len(opts.budgets):
        raise SystemExit(f"{flag} adds to the curve of --curve: run that first, with the same --tiny or not")
    return report


def shown(path: Path) -> str:
    """``path`` as the JSON file records it: relative to the repository where it lies inside it."""
    return str(path.relative_to(REPO) if path.is_relative_to(REPO) else path)


def line_runs(network: str, ck, pieces, curve: list[dict], opts: Options, say) -> dict[tuple, dict]:
    """``network``'s runs on the label subsets of the curve already written (as many seeds as it has)."""
    return curve_runs((network,), ck, pieces, replace(opts, curve_seeds=len(curve[0]["pretrained"])), say)


def gpt_curve_main(ck, pieces, opts: Options, json_path: Path | None, say) -> dict:
    """The GPT on the curve's label subsets, added to the curve already in the JSON file."""
    report = existing_curve(json_path, opts, "--gpt-curve")
    curve = report["curve"]
    add_gpt_curve(curve, line_runs("gpt", ck, pieces, curve, opts, say))
    report["curve_setup"]["gpt"] = {"checkpoint": shown(GPT_CHECKPOINT), "head": "last token",
                                    "lm_weight": 0.5, "recipe": asdict(CURVE_RECIPE.tune),
                                    "date": time.strftime("%Y-%m-%d")}
    write_json(json_path, report)
    print_curve(curve, {"GPT": "gpt", "BERT": "pretrained", "scratch": "scratch"}, "gpt_vs_scratch", "GPT - scratch")
    return report


def gpt_scratch_curve_main(ck, pieces, opts: Options, json_path: Path | None, say) -> dict:
    """The GPT from random weights on the curve's label subsets, added to the curve (and GPT's line) already
    in the JSON file."""
    report = existing_curve(json_path, opts, "--gpt-scratch-curve")
    curve = report["curve"]
    if "gpt" not in curve[0]:
        raise SystemExit("--gpt-scratch-curve compares with the GPT's line: run --gpt-curve first")
    add_gpt_scratch_curve(curve, line_runs("gpt_scratch", ck, pieces, curve, opts, say))
    report["curve_setup"]["gpt_scratch"] = {"network": "the GPT checkpoint's config, drawn with the seed",
                                            "recipe": asdict(CURVE_RECIPE.tune), "date": time.strftime("%Y-%m-%d")}
    write_json(json_path, report)
    print_curve(curve, {"GPT": "gpt", "GPT rand": "gpt_scratch"}, "gpt_vs_gpt_scratch", "GPT - GPT scratch")
    return report


def stage_curve_main(ck, pieces, opts: Options, json_path: Path | None, checkpoint: Path, say) -> dict:
    """Another checkpoint (a stage of scripts/pretrain_bert.py) on the curve's label subsets, with the chapter's
    recipe, added to the curve already in the JSON file under ``opts.stage_curve``: its pretrained BERT, or with
    ``opts.stage_scratch`` its network drawn at random (its configuration and vocabulary), which each stage
    already on the curve in the same vocabulary is paired with (``STAGE_vs_NAME``, ``STAGE_auc_vs_NAME``)."""
    name, network = opts.stage_curve, "scratch" if opts.stage_scratch else "pretrained"
    report = existing_curve(json_path, opts, "--stage-scratch" if opts.stage_scratch else "--stage-curve")
    curve = report["curve"]
    add_stage_curve(curve, line_runs(network, ck, pieces, curve, opts, say), name, network)
    stages = report["curve_setup"].setdefault("stages", {})
    if opts.stage_scratch:
        same_vocab = pair_same_vocabulary(curve, stages, name, ck.extra["tokenizer"])
        history = {"pretraining": [], "pretrained_from": None, "paired_with": same_vocab}
    else:
        history = {"pretraining": [{"corpus": st["settings"].get("corpus", "reviews"), "steps": len(st["losses"]),
                                    "last_loss": st["losses"][-1], "seconds": round(st["seconds"])}
                                   for st in [*ck.extra.get("stages", []), ck.extra]]}
    stages[name] = {"checkpoint": shown(checkpoint), **history, "recipe": asdict(CURVE_RECIPE.tune),
                    "date": time.strftime("%Y-%m-%d")}
    write_json(json_path, report)
    if opts.stage_scratch:
        for st in same_vocab:
            print_curve(curve, {st: st, name: name}, f"{st}_vs_{name}", f"{st} - {name}")
    else:
        print_curve(curve, {name: name, "BERT": "pretrained", "scratch": "scratch"}, f"{name}_vs_scratch",
                    f"{name} - scratch")
    return report


def pair_same_vocabulary(curve: list[dict], stages: dict, name: str, tokenizer: str) -> list[str]:
    """Pairs every stage on the curve whose checkpoint has ``tokenizer`` with the random network ``name``, in
    accuracy and AUC, at each point; returns those stages."""
    same_vocab = [st for st, setup in stages.items() if st != name and nlpcourse.load_checkpoint(
        REPO / setup["checkpoint"], build=bert_from_config).extra["tokenizer"] == tokenizer]
    for point in curve:
        for st in same_vocab:
            point[f"{st}_vs_{name}"] = cnn.paired(point[st], point[name])
            point[f"{st}_auc_vs_{name}"] = cnn.paired(point[f"{st}_auc"], point[f"{name}_auc"])
    return same_vocab


def cnn_curve_main(words, opts: Options, json_path: Path | None, say) -> dict:
    """The CNNs on the curve's label subsets, added to the curve already in the JSON file."""
    report = existing_curve(json_path, opts, "--cnn-curve")
    curve = report["curve"]
    add_cnn_curve(curve, run_cnn_curve(words, replace(opts, curve_seeds=len(curve[0]["pretrained"])), say))
    report["curve_setup"]["cnn"] = {"variants": {"cnn_rand": "rand", "cnn_vectors": "nonstatic"},
                                    "epochs_cap": opts.cnn_epochs, "w2v_epochs": opts.w2v_epochs,
                                    "brown_tokens": opts.brown_tokens, "date": time.strftime("%Y-%m-%d")}
    write_json(json_path, report)
    print_curve(curve, {"CNN-rand": "cnn_rand", "vectors": "cnn_vectors"}, "cnn", "vectors - rand")
    return report


def print_curve(curve: list[dict], columns: dict[str, str], diff: str, what: str) -> None:
    """One line per budget: the mean accuracy of each column (title: the curve point's key) and the paired
    difference ``diff`` with its 95% interval."""
    print(f"\n{'labels':>6s} " + " ".join(f"{title:>8s}" for title in columns) + f"  {what} [95%]")
    for c in curve:
        lo, hi = c[diff]["diff_ci95"]
        means = " ".join(f"{statistics.fmean(c[key]):8.4f}" for key in columns.values())
        print(f"{c['labels']:6d} {means}  {c[diff]['diff_mean']:+.4f} [{lo:+.4f}, {hi:+.4f}]")


def summarise(recipes, baselines, ck, opts: Options, threads: int, checkpoint: Path) -> dict:
    systems = {}
    for network in ("pretrained", "scratch"):
        name, r = chosen(recipes, network)
        systems[f"bert_{network}"] = {"accuracy": r["test"], "accuracy_std": r["test_std"], "valid": r["valid"],
                                      "wall_s": round(r["seconds"], 1), "recipe": name, "seeds": opts.seeds}
    systems["bert_pretrained"]["pretrain_s"] = round(float(ck.extra.get("seconds", float("nan"))), 1)
    systems["best_bow"] = best_of(baselines, ("logreg", "nbsvm"))
    systems["best_cnn"] = best_of(baselines, [f"cnn_{v}" for v in CNN_SYSTEMS])
    settings = ck.extra.get("settings", {})
    setup = asdict(opts) | {
        "checkpoint": shown(checkpoint),
        "model": asdict(ck.model.config), "pretraining": settings, "pretrain_steps": len(ck.extra["losses"]),
        "pretrain_final_loss": statistics.fmean(ck.extra["losses"][-50:]),
        "recipes": {k: asdict(v) for k, v in RECIPES.items()}, "baselines": {k: v["accuracy"] for k, v in
                                                                             baselines.items()},
        "split": "by movie, 80/10/10, seed 0 (benchmarks/cnn.py)", "threads": threads, "torch": torch.__version__,
        "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d")}
    gain = systems["bert_pretrained"]["accuracy"] - systems["bert_scratch"]["accuracy"]
    return {"systems": systems, "pretrained_minus_scratch": gain, "recipes": recipes, "setup": setup}


def print_table(report: dict) -> None:
    print(f"\n{'system':16s} {'test acc':>8s} {'wall s':>7s}  recipe / system")
    for name, r in report["systems"].items():
        spread = f" +- {r['accuracy_std']:.4f}" if "accuracy_std" in r else ""
        print(f"{name:16s} {r['accuracy']:8.4f} {r['wall_s']:7.1f}  {r.get('recipe', r.get('system'))}{spread}")
    gain, d = report["pretrained_minus_scratch"], report["ddp"]
    print(f"targets: pretrained - scratch >= +0.02: {gain:+.4f} {'met' if gain >= 0.02 else 'NOT met'}; "
          f"DDP 2 processes = 1 process within {d['tolerance']:g}: {d['max_loss_diff']:.1e} "
          f"{'met' if d['agree'] else 'NOT met'}")


def parse(argv: list[str] | None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    p.add_argument("--checkpoint", type=Path, default=CHECKPOINT, help="the pretrained network (default: the "
                   "chapter's)")
    p.add_argument("--seeds", type=int, default=3, help="fine-tuning seeds per network and recipe (default 3)")
    p.add_argument("--ddp-steps", type=int, default=40, help="steps of each distributed run (default 40)")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda, for fine-tuning and the baselines")
    p.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    p.add_argument("--tiny", action="store_true", help="a smoke run: 1/32 of the snippets, one seed and "
                   "epoch, the CNNs' word vectors from 20,000 words of Brown, a tiny distributed run")
    p.add_argument("--curve", action="store_true", help="only the label-efficiency curve (pretrained against "
                   "scratch and bag-of-words on 100 to all labels), added to the JSON file's other results")
    p.add_argument("--cnn-curve", action="store_true", help="Kim's CNN from random embeddings and from the domain "
                   "word vectors on the label subsets of the curve already in the JSON file, added to it")
    p.add_argument("--gpt-curve", action="store_true", help="the chapter's GPT fine-tuned with its own head and "
                   "auxiliary LM loss on the label subsets of the curve already in the JSON file, added to it")
    p.add_argument("--gpt-scratch-curve", action="store_true", help="the GPT's network and recipe from random "
                   "weights on the label subsets of the curve already in the JSON file (after --gpt-curve)")
    p.add_argument("--stage-curve", metavar="NAME", help="--checkpoint (another pretraining, such as a stage of "
                   "scripts/pretrain_bert.py) fine-tuned as the chapter's BERT on the label subsets of the curve "
                   "already in the JSON file, added to it as NAME")
    p.add_argument("--stage-scratch", action="store_true", help="with --stage-curve NAME: --checkpoint's network "
                   "from random weights (in its vocabulary), paired with the stages on the curve in that vocabulary")
    p.add_argument("--word-order", action="store_true", help="only the BERT, pretrained and from random weights, "
                   "fine-tuned on the snippets' word order (two neighbouring words swapped), added to the JSON file")
    p.add_argument("--curve-seeds", type=int, default=5, help="label subsets per budget (default 5)")
    p.add_argument("--jobs", type=int, default=1, help="curve runs at once, one thread each (default 1)")
    a = p.parse_args(argv)
    if a.curve_seeds < 2:
        p.error("--curve-seeds must be at least 2 (the curve's intervals are paired over seeds)")
    if a.stage_curve is not None and (not a.stage_curve.isidentifier() or a.stage_curve in CURVE_KEYS
                                      or a.stage_curve.startswith(("gpt_", "cnn_", "pretrained_", "scratch_"))):
        p.error(f"--stage-curve: {a.stage_curve!r} must be a name (letters, digits, _) that the curve does not use "
                f"already: not {', '.join(sorted(CURVE_KEYS))}")
    if a.stage_scratch and a.stage_curve is None:
        p.error("--stage-scratch needs --stage-curve NAME (the name of its line on the curve)")
    opts = Options(seeds=a.seeds, ddp_steps=a.ddp_steps, device=a.device, curve=a.curve,
                   curve_seeds=a.curve_seeds, jobs=max(1, a.jobs), cnn_curve=a.cnn_curve,
                   gpt_curve=a.gpt_curve, stage_curve=a.stage_curve, gpt_scratch_curve=a.gpt_scratch_curve,
                   stage_scratch=a.stage_scratch, word_order=a.word_order)
    if a.tiny:
        opts = replace(opts, seeds=1, epochs=1, cnn_epochs=1, ddp_steps=8, stride=32, brown_tokens=20_000,
                       w2v_epochs=1, budgets=(20, None), curve_epochs_cap=1)
    return opts, a.json, a.checkpoint, a.threads, a.tiny


if __name__ == "__main__":
    main()
