"""Train the word vectors of the chapter "word2vec" on the bundled corpora and save them.

Skip-gram with negative sampling (the course trainer, ``nlpcourse.models.word2vec``) on Austen,
Shakespeare and the King James Bible (about 2.4 million words), with the defaults of the C tool and
gensim: 100 dimensions, window 5, 5 negatives, 5 epochs, min_count 5. Writes

* ``data/checkpoints/word2vec_sg.bin``: the vectors in the word2vec binary format, most frequent word
  first (``nlpcourse.vectors.WordVectors.load``, or gensim's ``KeyedVectors.load_word2vec_format(path,
  binary=True)``); the CNN chapter initialises its embeddings from them;
* ``data/checkpoints/word2vec_sg.json``: the config, the training curve, the evaluation and the time
  (the runs since CBOW's also the median lengths of the input and of the output vectors).

With ``--architecture cbow`` it trains CBOW instead, with the C tool's update of the context vectors
(``--cbow-update tool``, the default) or the exact gradient (``--cbow-update exact``), into
``word2vec_cbow.bin`` or ``word2vec_cbow_exact.bin`` (and their JSON): the chapter compares the two.

    python scripts/train_word2vec.py                       # about 35 s on 2 CPU cores
    python scripts/train_word2vec.py --architecture cbow --cbow-update exact   # about a minute
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
CHECKPOINTS = REPO / "data" / "checkpoints"
#: Where each (architecture, CBOW update) writes by default.
DEFAULT_OUT = {("skipgram", "tool"): CHECKPOINTS / "word2vec_sg.bin",
               ("cbow", "tool"): CHECKPOINTS / "word2vec_cbow.bin",
               ("cbow", "exact"): CHECKPOINTS / "word2vec_cbow_exact.bin"}


def median_lengths(model: Word2Vec) -> dict[str, float]:
    """The median length of the input vectors (without the padding row) and of the output vectors."""
    return {"input": model.W_in[:-1].norm(dim=1).median().item(),  # (V+1,D) -> (V,) -> ()
            "output": model.W_out.norm(dim=1).median().item()}  # (V,D) -> (V,) -> ()


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, help="vectors to write (default data/checkpoints/word2vec_sg.bin, "
                   "word2vec_cbow.bin or word2vec_cbow_exact.bin)")
    p.add_argument("--architecture", choices=("skipgram", "cbow"), default="skipgram")
    p.add_argument("--cbow-update", choices=("tool", "exact"), default="tool",
                   help="CBOW only: the C tool's update of the context vectors (default) or the exact gradient")
    p.add_argument("--epochs", type=int, default=None, help="passes over the corpus (default 5)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu (default), cuda or mps")
    p.add_argument("--threads", type=int, default=2, help="CPU threads for PyTorch (default 2)")
    p.add_argument("--tiny", action="store_true", help="50k words, 16 dimensions, one epoch: seconds (tests)")
    args = p.parse_args(argv)
    if args.cbow_update == "exact" and args.architecture != "cbow":
        p.error("--cbow-update exact is for --architecture cbow")
    out = args.out or DEFAULT_OUT[args.architecture, args.cbow_update]

    torch.set_num_threads(args.threads)
    cfg = Word2VecConfig(architecture=args.architecture, seed=args.seed, cbow_update=args.cbow_update)
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
    out.parent.mkdir(parents=True, exist_ok=True)
    vectors.save(out, binary=True)

    add, mul = evaluate_analogies(vectors, "3CosAdd"), evaluate_analogies(vectors, "3CosMul")
    ws, sl = evaluate_similarity(vectors, "wordsim353"), evaluate_similarity(vectors, "simlex999")
    report = {
        "config": dataclasses.asdict(cfg) | {"lr": cfg.initial_lr},  # the rate used, not None
        "corpus_words": corpus.raw_tokens, "kept_tokens": len(corpus),
        "vocab_size": corpus.vocab_size, "seconds": round(seconds, 1), "threads": args.threads,
        "history": history.metrics, "median_length": median_lengths(model),
        "analogies": {r.method: {"accuracy": r.accuracy, "correct": r.correct, "covered": r.covered,
                                 "total": r.total, "sections": r.sections} for r in (add, mul)},
        "similarity": {r.dataset: {"spearman": r.spearman, "pearson": r.pearson, "covered": r.covered,
                                   "total": r.total} for r in (ws, sl)},
    }
    meta = out.with_suffix(".json")
    tmp = meta.with_name(meta.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1) + "\n")
    tmp.replace(meta)
    print(f"analogies 3CosAdd {add.accuracy:.3f} / 3CosMul {mul.accuracy:.3f} on {add.covered} of {add.total} "
          f"questions; WS-353 {ws.spearman:.3f}, SimLex-999 {sl.spearman:.3f}; "
          f"wrote {out} ({out.stat().st_size / 2**20:.1f} MiB) in {seconds:.0f} s")
    return report


if __name__ == "__main__":
    main()
