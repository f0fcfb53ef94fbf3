"""Train the CNN review classifier of the chapter "CNN text classifiers" (Kim 2014) and save it.

``nlpcourse.models.cnn.KimCNN`` with Kim's settings (widths 3,4,5 x 100 maps, dropout 0.5, max-norm 3,
batches of 50), Adam (lr 1e-3), early-stopped on validation accuracy, on the seeded split by movie
(80/10/10, split seed 0, the chapter's and ``benchmarks/cnn.py``'s). The pretrained variants start from
100-d skip-gram vectors trained by the course's word2vec on the Brown corpus plus the training split's
snippets ("domain", the default) or from the word2vec chapter's vectors ("chapter"). Writes

* ``data/checkpoints/cnn.pt``: weights stored as float16 (``load_checkpoint(path, build=build_kim_cnn)``
  gives a float32 model), config, vocabulary (the training split's words only) and extras (history,
  accuracies, train config);
* ``data/checkpoints/cnn.json`` beside it: config, accuracies, coverage, seconds.

    python scripts/train_cnn.py                              # the chapter's model, a few minutes on 2 cores
    python scripts/train_cnn.py --tiny --out /tmp/cnn.pt     # seconds, for tests
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path

import torch

import nlpcourse
from nlpcourse.data import load_reviews, split_indices, word_tokenize
from nlpcourse.models.cnn import (
    CNNTrainSettings,
    KimCNN,
    KimCNNConfig,
    domain_vectors,
    evaluate_cnn,
    labelled_batches,
    pretrained_embeddings,
    train_kim_cnn,
    training_vocab,
)
from nlpcourse.vectors import WordVectors

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "data" / "checkpoints" / "cnn.pt"
CHAPTER_VECTORS = REPO / "data" / "checkpoints" / "word2vec_sg.bin"


@dataclass
class TrainConfig:
    """Everything that decides the result (saved as ``extra["train_config"]`` and in the JSON)."""

    variant: str = "nonstatic"  # rand | static | nonstatic | multichannel
    vectors: str = "domain"  # "domain" (Brown + training snippets) or "chapter" (word2vec_sg.bin)
    epochs: int = 12  # at most this many epochs; early stopping usually ends sooner
    patience: int = 2  # epochs without a higher validation accuracy before stopping
    seed: int = 0  # model initialisation, batch order, word2vec
    split_seed: int = 0  # the split by movie; the chapter uses 0 as well
    review_stride: int = 1  # use every n-th snippet (--tiny: fewer)
    brown_tokens: int | None = None  # limit the Brown corpus of the domain vectors (None: all)
    w2v_epochs: int = 5  # epochs of the domain word2vec
    maps: int = 100  # feature maps per width
    device: str = "cpu"
    threads: int = 1  # PyTorch threads: on 2 shared cores 2 threads ran many times slower than 1


def parse(argv: list[str] | None) -> tuple[TrainConfig, Path]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"checkpoint to write (default {DEFAULT_OUT})")
    p.add_argument("--variant", choices=("rand", "static", "nonstatic", "multichannel"), default=None)
    p.add_argument("--vectors", choices=("domain", "chapter"), default=None)
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--device", default=None, help="cpu (default), cuda or mps")
    p.add_argument("--tiny", action="store_true", help="seconds: 1/16 of the snippets, 2 epochs, small vectors corpus")
    args = p.parse_args(argv)
    cfg = TrainConfig()
    for name in ("variant", "vectors", "epochs", "device"):
        if getattr(args, name) is not None:
            cfg = dataclasses.replace(cfg, **{name: getattr(args, name)})
    if args.tiny:
        cfg = dataclasses.replace(cfg, review_stride=16, epochs=min(cfg.epochs, 2), brown_tokens=30_000,
                                  w2v_epochs=1, maps=10)
    return cfg, args.out


def main(argv: list[str] | None = None) -> dict:
    cfg, out = parse(argv)
    torch.set_num_threads(cfg.threads)
    start = time.perf_counter()
    reviews = load_reviews()[:: cfg.review_stride]
    tokens = [word_tokenize(r.text) for r in reviews]
    labels = torch.tensor([r.label for r in reviews])
    parts = split_indices(len(reviews), (0.8, 0.1, 0.1), seed=cfg.split_seed, groups=[r.movie for r in reviews])
    train_tokens = [tokens[i] for i in parts[0]]
    if cfg.vectors == "domain":
        wv = domain_vectors(train_tokens, cfg.brown_tokens, cfg.w2v_epochs, cfg.seed, cfg.device)
    else:
        wv = WordVectors.load(CHAPTER_VECTORS)
    vocab = training_vocab(train_tokens, wv)
    emb = pretrained_embeddings(vocab, wv, seed=cfg.seed)
    ids = [[vocab.encode(tokens[i]) for i in part] for part in parts]
    ys = [labels[torch.tensor(part)] for part in parts]

    nlpcourse.seed_everything(cfg.seed)
    mcfg = KimCNNConfig(vocab_size=len(vocab), embed_dim=wv.dim, maps=cfg.maps, variant=cfg.variant)
    model = KimCNN(mcfg, None if cfg.variant == "rand" else emb.weight)
    settings = CNNTrainSettings(epochs=cfg.epochs, patience=cfg.patience, seed=cfg.seed)
    hist = train_kim_cnn(model, (ids[0], ys[0]), (ids[1], ys[1]), settings, cfg.device)
    val, test = (evaluate_cnn(model, labelled_batches(ids[k], ys[k], 500, shuffle=False)) for k in (1, 2))
    seconds = time.perf_counter() - start
    report = {"config": dataclasses.asdict(mcfg), "train_config": dataclasses.asdict(cfg),
              "val_acc": val["acc"], "test_acc": test["acc"], "test_loss": test["loss"],
              "best_epoch": (hist.best_epoch or 0) + 1, "epochs_run": hist.epochs,
              "coverage": {"covered": emb.covered, "vocab_words": emb.total, "fraction": emb.coverage},
              "n_train": len(ids[0]), "n_val": len(ids[1]), "n_test": len(ids[2]), "seconds": round(seconds, 1)}
    nlpcourse.save_checkpoint(out, model.cpu().half(), mcfg, vocab,
                              extra={"history": hist.to_dict(), **{k: v for k, v in report.items() if k != "config"}})
    meta = out.with_suffix(".json")
    tmp = meta.with_name(meta.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1) + "\n")
    tmp.replace(meta)
    print(f"{cfg.variant} ({cfg.vectors} vectors, coverage {emb.coverage:.3f}): val acc {val['acc']:.4f}, "
          f"test acc {test['acc']:.4f}, best epoch {report['best_epoch']}/{hist.epochs}; wrote {out} "
          f"({out.stat().st_size / 2**20:.1f} MiB) in {seconds:.0f} s")
    return report


if __name__ == "__main__":
    main()
