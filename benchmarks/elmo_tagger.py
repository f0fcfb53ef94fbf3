"""ELMo used on a task: the seq2seq chapter's part-of-speech tagger with and without the pretraining chapter's
frozen biLM, at a few label budgets (Peters et al., 2018, section 3.3 and its figure on training-set size).

    python benchmarks/elmo_tagger.py --jobs 2 --json benchmarks/results/elmo_tagger.json
    python benchmarks/elmo_tagger.py --tiny            # a smoke run of seconds

**Data.** The Brown tagging split of the seq2seq chapter (by document, 80/10/10, seed 0). The biLM
(``data/checkpoints/elmo_brown.pt``, ``scripts/train_elmo.py``) read every training sentence, never a tag: it is
the unlabelled text. For each budget of ``BUDGETS`` labelled training sentences, ``--seeds`` subsets
(``pretraining.label_subset``: the first n of a seeded permutation, so each budget's subsets hold the smaller budgets').

**Systems.** ``nlpcourse.models.tagger.BiLSTMTagger`` (word, suffix and shape features, 128 units each way), its
word vocabulary and suffixes learnt from the labelled subset alone (words seen twice; the rest are <unk>);
``elmo`` adds the scalar mix of the biLM's three layers (eq. 1, the mix learnt with the tagger, the biLM frozen)
to each token's input, ``plain`` does not. Both train with the chapter's recipe (Adam, rate 2e-3, dropout 0.3,
batches of ``BATCH``) for the same number of steps (``epochs_for``: about ``STEPS`` steps, at most
``MAX_EPOCHS`` epochs) on the same subset with the same seed; the last epoch's model tags the test part.
The most-frequent-tag baseline is fitted to the same subset.

The JSON: ``{"curve": [{"labels": n, "tokens": labelled tokens (mean over subsets), "epochs": e, "elmo": [test
accuracy per seed], "plain": [...], "most_frequent": [...], "diff_mean", "diff_ci95": [lo, hi]}, ...],
"setup": {...}}``: the paired difference elmo - plain over the subsets, its 95% t interval (``cnn.paired``).
"""
from __future__ import annotations

import argparse
import math
import platform
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import cnn  # benchmarks/cnn.py: the paired interval
import torch
from pretraining import label_subset  # benchmarks/pretraining.py: its curve's subsets

import nlpcourse
from nlpcourse.data.tagging import TaggingSplit, tagging_split
from nlpcourse.data.vocab import Vocab
from nlpcourse.models.elmo import bilm_from_config
from nlpcourse.models.tagger import (
    BiLSTMTagger,
    MostFrequentTag,
    TaggerConfig,
    TaggerFeatures,
    fit_tagger,
    predict_tags,
    tag_accuracy,
)
from nlpcourse.report import write_json

REPO = Path(__file__).resolve().parents[1]
CHECKPOINT = REPO / "data" / "checkpoints" / "elmo_brown.pt"
BUDGETS = (100, 300, 1000)  # labelled training sentences per point (the training part has about 45,000)
STEPS = 600  # Adam steps per run, the same for both systems (whole epochs: see epochs_for)
BATCH = 16  # sentences per step
MAX_EPOCHS = 60  # passes over the smallest subsets


@dataclass
class Options:
    """What a run does (recorded in ``setup``)."""

    budgets: tuple = BUDGETS
    seeds: int = 5  # label subsets per budget (each also the run's seed)
    steps: int = STEPS
    test_stride: int = 1  # tag every n-th test sentence (the smoke run tags fewer)
    jobs: int = 1  # runs at once, one thread each


def epochs_for(labels: int, steps: int = STEPS, batch: int = BATCH) -> int:
    """Whole epochs over ``labels`` sentences that make about ``steps`` steps, at most MAX_EPOCHS."""
    return min(MAX_EPOCHS, max(1, round(steps / math.ceil(labels / batch))))


@lru_cache(maxsize=1)
def _data():
    """The tagging split and the frozen biLM with its vocabulary (once per process)."""
    ck = nlpcourse.load_checkpoint(CHECKPOINT, build=bilm_from_config)
    return tagging_split(), ck.model.float().eval(), ck.vocab


def labelled_part(split: TaggingSplit, labels: int, seed: int) -> TaggingSplit:
    """The split with only the subset's sentences labelled, its words learnt from them alone."""
    train = [split.train[i] for i in label_subset(len(split.train), labels, seed)]
    words = Vocab.build(([w.lower() for w, _ in s] for s in train), min_freq=2)
    return TaggingSplit(train, split.valid[:100], split.test, words, split.tags)


def tagger_run(task: tuple) -> dict:
    """One (system, budget, seed) point: train on the subset, tag the test part."""
    system, labels, seed, opts = task
    nlpcourse.use_threads(1)
    split, bilm, bilm_words = _data()
    part = labelled_part(split, labels, seed)
    feats = TaggerFeatures.fit(part, bilm_words if system == "elmo" else None)
    elmo = dict(elmo_layers=bilm.config.layers + 1, elmo_dim=2 * bilm.config.hidden) if system == "elmo" else {}
    torch.manual_seed(seed)
    model = BiLSTMTagger(TaggerConfig(len(feats.words), len(feats.suffixes), len(split.tags), **elmo),
                         bilm if system == "elmo" else None)
    epochs = epochs_for(labels, opts.steps)
    history = fit_tagger(model, feats, part, epochs=epochs, batch_size=BATCH, seed=seed)
    test = split.test[::opts.test_stride]
    return {"system": system, "labels": labels, "seed": seed, "epochs": epochs,
            "tokens": sum(map(len, part.train)), "seconds": round(history.seconds, 1),
            "accuracy": tag_accuracy(predict_tags(model, feats, test), split.tag_ids(test))}


def most_frequent(labels: int, seed: int, test_stride: int) -> float:
    """The most-frequent-tag baseline fitted to the same subset."""
    split = tagging_split()  # not _data(): the biLM is the taggers', not the baseline's
    test = split.test[::test_stride]
    return tag_accuracy(MostFrequentTag(labelled_part(split, labels, seed)).predict(test), split.tag_ids(test))


def run(opts: Options, say=print) -> list[dict]:
    """Every budget on ``opts.seeds`` subsets, elmo and plain paired subset by subset."""
    todo = [(system, n, s, opts) for n in opts.budgets for s in range(opts.seeds) for system in ("elmo", "plain")]
    runs = {}
    with ProcessPoolExecutor(max_workers=opts.jobs) as pool:
        for r in pool.map(tagger_run, todo):
            runs[r["system"], r["labels"], r["seed"]] = r
            say(f"  {r['system']:5s} {r['labels']:5d} sentences, seed {r['seed']}: accuracy {r['accuracy']:.4f} "
                f"({r['epochs']} epochs, {r['seconds']:.0f} s)")
    return [point(runs, n, opts) for n in opts.budgets]


def point(runs: dict, labels: int, opts: Options) -> dict:
    acc = {system: [runs[system, labels, s]["accuracy"] for s in range(opts.seeds)] for system in ("elmo", "plain")}
    return {"labels": labels, "tokens": statistics.fmean(runs["plain", labels, s]["tokens"] for s in range(opts.seeds)),
            "epochs": runs["plain", labels, 0]["epochs"], **acc,
            "most_frequent": [most_frequent(labels, s, opts.test_stride) for s in range(opts.seeds)],
            **cnn.paired(acc["elmo"], acc["plain"])}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    p.add_argument("--seeds", type=int, default=5, help="label subsets per budget (default 5)")
    p.add_argument("--jobs", type=int, default=1, help="runs at once, one thread each (default 1)")
    p.add_argument("--tiny", action="store_true", help="a smoke run: 2 subsets of 20 sentences, 20 steps")
    a = p.parse_args(argv)
    if a.seeds < 2:
        p.error("--seeds must be at least 2 (the intervals are paired over subsets)")
    opts = Options(seeds=a.seeds, jobs=max(1, a.jobs))
    if a.tiny:
        opts = replace(opts, budgets=(20,), seeds=2, steps=20, test_stride=50)
    start = time.perf_counter()
    report = {"curve": run(opts), "setup": {
        "checkpoint": str(CHECKPOINT.relative_to(REPO)), "seeds": opts.seeds, "steps": opts.steps, "batch": BATCH,
        "max_epochs": MAX_EPOCHS, "test_stride": opts.test_stride, "threads_per_run": 1, "jobs": opts.jobs,
        "wall_s": round(time.perf_counter() - start), "torch": torch.__version__, "python": platform.python_version(),
        "date": time.strftime("%Y-%m-%d")}}
    write_json(a.json, report)
    print(f"\n{'labels':>6s} {'elmo':>7s} {'plain':>7s} {'most freq':>9s}  elmo - plain [95%]")
    for c in report["curve"]:
        lo, hi = c["diff_ci95"]
        print(f"{c['labels']:6d} {statistics.fmean(c['elmo']):7.4f} {statistics.fmean(c['plain']):7.4f} "
              f"{statistics.fmean(c['most_frequent']):9.4f}  {c['diff_mean']:+.4f} [{lo:+.4f}, {hi:+.4f}]")
    return report


if __name__ == "__main__":
    main()
