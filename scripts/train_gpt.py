"""Train the pretraining chapter's small GPT (``nlpcourse.models.gpt``) on the movie-review snippets and save it.

A causal language model of the snippets of the training part of the CNN chapter's split (by movie, seed 0),
in the pretrained BERT's WordPiece pieces (``data/checkpoints/bert.pt``), each snippet ``[CLS] pieces
[SEP]``: [CLS] starts a snippet and [SEP] ends it, so the model learns where snippets end. AdamW, batches of
64 snippets, early stopping on the validation part's loss. Writes ``data/checkpoints/gpt_reviews.pt``
(weights as float16; ``load_checkpoint(path, build=gpt_from_config)``), the vocabulary and the history in
its extras.

    python scripts/train_gpt.py                          # the chapter's model, about 20 minutes of 1 thread
    python scripts/train_gpt.py --tiny --out /tmp/g.pt   # seconds, for tests
"""
from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import torch

import nlpcourse
from nlpcourse.data import load_reviews, split_indices
from nlpcourse.data.batching import shuffled_batches
from nlpcourse.data.wordpiece import WordPieces
from nlpcourse.models.bert import bert_from_config
from nlpcourse.models.gpt import GPT, GPTConfig, gpt_loss
from nlpcourse.train import fit, mean_sequence_loss, save_checkpoint

REPO = Path(__file__).resolve().parents[1]
BERT = REPO / "data" / "checkpoints" / "bert.pt"


@dataclass
class GPTTrainConfig:
    """What decides the result (saved in the checkpoint's extras)."""

    d_model: int = 128  # D
    heads: int = 4  # H
    layers: int = 4  # L
    d_ff: int = 512  # F
    max_len: int = 64  # pieces per snippet, [CLS] and [SEP] included
    dropout: float = 0.1
    batch: int = 64  # snippets per step
    lr: float = 1e-3  # AdamW
    epochs: int = 8  # at most; early stopping on the validation loss
    patience: int = 2
    stride: int = 1  # every n-th snippet (the tiny run uses fewer)
    seed: int = 0


TINY = dict(d_model=32, heads=2, layers=1, d_ff=64, epochs=2, stride=32)


def snippet_ids(wp: WordPieces, stride: int, max_len: int) -> list[list[list[int]]]:
    """The training and validation parts' snippets as [CLS] pieces [SEP] id lists."""
    reviews = load_reviews()[::stride]
    parts = split_indices(len(reviews), (0.8, 0.1, 0.1), seed=0, groups=[r.movie for r in reviews])[:2]
    return [[wp.pair(reviews[i].text, max_len=max_len).ids for i in part] for part in parts]


def train(cfg: GPTTrainConfig, bert_path: Path) -> tuple[GPT, WordPieces, dict]:
    wp = WordPieces.from_json(nlpcourse.load_checkpoint(bert_path, build=bert_from_config).extra["tokenizer"])
    train_ids, valid_ids = snippet_ids(wp, cfg.stride, cfg.max_len)
    nlpcourse.seed_everything(cfg.seed)
    model = GPT(GPTConfig(wp.vocab_size, cfg.d_model, cfg.heads, cfg.layers, cfg.d_ff, cfg.max_len, cfg.dropout))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    start = time.perf_counter()
    history = fit(model, shuffled_batches(train_ids, cfg.batch, cfg.seed), gpt_loss, opt, cfg.epochs,
                  evaluate=lambda m: {"val_loss": mean_sequence_loss(lambda ids: gpt_loss(m, ids), valid_ids)},
                  monitor="val_loss", patience=cfg.patience, clip_norm=1.0, device="cpu")
    info = {"seconds": time.perf_counter() - start, "val_loss": min(history.metrics["val_loss"]),
            "history": history.metrics}
    return model.eval(), wp, info


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=REPO / "data" / "checkpoints" / "gpt_reviews.pt")
    p.add_argument("--bert", type=Path, default=BERT, help="the checkpoint whose WordPiece vocabulary to use")
    p.add_argument("--tiny", action="store_true", help="a model of seconds, for tests")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = GPTTrainConfig(**(TINY if args.tiny else {}))
    model, wp, info = train(cfg, args.bert)
    save_checkpoint(args.out, model.half(), model.config, extra={"tokenizer": wp.to_json(), **info,
                                                                 "train_config": dataclasses.asdict(cfg)})
    print(f"validation loss {info['val_loss']:.3f} nats per piece, {info['seconds']:.0f} s; wrote {args.out}")


if __name__ == "__main__":
    main()
