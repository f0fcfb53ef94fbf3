"""Train the pretraining chapter's ELMo-style biLM (``nlpcourse.models.elmo``) on the Brown corpus and save it.

A forward and a backward LSTM language model (2 layers of 128 units each way, sharing the word embedding
and output layer) over the lower-cased words of the training documents of the tagging split
(``nlpcourse.data.tagging``, by document, seed 0: the chapter's part-of-speech probes are trained and
tested on the same split), the 5,000 most frequent words and <unk>. Tags are never read. AdamW, batches of
64 sentences, one pass (the validation documents' loss is recorded). Writes ``data/checkpoints/elmo_brown.pt``
(weights as float16; ``load_checkpoint(path, build=bilm_from_config)``) with the vocabulary and history.

    python scripts/train_elmo.py                          # the chapter's model, about 15 minutes of 1 thread
    python scripts/train_elmo.py --tiny --out /tmp/e.pt   # seconds, for tests
"""
from __future__ import annotations

import argparse
import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path

import torch

import nlpcourse
from nlpcourse.data.batching import shuffled_batches
from nlpcourse.data.tagging import tagging_split
from nlpcourse.data.vocab import Vocab
from nlpcourse.models.elmo import BiLM, BiLMConfig
from nlpcourse.train import fit, mean_sequence_loss, save_checkpoint

REPO = Path(__file__).resolve().parents[1]


@dataclass
class ELMoTrainConfig:
    """What decides the result (saved in the checkpoint's extras)."""

    vocab: int = 5000  # most frequent training words kept (plus the 4 specials)
    hidden: int = 128  # H per direction
    layers: int = 2  # L per direction
    dropout: float = 0.1
    max_len: int = 60  # words per sentence, <bos> and <eos> included (longer ones are cut)
    batch: int = 64  # sentences per step
    lr: float = 2e-3  # AdamW
    epochs: int = 1  # passes over the training sentences
    patience: int = 1
    stride: int = 1  # every n-th sentence (the tiny run uses fewer)
    seed: int = 0


TINY = dict(vocab=200, hidden=16, epochs=1, stride=200)


def sentence_ids(vocab: Vocab, sentences, max_len: int) -> list[list[int]]:
    """<bos> words <eos> ids of tagged sentences (their words lower-cased, tags dropped)."""
    return [[vocab.bos_id, *vocab.encode([w.lower() for w, _ in s])[:max_len - 2], vocab.eos_id]
            for s in sentences]


def train(cfg: ELMoTrainConfig) -> tuple[BiLM, Vocab, dict]:
    split = tagging_split()
    train_s, valid_s = split.train[::cfg.stride], split.valid[::cfg.stride]
    vocab = Vocab.build(([w.lower() for w, _ in s] for s in train_s), max_size=cfg.vocab)
    train_ids, valid_ids = (sentence_ids(vocab, s, cfg.max_len) for s in (train_s, valid_s))
    nlpcourse.seed_everything(cfg.seed)
    model = BiLM(BiLMConfig(len(vocab), cfg.hidden, cfg.layers, cfg.dropout))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)
    start = time.perf_counter()
    history = fit(model, shuffled_batches(train_ids, cfg.batch, cfg.seed), lambda m, ids: m.loss(ids), opt, cfg.epochs,
                  evaluate=lambda m: {"val_loss": mean_sequence_loss(m.loss, valid_ids)},
                  monitor="val_loss", patience=cfg.patience, clip_norm=1.0, device="cpu")
    info = {"seconds": time.perf_counter() - start, "val_loss": min(history.metrics["val_loss"]),
            "history": history.metrics}
    return model.eval(), vocab, info


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=REPO / "data" / "checkpoints" / "elmo_brown.pt")
    p.add_argument("--tiny", action="store_true", help="a model of seconds, for tests")
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = ELMoTrainConfig(**(TINY if args.tiny else {}))
    model, vocab, info = train(cfg)
    save_checkpoint(args.out, model.half(), model.config, vocab,
                    extra={**info, "train_config": dataclasses.asdict(cfg)})
    print(f"validation loss {info['val_loss']:.3f} nats per word, {info['seconds']:.0f} s; wrote {args.out}")


if __name__ == "__main__":
    main()
