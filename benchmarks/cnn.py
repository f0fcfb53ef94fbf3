"""Kim's (2014) CNN sentence classifiers against bag-of-words baselines on the movie-review snippets.

Data: the bundled snippets (``nlpcourse.data.load_reviews``), tokenised with ``word_tokenize``, split by
MOVIE everywhere, so no movie is in two parts: (1) one seeded 80/10/10 train/validation/test split
(split seed 0, the chapter's); (2) 10-fold cross-validation over movies (fold seed 0): for each fold the
other nine are split 90/10 by movie into train and validation. The validation part only early-stops the
CNNs and picks the regularisation constant C of the linear baselines and the source of the pretrained
vectors (below); the test part/fold is used once, for the number reported.

Systems (names as in the JSON):

* ``majority``: the most frequent label of the training part;
* ``logreg``: L2 logistic regression (scikit-learn, liblinear) on binary uni+bigram features (C from
  {0.1, 0.3, 1, 3, 10} on validation);
* ``nbsvm``: NB-SVM (Wang & Manning 2012): binary uni+bigrams scaled by the NB log-count ratio (alpha 1),
  scikit-learn's ``LinearSVC`` (L2, squared hinge), weights interpolated with their mean magnitude by
  beta (C from {0.01, 0.1, 1} and beta from {0.25 (the paper's), 0.5, 1 (no interpolation)} on validation);
* ``cbow_mean``: logistic regression on the average of the pretrained vectors of a snippet's words;
* ``cnn_rand``, ``cnn_static``, ``cnn_nonstatic``, ``cnn_multichannel``: ``nlpcourse.models.cnn.KimCNN``
  with Kim's settings (widths 3,4,5, 100 maps each, dropout 0.5, max-norm 3, batches of 50), trained with
  Adam (lr 1e-3; Adadelta gave about 70% for CNN-rand in the issue's measurement) for at most
  ``--epochs`` epochs, early-stopped on validation accuracy (``--patience``, 2), best epoch restored.

The linear baselines are scikit-learn's (liblinear). Pretrained vectors (100-d): the word2vec chapter's
(``data/checkpoints/word2vec_sg.bin``: Austen + Shakespeare + KJV) and "domain" vectors trained by the
course's word2vec (skip-gram, 5 epochs, min_count 2) on the Brown corpus plus the TRAINING part's
snippets (never validation or test text), retrained for every fold. Which of the two the pretrained
systems use is decided once, on the seeded split, by CNN-static's validation accuracy with each; the
coverage of both (of the training part's word types and tokens) is recorded in ``setup``.

Targets: CNN-rand >= 0.76 (Kim's MR figure 76.1); the best CNN >= the best bag-of-words baseline
(logreg, nbsvm) in the same run; each CNN trains within 120 s on 2 CPU cores (``wall_s``: training time on
the seeded split, without the time to train the vectors, which ``setup`` records).

    python benchmarks/cnn.py --json benchmarks/results/cnn.json      # the full run
    python benchmarks/cnn.py --tiny                                  # seconds: a smoke run (tests)
    python benchmarks/cnn.py --folds-run 3 --epochs 8                # 3 of the 10 folds only

``--json FILE`` writes ``{"systems": {NAME: {"accuracy", "cv_mean", "cv_std", "wall_s", ...}},
"pretrained_minus_rand": {NAME: {"split", "cv_mean", "cv_std"}}, "setup": {...}}``, accuracies as fractions,
after the seeded split and again after every fold (``setup["folds_done"]`` says how many folds it holds).

``--ablations`` (only this part; the other entries of ``--json`` are kept): CNN-rand on the seeded split
with Kim's settings and with one thing changed (``ABLATIONS``: no dropout, mean pooling, Kalchbrenner et
al.'s 2-max pooling), each on ``--ablation-seeds`` seeds (initialisation and batch order; the split and
the vocabulary, the training words seen twice or more, are fixed), ``--jobs`` runs at once on one thread
each. ``"ablations": {"kim": {"accuracy": [per seed]}, NAME: {"accuracy": [...], "minus_kim": [per seed],
"diff_mean", "diff_ci95": [lo, hi]}}``: the paired difference with Kim's model on the same seed, and its
95% t-interval over the seeds.

    python benchmarks/cnn.py --ablations --jobs 2 --json benchmarks/results/cnn.json   # ~6 min on 2 cores
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import os
import platform
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.stats
import torch
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC

import nlpcourse
from nlpcourse.data import load_reviews, split_indices, word_tokenize
from nlpcourse.data.vocab import Vocab
from nlpcourse.models.cnn import (
    CNNTrainSettings,
    KimCNN,
    KimCNNConfig,
    evaluate_cnn,
    labelled_batches,
    pretrained_embeddings,
    train_kim_cnn,
    training_vocab,
)
from nlpcourse.models.cnn import (
    domain_vectors as cnn_domain_vectors,
)
from nlpcourse.report import write_json
from nlpcourse.vectors import WordVectors

REPO = Path(__file__).resolve().parents[1]
CHAPTER_VECTORS = REPO / "data" / "checkpoints" / "word2vec_sg.bin"
CNN_VARIANTS = ("rand", "static", "nonstatic", "multichannel")
SYSTEMS = ("majority", "logreg", "nbsvm", "cbow_mean") + tuple(f"cnn_{v}" for v in CNN_VARIANTS)
BOW_BASELINES = ("logreg", "nbsvm")
#: The ablations of CNN-rand (``--ablations``): name -> what differs from Kim's settings (KimCNNConfig fields).
ABLATIONS = {"kim": {}, "no_dropout": {"dropout": 0.0}, "mean_pooling": {"pooling": "mean"},
             "kmax_2": {"pooling": "kmax", "k": 2}}


def paired(a: Sequence[float], b: Sequence[float]) -> dict:
    """The mean of the paired differences a - b and its 95% t interval (NaN bounds with one pair)."""
    d = [x - y for x, y in zip(a, b, strict=True)]
    half = (float(scipy.stats.t.ppf(0.975, len(d) - 1)) * statistics.stdev(d) / math.sqrt(len(d)) if len(d) > 1
            else float("nan"))
    return {"diff_mean": statistics.fmean(d), "diff_ci95": [statistics.fmean(d) - half, statistics.fmean(d) + half]}


@dataclass
class Options:
    """What a run does (recorded in ``setup``)."""

    epochs: int = 12  # at most this many epochs per CNN (early stopping usually ends sooner)
    patience: int = 2  # stop a CNN after this many epochs without a higher validation accuracy
    folds: int = 10  # cross-validation folds over movies
    folds_run: int = 10  # run only the first this many folds (fewer: a quicker, partial run)
    stride: int = 1  # use every n-th snippet (the smoke run uses fewer)
    brown_tokens: int | None = None  # limit the Brown corpus for the domain vectors (None: all of it)
    w2v_epochs: int = 5  # epochs of the domain word2vec
    device: str = "cpu"
    seed: int = 0
    ablations: bool = False  # run only the ablations of CNN-rand (see the module's docstring)
    ablation_seeds: int = 3  # seeds of each ablation
    jobs: int = 1  # ablation runs at once, one thread each


@dataclass
class Part:
    """Token lists and labels of one part of a split."""

    tokens: list[list[str]]
    labels: torch.Tensor  # (N,) long


# ---------------------------------------------------------------- linear models (scikit-learn)


def grams(tokens: list[str]) -> list[str]:
    """The unigrams and bigrams of one tokenised snippet (CountVectorizer's analyzer)."""
    return tokens + [a + " " + b for a, b in zip(tokens, tokens[1:])]


def ngram_features(parts: Sequence[Part]) -> list[sparse.csr_matrix]:
    """Binary uni+bigram rows (N,F) of each part; the feature set is the first (training) part's."""
    vec = CountVectorizer(analyzer=grams, binary=True)
    return [vec.fit_transform(parts[0].tokens)] + [vec.transform(p.tokens) for p in parts[1:]]


def tune(make, train: tuple, val: tuple, grid: Sequence[float]):
    """The model ``make(C)`` of ``grid`` with the best validation accuracy (ties: the smaller C), fitted."""
    best = None
    for C in grid:
        model = make(C).fit(*train)
        acc = model.score(*val)
        if best is None or acc > best[0]:
            best = (acc, C, model)
    return best[1], best[2]


def logistic(C: float) -> LogisticRegression:
    return LogisticRegression(C=C, solver="liblinear", max_iter=1000)


def run_logreg(parts: Sequence[Part]) -> dict:
    (Xtr, Xva, Xte), (tr, va, te) = ngram_features(parts), parts
    C, model = tune(logistic, (Xtr, tr.labels.numpy()), (Xva, va.labels.numpy()), (0.1, 0.3, 1.0, 3.0, 10.0))
    return {"accuracy": float(model.score(Xte, te.labels.numpy())), "C": C}


def nb_ratio(X: sparse.csr_matrix, y: np.ndarray, alpha: float) -> np.ndarray:
    """Wang & Manning's log-count ratio r = log((p/|p|_1) / (q/|q|_1)), p, q: smoothed feature counts
    of the positive and negative rows."""
    p = np.asarray(X[y == 1].sum(0)).ravel() + alpha  # (F,)
    q = np.asarray(X[y == 0].sum(0)).ravel() + alpha  # (F,)
    return np.log(p / p.sum()) - np.log(q / q.sum())


class NBSVM:
    """NB-SVM (Wang & Manning 2012, section 2.3): a linear SVM (L2 regularisation, squared hinge, as their
    liblinear) on the binary features scaled by the NB ratio, its weights interpolated with their mean
    magnitude: w' = (1 - beta) w_bar + beta w, w_bar = ||w||_1 / |F|."""

    def __init__(self, C: float, beta: float = 0.25, alpha: float = 1.0):
        self.C, self.beta, self.alpha = C, beta, alpha

    def fit(self, X: sparse.csr_matrix, y: np.ndarray) -> NBSVM:
        self.r = nb_ratio(X, y, self.alpha)
        svm = LinearSVC(C=self.C, loss="squared_hinge", max_iter=10_000).fit(X.multiply(self.r).tocsr(), y)
        w = svm.coef_.ravel()
        self.w, self.b = (1 - self.beta) * np.abs(w).mean() + self.beta * w, svm.intercept_[0]
        return self

    def score(self, X: sparse.csr_matrix, y: np.ndarray) -> float:
        z = X.multiply(self.r).tocsr() @ self.w + self.b  # (N,F) x (F,) -> (N,)
        return float(((z > 0).astype(int) == y).mean())


def run_nbsvm(parts: Sequence[Part]) -> dict:
    (Xtr, Xva, Xte), (tr, va, te) = ngram_features(parts), parts
    best = None
    for beta in (0.25, 0.5, 1.0):  # 0.25 is theirs; on these snippets (58% fresh) larger betas do better
        C, model = tune(functools.partial(NBSVM, beta=beta), (Xtr, tr.labels.numpy()), (Xva, va.labels.numpy()),
                        (0.01, 0.1, 1.0))
        val = model.score(Xva, va.labels.numpy())
        if best is None or val > best[0]:
            best = (val, {"accuracy": model.score(Xte, te.labels.numpy()), "C": C, "beta": beta})
    return best[1]


def run_cbow_mean(parts: Sequence[Part], wv: WordVectors) -> dict:
    def mean_vectors(part: Part) -> np.ndarray:
        rows = []
        for toks in part.tokens:
            ids = [wv.index[t] for t in toks if t in wv.index]
            rows.append(wv.vectors[ids].mean(0) if ids else torch.zeros(wv.dim))
        return torch.stack(rows).double().numpy()  # (N,D)

    scaler = StandardScaler().fit(mean_vectors(parts[0]))  # standardised with the training statistics
    Xtr, Xva, Xte = (scaler.transform(mean_vectors(p)) for p in parts)
    ys = [p.labels.numpy() for p in parts]
    C, model = tune(logistic, (Xtr, ys[0]), (Xva, ys[1]), (0.01, 0.1, 1.0, 10.0))
    return {"accuracy": float(model.score(Xte, ys[2])), "C": C}


# ---------------------------------------------------------------- vectors and CNNs


def domain_vectors(train: Part, opts: Options) -> WordVectors:
    """Skip-gram vectors from the course trainer on Brown + the training part's snippets (no other text)."""
    return cnn_domain_vectors(train.tokens, opts.brown_tokens, opts.w2v_epochs, opts.seed, opts.device)


def run_cnn(variant: str, parts: Sequence[Part], wv: WordVectors, opts: Options, vocab: Vocab | None = None) -> dict:
    """Train one CNN on parts[0], early-stopped on parts[1]; accuracy on parts[2], training seconds. The
    vocabulary: ``vocab``, else the training words seen twice or with a vector (``training_vocab``)."""
    start = time.perf_counter()
    vocab = vocab or training_vocab(parts[0].tokens, wv)
    emb = pretrained_embeddings(vocab, wv, seed=opts.seed)
    nlpcourse.seed_everything(opts.seed)
    cfg = KimCNNConfig(vocab_size=len(vocab), embed_dim=wv.dim, variant=variant)
    model = KimCNN(cfg, None if variant == "rand" else emb.weight)
    ids = [[vocab.encode(t) or [vocab.unk_id] for t in p.tokens] for p in parts]
    settings = CNNTrainSettings(epochs=opts.epochs, patience=opts.patience, seed=opts.seed)
    hist = train_kim_cnn(model, (ids[0], parts[0].labels), (ids[1], parts[1].labels), settings, opts.device)
    seconds = time.perf_counter() - start
    test = evaluate_cnn(model, labelled_batches(ids[2], parts[2].labels, 500, shuffle=False))
    return {"accuracy": test["acc"], "seconds": seconds, "epochs_run": hist.epochs,
            "best_epoch": (hist.best_epoch or 0) + 1, "val_acc": max(hist.metrics["val_acc"]),
            "coverage": emb.coverage}


# ---------------------------------------------------------------- one split, all systems


def run_all(parts: Sequence[Part], wv: WordVectors, opts: Options, say) -> dict[str, dict]:
    """Every system on one (train, val, test) split: {name: {"accuracy", "seconds", ...}}."""
    out: dict[str, dict] = {}
    train_majority = int(parts[0].labels.float().mean() >= 0.5)
    out["majority"] = {"accuracy": float((parts[2].labels == train_majority).float().mean()), "seconds": 0.0}
    for name, fn in (("logreg", run_logreg), ("nbsvm", run_nbsvm),
                     ("cbow_mean", lambda p: run_cbow_mean(p, wv))):
        start = time.perf_counter()
        out[name] = fn(parts) | {"seconds": time.perf_counter() - start}
    for variant in CNN_VARIANTS:
        out[f"cnn_{variant}"] = run_cnn(variant, parts, wv, opts)
    say("  " + ", ".join(f"{k} {v['accuracy']:.4f} ({v['seconds']:.0f} s)" for k, v in out.items()))
    return out


def make_parts(tokens, labels, idx: Sequence[Sequence[int]]) -> list[Part]:
    return [Part([tokens[i] for i in ix], labels[torch.tensor(list(ix), dtype=torch.long)]) for ix in idx]


def choose_vectors(parts: Sequence[Part], chapter: WordVectors, opts: Options, say) -> tuple[str, dict]:
    """Pick the vector source on the seeded split by CNN-static's VALIDATION accuracy; coverage of both."""
    start = time.perf_counter()
    domain = domain_vectors(parts[0], opts)
    w2v_seconds = time.perf_counter() - start
    info = {"domain_w2v_seconds": round(w2v_seconds, 1), "domain_vocab": len(domain), "chapter_vocab": len(chapter)}
    train_words = Counter(t for toks in parts[0].tokens for t in toks)
    info["train_word_types"], info["train_tokens"] = len(train_words), sum(train_words.values())
    for name, wv in (("chapter", chapter), ("domain", domain)):
        info[f"{name}_type_coverage"] = sum(w in wv.index for w in train_words) / len(train_words)
        info[f"{name}_token_coverage"] = sum(c for w, c in train_words.items() if w in wv.index) / sum(
            train_words.values())
        r = run_cnn("static", parts, wv, opts)
        info[f"{name}_cnn_vocab_coverage"] = r["coverage"]
        info[f"{name}_static_val_acc"] = r["val_acc"]
        say(f"vectors {name}: {info[f'{name}_type_coverage']:.3f} of the training word types, "
            f"{info[f'{name}_token_coverage']:.3f} of the tokens; CNN-static val acc {r['val_acc']:.4f}")
    choice = "domain" if info["domain_static_val_acc"] >= info["chapter_static_val_acc"] else "chapter"
    return choice, info | {"vectors": choice, "_domain": domain}


def ablation_run(job: tuple[str, int, Sequence[Part], Options]) -> tuple[str, int, float]:
    """One CNN-rand of ``ABLATIONS[name]`` on seed ``seed``: its test accuracy (one thread)."""
    name, seed, parts, opts = job
    torch.set_num_threads(1)
    vocab = training_vocab(parts[0].tokens)
    nlpcourse.seed_everything(seed)
    model = KimCNN(KimCNNConfig(vocab_size=len(vocab), **ABLATIONS[name]))
    ids = [[vocab.encode(t) or [vocab.unk_id] for t in p.tokens] for p in parts]
    settings = CNNTrainSettings(epochs=opts.epochs, patience=opts.patience, seed=seed)
    train_kim_cnn(model, (ids[0], parts[0].labels), (ids[1], parts[1].labels), settings, opts.device)
    test = evaluate_cnn(model, labelled_batches(ids[2], parts[2].labels, 500, shuffle=False))
    return name, seed, test["acc"]


def ablations(parts: Sequence[Part], opts: Options, seeds: int, jobs: int, say) -> dict:
    """Every ablation of ``ABLATIONS`` on ``seeds`` seeds, paired with Kim's settings seed by seed."""
    from concurrent.futures import ProcessPoolExecutor

    todo = [(name, seed, parts, opts) for seed in range(seeds) for name in ABLATIONS]
    acc: dict[str, dict[int, float]] = {name: {} for name in ABLATIONS}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for name, seed, a in pool.map(ablation_run, todo):
            acc[name][seed] = a
            say(f"  {name}, seed {seed}: test accuracy {a:.4f}")
    out = {"kim": {"accuracy": [acc["kim"][s] for s in range(seeds)]}}
    for name in list(ABLATIONS)[1:]:
        mine, kim = [acc[name][s] for s in range(seeds)], out["kim"]["accuracy"]
        out[name] = {"accuracy": mine, "minus_kim": [x - y for x, y in zip(mine, kim)]} | paired(mine, kim)
    out["setup"] = {"seeds": seeds, "split": "by movie, 80/10/10, seed 0", "variant": "rand",
                    "changes": ABLATIONS, "epochs": opts.epochs, "patience": opts.patience,
                    "threads_per_run": 1, "date": time.strftime("%Y-%m-%d")}
    return out


def main(argv: list[str] | None = None) -> dict:
    opts, json_path, threads = parse(argv)
    torch.set_num_threads(threads)
    say = print
    reviews = load_reviews()[:: opts.stride]
    tokens = [word_tokenize(r.text) for r in reviews]
    labels = torch.tensor([r.label for r in reviews])
    movies = [r.movie for r in reviews]
    chapter = WordVectors.load(CHAPTER_VECTORS)

    split = make_parts(tokens, labels, split_indices(len(reviews), (0.8, 0.1, 0.1), seed=0, groups=movies))
    say(f"seeded split: train {len(split[0].tokens)}, val {len(split[1].tokens)}, test {len(split[2].tokens)}")
    if opts.ablations:
        report = json.loads(json_path.read_text()) if json_path and json_path.exists() else {}
        report["ablations"] = ablations(split, opts, opts.ablation_seeds, opts.jobs, say)
        write_json(json_path, report)
        return report
    choice, vec_info = choose_vectors(split, chapter, opts, say)
    domain = vec_info.pop("_domain")
    seeded = run_all(split, domain if choice == "domain" else chapter, opts, say)

    folds = split_indices(len(reviews), [1 / opts.folds] * opts.folds, seed=0, groups=movies)
    cv: dict[str, list[float]] = {name: [] for name in SYSTEMS}
    write_json(json_path, summarise(seeded, cv, opts, vec_info, threads, len(reviews)))
    for k in range(min(opts.folds_run, opts.folds)):
        rest = [i for j, f in enumerate(folds) if j != k for i in f]
        tr, va = split_indices(len(rest), (0.9, 0.1), seed=k, groups=[movies[i] for i in rest])
        parts = make_parts(tokens, labels, ([rest[i] for i in tr], [rest[i] for i in va], folds[k]))
        wv = domain_vectors(parts[0], opts) if choice == "domain" else chapter
        say(f"fold {k + 1}/{opts.folds}: train {len(tr)}, val {len(va)}, test {len(folds[k])}")
        for name, r in run_all(parts, wv, opts, say).items():
            cv[name].append(r["accuracy"])
        write_json(json_path, summarise(seeded, cv, opts, vec_info, threads, len(reviews)))  # after every fold
    report = summarise(seeded, cv, opts, vec_info, threads, len(reviews))
    print_table(report)
    write_json(json_path, report)
    return report


def summarise(seeded: dict, cv: dict, opts: Options, vec_info: dict, threads: int, n: int) -> dict:
    systems = {}
    for name in SYSTEMS:
        accs = cv[name]
        systems[name] = {"accuracy": seeded[name]["accuracy"],
                         "cv_mean": statistics.fmean(accs) if accs else None,
                         "cv_std": statistics.stdev(accs) if len(accs) > 1 else None,
                         "wall_s": round(seeded[name]["seconds"], 1), "cv_accuracies": accs,
                         **{k: v for k, v in seeded[name].items() if k not in ("accuracy", "seconds")}}
    diffs = {}
    for v in CNN_VARIANTS[1:]:  # pretrained minus rand, paired by fold
        d = [a - b for a, b in zip(cv[f"cnn_{v}"], cv["cnn_rand"])]
        diffs[f"cnn_{v}"] = {"split": seeded[f"cnn_{v}"]["accuracy"] - seeded["cnn_rand"]["accuracy"],
                             "cv_mean": statistics.fmean(d) if d else None,
                             "cv_std": statistics.stdev(d) if len(d) > 1 else None}
    setup = dataclasses.asdict(opts) | vec_info | {
        "snippets": n, "split": "by movie, 80/10/10, seed 0", "cv": f"{opts.folds} folds by movie, seed 0",
        "folds_done": len(cv["majority"]), "optimizer": "adam lr 1e-3, batch 50, early stopping on val acc",
        "cnn": "widths 3,4,5 x 100 maps, dropout 0.5, max-norm 3, wide convolution, 100-d embeddings",
        "threads": threads, "torch": torch.__version__, "python": platform.python_version(),
        "machine": platform.machine(), "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%d")}
    return {"systems": systems, "pretrained_minus_rand": diffs, "setup": setup}


def print_table(report: dict) -> None:
    s = report["systems"]
    print(f"\n{'system':18s} {'split acc':>9s} {'cv mean':>8s} {'cv std':>7s} {'wall s':>7s}")
    for name, r in s.items():
        cvm = f"{r['cv_mean']:.4f}" if r["cv_mean"] is not None else "-"
        cvs = f"{r['cv_std']:.4f}" if r["cv_std"] is not None else "-"
        print(f"{name:18s} {r['accuracy']:9.4f} {cvm:>8s} {cvs:>7s} {r['wall_s']:7.1f}")
    for name, d in report["pretrained_minus_rand"].items():
        cv = f"{d['cv_mean']:+.4f} +- {d['cv_std']:.4f} over the folds" if d["cv_std"] is not None else "-"
        print(f"{name} - cnn_rand: split {d['split']:+.4f}; {cv}")
    best_cnn = max(s[f"cnn_{v}"]["accuracy"] for v in CNN_VARIANTS)
    best_bow = max(s[b]["accuracy"] for b in BOW_BASELINES)
    slow = max(s[f"cnn_{v}"]["wall_s"] for v in CNN_VARIANTS)
    rand_ok = s["cnn_rand"]["accuracy"] >= 0.76
    print(f"targets (seeded split): CNN-rand >= 0.76: {'met' if rand_ok else 'NOT met'}; "
          f"best CNN {best_cnn:.4f} >= best bag-of-words {best_bow:.4f}: "
          f"{'met' if round(best_cnn, 6) >= round(best_bow, 6) else 'NOT met'}; "
          f"slowest CNN {slow:.0f} s <= 120 s: {'met' if slow <= 120 else 'NOT met'}")


def parse(argv: list[str] | None) -> tuple[Options, Path | None, int]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    p.add_argument("--epochs", type=int, default=12, help="at most this many epochs per CNN (default 12)")
    p.add_argument("--patience", type=int, default=2, help="CNN early-stopping patience in epochs (default 2)")
    p.add_argument("--folds-run", type=int, default=10, help="run only the first N of the 10 folds")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--threads", type=int, default=1,
                   help="PyTorch CPU threads (default 1: on 2 busy cores 2 threads ran 20x slower)")
    p.add_argument("--tiny", action="store_true", help="a smoke run in seconds: 1/32 of the snippets, "
                   "2 folds, 1 epoch, 20k Brown words")
    p.add_argument("--ablations", action="store_true", help="only CNN-rand's ablations, keeping the rest of --json")
    p.add_argument("--ablation-seeds", type=int, default=3, help="seeds per ablation (default 3)")
    p.add_argument("--jobs", type=int, default=1, help="ablation runs at once, one thread each (default 1)")
    args = p.parse_args(argv)
    if args.ablation_seeds < 1:
        p.error("--ablation-seeds must be at least 1")
    opts = Options(epochs=args.epochs, patience=args.patience, folds_run=args.folds_run, device=args.device,
                   ablations=args.ablations, ablation_seeds=args.ablation_seeds, jobs=args.jobs)
    if args.tiny:
        opts = dataclasses.replace(opts, epochs=1, folds=2, folds_run=2, stride=32, brown_tokens=20_000, w2v_epochs=1)
    return opts, args.json, args.threads


if __name__ == "__main__":
    main()
