"""The course's word2vec trainer against gensim's ``Word2Vec``, on the same corpus, in one run.

Both train skip-gram, then CBOW, with negative sampling with the same settings (dimension, window,
negatives, epochs, min_count, subsampling threshold, initial and final learning rate: the C tool's,
0.025 for skip-gram and 0.05 for CBOW) and two threads each (``torch.set_num_threads(2)``; gensim
``workers=2``), from the same list of tokenised sentences: the bundled Austen + Shakespeare + King
James Bible, about 2.4 million words. CBOW averages the context vectors (gensim ``cbow_mean=1``) and
both trainers update it as the C tool does (the course trainer's default ``cbow_update="tool"``).
The wall time of each includes building its vocabulary. All sets of vectors are then evaluated by
the same code (``nlpcourse.vectors``, gensim's evaluation sets): analogy accuracy (3CosAdd) on the
covered questions of ``questions-words.txt``, Spearman correlation on WordSim-353 and SimLex-999.

Prints a table per architecture with the ratio course / gensim of every number. Targets, for each
architecture: analogy accuracy at least gensim's (ratio >= 1), wall time at most 1.5 x gensim's.

    .venv/bin/python benchmarks/word2vec.py [--runs 3] [--json FILE] [--max-tokens N] [--epochs E]

``--json FILE`` writes ``{"course": {...}, "gensim": {...}, "ratio": {...}, "course_cbow": {...},
"gensim_cbow": {...}, "ratio_cbow": {...}, "setup": {...}}`` with the keys ``analogy_accuracy``,
``ws353_spearman``, ``simlex_spearman``, ``wall_s``, ``words_per_s`` in ``course`` and ``gensim``
(skip-gram) and in ``course_cbow`` and ``gensim_cbow``. With ``--runs N`` each trainer runs N times
(seeds 0..N-1, the order of the trainers alternating): the wall time is the median, the quality
numbers the mean.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import time
from pathlib import Path

import torch

from nlpcourse.data.word_corpus import build_word_corpus, bundled_sentences
from nlpcourse.models.word2vec import Word2Vec, Word2VecConfig
from nlpcourse.vectors import WordVectors, evaluate_all

ARCHS = ("skipgram", "cbow")
KEYS = ("analogy_accuracy", "ws353_spearman", "simlex_spearman", "wall_s", "words_per_s")


def run_course(sentences, cfg: Word2VecConfig, min_count: int) -> tuple[WordVectors, float]:
    start = time.perf_counter()
    corpus = build_word_corpus(sentences, min_count=min_count)
    model = Word2Vec(cfg, corpus, device="cpu")
    model.fit(corpus, progress=False)
    return model.vectors(), time.perf_counter() - start


def run_gensim(sentences, cfg: Word2VecConfig, min_count: int, threads: int) -> tuple[WordVectors, float]:
    from gensim.models import Word2Vec as GensimWord2Vec

    if cfg.architecture == "cbow" and cfg.cbow_update != "tool":
        raise ValueError("gensim's CBOW updates as the C tool does: compare it with cbow_update='tool'")
    start = time.perf_counter()
    model = GensimWord2Vec(sentences, sg=int(cfg.architecture == "skipgram"), cbow_mean=1, vector_size=cfg.dim,
                           window=cfg.window, negative=cfg.negatives, ns_exponent=cfg.noise_power, sample=cfg.sample,
                           epochs=cfg.epochs, min_count=min_count, alpha=cfg.initial_lr, min_alpha=cfg.min_lr,
                           workers=threads, seed=cfg.seed)
    return WordVectors.from_gensim(model.wv), time.perf_counter() - start


def summarise(runs: list[dict], words: int, epochs: int) -> dict[str, float]:
    out = {k: statistics.fmean(r[k] for r in runs) for k in ("analogy_accuracy", "ws353_spearman", "simlex_spearman")}
    out["analogy_covered"] = runs[0]["analogy_covered"]
    out["wall_s"] = statistics.median(r["wall_s"] for r in runs)
    out["words_per_s"] = words * epochs / out["wall_s"]
    out["runs"] = runs
    return out


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=1, help="runs of each trainer (median time, mean quality)")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--max-tokens", type=int, default=None, help="use only the first N words of the corpus")
    p.add_argument("--threads", type=int, default=2, help="threads for each trainer (default 2)")
    p.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    args = p.parse_args(argv)
    logging.getLogger("gensim").setLevel(logging.WARNING)
    torch.set_num_threads(args.threads)

    sentences = bundled_sentences(max_tokens=args.max_tokens)
    words = sum(len(s) for s in sentences)
    min_count = 5
    # the JSON's names: skip-gram's are the plain ones (as before CBOW was benchmarked too)
    sides = {"skipgram": ("course", "gensim", "ratio"), "cbow": ("course_cbow", "gensim_cbow", "ratio_cbow")}
    results: dict[str, list[dict]] = {name: [] for arch in ARCHS for name in sides[arch][:2]}
    for seed in range(args.runs):
        for arch in ARCHS:
            cfg = Word2VecConfig(architecture=arch, epochs=args.epochs, seed=seed)
            course_name, gensim_name = sides[arch][:2]
            for name in (course_name, gensim_name) if seed % 2 == 0 else (gensim_name, course_name):
                if name == course_name:
                    wv, seconds = run_course(sentences, cfg, min_count)
                else:
                    wv, seconds = run_gensim(sentences, cfg, min_count, args.threads)
                row = {**evaluate_all(wv), "wall_s": seconds, "seed": seed, "vocab_size": len(wv)}
                results[name].append(row)
                print(f"run {seed}: {name:11s} {seconds:6.1f} s, analogies {row['analogy_accuracy']:.4f} "
                      f"({row['analogy_covered']} questions), WS-353 {row['ws353_spearman']:.3f}, "
                      f"SimLex {row['simlex_spearman']:.3f}", flush=True)

    import gensim as gensim_pkg

    setup = {"corpus_words": words, "sentences": len(sentences), "epochs": args.epochs, "runs": args.runs,
             "threads": args.threads, "dim": 100, "window": 5, "negatives": 5, "min_count": min_count,
             "sample": 1e-3, "lr": {arch: Word2VecConfig(architecture=arch).initial_lr for arch in ARCHS},
             "cbow_mean": 1, "cbow_update": Word2VecConfig().cbow_update,
             "torch": torch.__version__, "gensim": gensim_pkg.__version__,
             "python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count(),
             "date": time.strftime("%Y-%m-%d")}
    report: dict = {}
    for arch in ARCHS:
        course_name, gensim_name, ratio_name = sides[arch]
        course = summarise(results[course_name], words, args.epochs)
        gensim = summarise(results[gensim_name], words, args.epochs)
        ratio = {k: course[k] / gensim[k] if gensim[k] else float("nan") for k in KEYS}
        report |= {course_name: course, gensim_name: gensim, ratio_name: ratio}
        print()
        print(f"{arch}, {words:,} words, {args.epochs} epochs, lr {setup['lr'][arch]}, "
              f"{args.threads} threads each, {args.runs} run(s)")
        print(f"{'':22s} {'course':>10s} {'gensim':>10s} {'course/gensim':>14s}")
        for k, fmt in (("analogy_accuracy", "{:.4f}"), ("ws353_spearman", "{:.3f}"), ("simlex_spearman", "{:.3f}"),
                       ("wall_s", "{:.1f}"), ("words_per_s", "{:,.0f}")):
            print(f"{k:22s} {fmt.format(course[k]):>10s} {fmt.format(gensim[k]):>10s} {ratio[k]:>14.2f}")
        verdict_acc = "met" if ratio["analogy_accuracy"] >= 1 else "NOT met"
        verdict_time = "met" if ratio["wall_s"] <= 1.5 else "NOT met"
        print(f"{arch} targets: accuracy >= gensim's: {verdict_acc}; wall time <= 1.5 x gensim's: {verdict_time}")
    report["setup"] = setup
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    return report


if __name__ == "__main__":
    main()
