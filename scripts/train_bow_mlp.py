"""Train the bag-of-words MLP review classifier of the chapter "Neural building blocks".

A small sweep over dropout rates, each run with early stopping on the validation loss; the run with
the best validation accuracy is evaluated once on the test split and saved, with its vocabulary,
config, training history and the sweep's results, as a checkpoint the chapter loads.

    python scripts/train_bow_mlp.py                          # full run -> data/checkpoints/bow_mlp.pt
    python scripts/train_bow_mlp.py --tiny --out /tmp/x.pt   # seconds: a few hundred reviews, for tests

The split is by movie (no movie in two splits) with split seed 0, the same as in the chapter, so the
chapter can evaluate the checkpoint on the same test reviews.
"""
from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F

import nlpcourse
from nlpcourse.data import Vocab, load_reviews, split_indices, word_tokenize
from nlpcourse.models.bow_mlp import BowMLP, BowMLPConfig, bag_of_words

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "data" / "checkpoints" / "bow_mlp.pt"


@dataclass
class TrainConfig:
    """Everything that decides the result of a run (saved in the checkpoint as ``extra["train_config"]``)."""

    vocab_size: int = 5000  # words kept (most frequent in the training split first), specials not counted
    min_freq: int = 2  # a word must occur at least this often in the training split to be kept
    hidden: int = 64  # H: hidden units of the MLP
    activation: str = "relu"  # non-linearity of the hidden layer
    dropouts: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6, 0.8)  # the sweep: one run per dropout rate
    lr: float = 3e-4  # Adam learning rate
    batch_size: int = 64  # reviews per mini-batch
    epochs: int = 40  # at most this many epochs per run; early stopping usually ends a run sooner
    patience: int = 3  # stop a run after this many epochs without a lower validation loss
    seed: int = 0  # seeds the weight initialisation and the order of the batches
    split_seed: int = 0  # seeds the train/val/test split by movie; the chapter uses 0 as well
    review_stride: int = 1  # use every n-th review only (1 = all of them; --tiny uses fewer)
    device: str = field(default="cpu")  # where to train: cpu, cuda, mps (the model is small; cpu is fine)
    threads: int = 1  # CPU threads for PyTorch: more do not speed up a model this small, and they
    #                   slow it down badly when other processes compete for the cores


def tiny_config(cfg: TrainConfig) -> TrainConfig:
    """A seconds-long version of ``cfg`` for tests: ~400 reviews, a small model, two sweep points."""
    return dataclasses.replace(cfg, vocab_size=300, hidden=8, dropouts=(0.0, 0.5), epochs=min(cfg.epochs, 3),
                               review_stride=32)


def make_batches(X: torch.Tensor, y: torch.Tensor, batch_size: int, seed: int):
    """``epoch -> iterator of (x (B,V), y (B,))``, reshuffled deterministically every epoch."""

    def for_epoch(epoch: int):
        g = torch.Generator().manual_seed(seed * 100_003 + epoch)
        perm = torch.randperm(len(y), generator=g)
        return ((X[idx], y[idx]) for idx in perm.split(batch_size))  # a generator: one batch in memory at a time

    return for_epoch


def loss_fn(model: BowMLP, batch) -> torch.Tensor:
    x, y = batch
    return F.cross_entropy(model(x), y)  # softmax cross-entropy, mean over the batch


def metrics(model: BowMLP, X: torch.Tensor, y: torch.Tensor, prefix: str) -> dict[str, float]:
    logits = model(X.to(next(model.parameters()).device)).cpu()  # (N,V) -> (N,K)
    return {f"{prefix}_loss": F.cross_entropy(logits, y).item(),
            f"{prefix}_acc": (logits.argmax(-1) == y).float().mean().item()}


def main(argv: list[str] | None = None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"checkpoint to write (default {DEFAULT_OUT})")
    p.add_argument("--tiny", action="store_true", help="a seconds-long run on a few hundred reviews (tests)")
    p.add_argument("--epochs", type=int, default=None, help="maximum epochs per run (default 40)")
    p.add_argument("--seed", type=int, default=None, help="seed of the initialisation and batch order (default 0)")
    p.add_argument("--device", default=None, help="cpu (default), cuda or mps")
    p.add_argument("--quiet", action="store_true", help="print only the final summary")
    args = p.parse_args(argv)

    cfg = TrainConfig()
    if args.epochs is not None:
        cfg = dataclasses.replace(cfg, epochs=args.epochs)
    if args.seed is not None:
        cfg = dataclasses.replace(cfg, seed=args.seed)
    if args.device is not None:
        cfg = dataclasses.replace(cfg, device=args.device)
    if args.tiny:
        cfg = tiny_config(cfg)
    say = (lambda *a: None) if args.quiet else print
    torch.set_num_threads(cfg.threads)
    start = time.perf_counter()

    # ---- data: tokenise, split by movie, vocabulary from the training split only, bag-of-words rows
    nlpcourse.seed_everything(cfg.seed)
    reviews = load_reviews()[:: cfg.review_stride]
    tokens = [word_tokenize(r.text) for r in reviews]
    labels = torch.tensor([r.label for r in reviews])  # (N,) 1 fresh, 0 rotten
    train_idx, val_idx, test_idx = split_indices(len(reviews), (0.8, 0.1, 0.1), seed=cfg.split_seed,
                                                 groups=[r.movie for r in reviews])
    vocab = Vocab.build([tokens[i] for i in train_idx], min_freq=cfg.min_freq, max_size=cfg.vocab_size)
    X = bag_of_words([vocab.encode(t) for t in tokens], len(vocab))  # (N,V)
    (Xtr, ytr), (Xva, yva), (Xte, yte) = [(X[idx], labels[idx]) for idx in (train_idx, val_idx, test_idx)]
    say(f"reviews: train {len(ytr)}, val {len(yva)}, test {len(yte)}; vocabulary {len(vocab)}")

    # ---- the sweep: one early-stopped run per dropout rate
    sweep, best = [], None
    for p_drop in cfg.dropouts:
        nlpcourse.seed_everything(cfg.seed)
        mcfg = BowMLPConfig(vocab_size=len(vocab), hidden=cfg.hidden, n_classes=2, dropout=p_drop,
                            activation=cfg.activation)
        model = BowMLP(mcfg)
        opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
        hist = nlpcourse.fit(
            model, make_batches(Xtr, ytr, cfg.batch_size, cfg.seed), loss_fn, opt, cfg.epochs,
            evaluate=lambda m: metrics(m, Xva, yva, "val"), monitor="val_loss", patience=cfg.patience,
            device=cfg.device, progress=False,
        )  # the best epoch's weights are restored at the end
        model.cpu().eval()
        with torch.no_grad():
            val = metrics(model, Xva, yva, "val")
        run = {"dropout": p_drop, "best_epoch": hist.best_epoch, "epochs_run": hist.epochs,
               "val_loss": val["val_loss"], "val_acc": val["val_acc"], "history": hist.to_dict()}
        sweep.append(run)
        say(f"dropout {p_drop:.2f}: best epoch {hist.best_epoch + 1}/{hist.epochs}, "
            f"val loss {val['val_loss']:.4f}, val acc {val['val_acc']:.4f}")
        if best is None or (val["val_acc"], -val["val_loss"]) > (best[0]["val_acc"], -best[0]["val_loss"]):
            best = (run, model, mcfg, hist)

    # ---- the chosen run: evaluated once on the test split, then saved
    run, model, mcfg, hist = best
    with torch.no_grad():
        test = metrics(model, Xte, yte, "test")
    summary = {"dropout": run["dropout"], "val_acc": run["val_acc"], "test_acc": test["test_acc"],
               "test_loss": test["test_loss"], "seconds": round(time.perf_counter() - start, 1)}
    nlpcourse.save_checkpoint(
        args.out, model, mcfg, vocab,
        extra={"history": hist.to_dict(), "test_acc": test["test_acc"], "test_loss": test["test_loss"],
               "val_acc": run["val_acc"], "sweep": sweep, "train_config": dataclasses.asdict(cfg),
               "n_train": len(ytr), "n_val": len(yva), "n_test": len(yte)},
    )
    size_kb = args.out.stat().st_size / 1024
    print(f"chosen dropout {run['dropout']:.2f}: val acc {run['val_acc']:.4f}, test acc {test['test_acc']:.4f}; "
          f"wrote {args.out} ({size_kb:.0f} KiB) in {summary['seconds']:.1f} s")
    return summary


if __name__ == "__main__":
    main()
