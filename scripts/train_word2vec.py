"""Train the word vectors of the chapter "word2vec" on the bundled corpora and save them.

Skip-gram with negative sampling (the course trainer, ``nlpcourse.models.word2vec``) on Austen,
Shakespeare and the King James Bible (about 2.4 million words), with the defaults of the C tool and
gensim: 100 dimensions, window 5, 5 negatives, 5 epochs, min_count 5. Writes

* ``data/checkpoints/word2vec_sg.bin``: the vectors in the word2vec binary format, most frequent word
  first (``nlpcourse.vectors.WordVectors.load``, or gensim's ``KeyedVectors.load_word2vec_format(path,
  binary=True)``); the CNN chapter initialises its embeddings from them;
* ``data/checkpoints/word2vec_sg.json``: the config, the training curve, the evaluation and the time.

    python scripts/train_word2vec.py                       # about 35 s on 2 CPU cores
    python scripts/train_word2vec.py --tiny --out /tmp/w.bin   # seconds, for tests
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import torch

from nlpcourse.data.word_corpus import build_word_corpus, bundled_sentences
from nlpcourse.models.word2vec import Word2Vec, Word2VecConfig
from nlpcourse.vectors import evaluate_analogies, evaluate_similarity

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "data" / "checkpoints" / "word2vec_sg.bin"


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"vectors to write (default {DEFAULT_OUT})")
    p.add_argument("--architecture", choices=("skipgram", "cbow"), default="skipgram")
    p.add_argument("--epochs", type=int, default=None, help="passes over the corpus (default 5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu (default), cuda or mps")
    p.add_argument("--threads", type=int, default=2, help="CPU threads for PyTorch (default 2)")
    p.add_argument("--tiny", action="store_true", help="50k words, 16 dimensions, one epoch: seconds (tests)")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    cfg = Word2VecConfig(architecture=args.architecture, seed=args.seed)
    max_tokens, min_count = None, 5
    if args.tiny:
        cfg = dataclasses.replace(cfg, dim=16, epochs=1, batch_size=512)
        max_tokens, min_count = 50_000, 3
    if args.epochs is not None:
        cfg = dataclasses.replace(cfg, epochs=args.epochs)

    start = time.perf_counter()
    corpus = build_word_corpus(bundled_sentences(max_tokens=max_tokens), min_count=min_count)
    print(f"corpus: {corpus.raw_tokens} words, {len(corpus)} kept, vocabulary {corpus.vocab_size}")
    model = Word2Vec(cfg, corpus, device=args.device)
    history = model.fit(corpus, progress=False)
    seconds = time.perf_counter() - start
    vectors = model.vectors()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    vectors.save(args.out, binary=True)

    add, mul = evaluate_analogies(vectors, "3CosAdd"), evaluate_analogies(vectors, "3CosMul")
    ws, sl = evaluate_similarity(vectors, "wordsim353"), evaluate_similarity(vectors, "simlex999")
    report = {
        "config": dataclasses.asdict(cfg) | {"lr": cfg.initial_lr},  # the rate used, not None
        "corpus_words": corpus.raw_tokens, "kept_tokens": len(corpus),
        "vocab_size": corpus.vocab_size, "seconds": round(seconds, 1), "threads": args.threads,
        "history": history.metrics,
        "analogies": {r.method: {"accuracy": r.accuracy, "correct": r.correct, "covered": r.covered,
                                 "total": r.total, "sections": r.sections} for r in (add, mul)},
        "similarity": {r.dataset: {"spearman": r.spearman, "pearson": r.pearson, "covered": r.covered,
                                   "total": r.total} for r in (ws, sl)},
    }
    meta = args.out.with_suffix(".json")
    tmp = meta.with_name(meta.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1) + "\n")
    tmp.replace(meta)
    print(f"analogies 3CosAdd {add.accuracy:.3f} / 3CosMul {mul.accuracy:.3f} on {add.covered} of {add.total} "
          f"questions; WS-353 {ws.spearman:.3f}, SimLex-999 {sl.spearman:.3f}; "
          f"wrote {args.out} ({args.out.stat().st_size / 2**20:.1f} MiB) in {seconds:.0f} s")
    return report


if __name__ == "__main__":
    main()
