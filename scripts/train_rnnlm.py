"""Train the language models of the chapter "RNN language models" and save them.

``nlpcourse.models.rnnlm.RNNLM`` trained by truncated BPTT (``fit_lm``: Adam, global-norm clipping, the
learning rate halved after an epoch that did not lower validation perplexity) on a corpus of the protocol
(``nlpcourse.data.lm_corpus``: one stream, split 80/10/10 by position):

* ``--corpus austen`` (default): word level, 10,000 words + ``<unk>``; a 2-layer LSTM of 512 units with
  the class-based softmax (100 frequency classes, each word's output row also its embedding), dropout
  0.5, for 90 CPU-minutes (45 minutes on 2 cores; on a GPU, ``--device cuda --minutes M`` instead);
  writes ``data/checkpoints/rnnlm_austen.pt`` (``--classes 0``: the full softmax, tied);
* ``--finetune``, after it: the second stage of the chapter's word model, as AWD-LSTM's (Merity et al.,
  2018): from that checkpoint, 8 epochs of SGD (learning rate 10) with DropConnect on the recurrent
  matrices (``weight_drop`` 0.5), ending with the mean of the weights over all its windows (averaged
  SGD); overwrites the checkpoint, its first stage kept in ``extra["init"]``;
* ``--corpus shakespeare``: character level, the first 2 million characters, 3 epochs or 12 CPU-minutes;
  writes ``data/checkpoints/rnnlm_shakespeare.pt``.

Each checkpoint holds the weights as float16 (``load_checkpoint(path, build=rnnlm_from_config)`` gives a
float32 model), the config, and in ``extra`` the vocabulary (``itos``), the training history, the
validation and test perplexities and the hardware and time it took; a JSON beside it holds the same
numbers without the weights.

    python scripts/train_rnnlm.py && python scripts/train_rnnlm.py --finetune   # the chapter's word model
    python scripts/train_rnnlm.py --classes 0 --hidden 256 --dropout 0.3 --out ...  # full softmax, tied
    python scripts/train_rnnlm.py --corpus shakespeare             # the chapter's character model
    python scripts/train_rnnlm.py --tiny --out /tmp/lm.pt          # seconds, for tests
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import torch

import nlpcourse
from nlpcourse.data.lm_corpus import lm_corpus
from nlpcourse.errors import ConfigError
from nlpcourse.models.rnnlm import (
    RNNLM,
    LMTrainConfig,
    RNNLMConfig,
    build_rnnlm,
    config_summary,
    fit_lm,
    lm_perplexity,
    rnnlm_from_config,
)
from nlpcourse.models.softmax import frequency_classes

REPO = Path(__file__).resolve().parents[1]
CHECKPOINTS = REPO / "data" / "checkpoints"
STARTED = time.perf_counter()
CONTEXT = 200  # tokens of the preceding part that warm the state up before a part is scored


@dataclass
class TrainSettings:
    """Everything that decides the result (saved in the checkpoint and the JSON)."""

    corpus: str = "austen"  # "austen" (word level) or "shakespeare" (character level)
    cell: str = "lstm"  # elman | gru | lstm
    hidden: int = 256  # E = H (tied weights)
    layers: int = 2
    dropout: float = 0.3
    classes: int | None = None  # C frequency classes of a class-based softmax, its rows tied to the embeddings
    # (RNNLMConfig.word_classes, as benchmarks/rnnlm.py's lstm_class); None (--classes 0): the full softmax
    epochs: int = 10  # at most; the CPU budget usually ends training first
    minutes: float | None = None  # stop training after this many minutes (None: all epochs)
    cpu_minutes: float | None = None  # stop after this much CPU time of the process, all threads (None: no limit)
    batch_size: int = 32
    bptt: int = 35
    lr: float = 2e-3
    optimizer: str = "adam"  # "adam" or "sgd" (LMTrainConfig.optimizer)
    weight_drop: float = 0.0  # DropConnect on W_hh while training (RNNLMConfig.weight_drop)
    average: bool = False  # end with the mean of the weights over all windows (LMTrainConfig.average)
    init: str | None = None  # start from this checkpoint's model and weights (hidden, layers, classes ignored)
    max_chars: int | None = None  # characters of the corpus to read (None: all)
    seed: int = 0
    device: str = "cpu"
    threads: int = 2


PRESETS = {  # the chapter's two models
    "austen": TrainSettings(hidden=512, dropout=0.5, classes=100, epochs=100, cpu_minutes=90),  # 2 cores x 45 min
    "shakespeare": TrainSettings(corpus="shakespeare", hidden=256, layers=2, dropout=0.1, epochs=3, cpu_minutes=12,
                                 batch_size=32, bptt=64, max_chars=2_000_000),
}
FINETUNE = dict(optimizer="sgd", lr=10.0, weight_drop=0.5, average=True, epochs=8, cpu_minutes=None)


def parse(argv: list[str] | None) -> tuple[TrainSettings, Path]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--corpus", choices=tuple(PRESETS), default="austen")
    p.add_argument("--out", type=Path, default=None, help="checkpoint to write (default data/checkpoints/...)")
    for name in ("cell", "device"):
        p.add_argument(f"--{name}", default=None)
    for name in ("hidden", "layers", "classes", "epochs", "threads", "max_chars"):
        p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=int, default=None)
    p.add_argument("--dropout", type=float, default=None)
    p.add_argument("--minutes", type=float, default=None, help="wall-clock budget of the training")
    p.add_argument("--cpu-minutes", dest="cpu_minutes", type=float, default=None,
                   help="CPU-time budget of the training (all threads); 2 cores x 10 minutes = 20")
    p.add_argument("--tiny", action="store_true", help="seconds: a small model on 30,000 characters")
    p.add_argument("--finetune", action="store_true",
                   help="the second stage: averaged SGD with weight drop from the checkpoint at --out")
    args = p.parse_args(argv)
    cfg = PRESETS[args.corpus]
    out = args.out or CHECKPOINTS / f"rnnlm_{cfg.corpus}.pt"
    if args.finetune:
        cfg = dataclasses.replace(cfg, init=str(out), **FINETUNE)
    for name in ("cell", "device", "hidden", "layers", "classes", "dropout", "epochs", "threads", "max_chars",
                 "minutes", "cpu_minutes"):
        if getattr(args, name) is not None:
            cfg = dataclasses.replace(cfg, **{name: getattr(args, name)})
    if cfg.classes == 0:
        cfg = dataclasses.replace(cfg, classes=None)
    if cfg.device.startswith("cuda") and args.cpu_minutes is None:  # a CPU budget means nothing on a GPU
        cfg = dataclasses.replace(cfg, cpu_minutes=None)
    if args.tiny:
        cfg = dataclasses.replace(cfg, hidden=16, layers=1, epochs=1, max_chars=30_000, batch_size=8, bptt=20,
                                  threads=1)
    return cfg, out


def main(argv: list[str] | None = None) -> dict:
    cfg, out = parse(argv)
    torch.set_num_threads(cfg.threads)
    nlpcourse.seed_everything(cfg.seed)
    level = "word" if cfg.corpus == "austen" else "char"
    corpus = lm_corpus(cfg.corpus, level, 10_000 if level == "word" else None, cfg.max_chars)
    model, mcfg, init = _model(cfg, corpus)
    tcfg = LMTrainConfig(batch_size=cfg.batch_size, bptt=cfg.bptt, epochs=cfg.epochs, lr=cfg.lr,
                         optimizer=cfg.optimizer, average=cfg.average,
                         max_seconds=None if cfg.minutes is None else cfg.minutes * 60,
                         max_cpu_seconds=None if cfg.cpu_minutes is None else cfg.cpu_minutes * 60, seed=cfg.seed,
                         eval_tokens=None)
    hist = fit_lm(model, corpus.train, corpus.valid, tcfg, valid_context=corpus.context_before("valid", CONTEXT),
                  on_log=_progress)
    valid_ppl, test_ppl = (lm_perplexity(model, getattr(corpus, part), corpus.context_before(part, CONTEXT))
                           for part in ("valid", "test"))
    report = {"config": config_summary(dataclasses.asdict(mcfg)), "train_settings": dataclasses.asdict(cfg),
              "valid_ppl": valid_ppl, "test_ppl": test_ppl, "epochs_run": len(hist.valid_ppl),
              "train_tokens_seen": hist.tokens, "seconds": round(hist.seconds, 1),
              "cpu_seconds": round(hist.cpu_seconds, 1),
              "hardware": _hardware(cfg.device),
              "sizes": {"train": len(corpus.train), "valid": len(corpus.valid), "test": len(corpus.test)}}
    if init is not None:
        report["init"] = init
    nlpcourse.save_checkpoint(out, model.cpu().half(), mcfg, None,
                              extra={"itos": corpus.itos, "level": level, "history": hist.to_dict(),
                                     **{k: v for k, v in report.items() if k != "config"}})
    meta = out.with_suffix(".json")
    tmp = meta.with_name(meta.name + ".tmp")
    tmp.write_text(json.dumps(report, indent=1) + "\n")
    tmp.replace(meta)
    print(f"{cfg.corpus} {cfg.cell}: valid ppl {valid_ppl:.1f}, test ppl {test_ppl:.1f} after "
          f"{report['epochs_run']} epochs in {hist.seconds:.0f} s; wrote {out} ({out.stat().st_size / 2**20:.1f} MiB)")
    return report


def _model(cfg: TrainSettings, corpus) -> tuple[RNNLM, RNNLMConfig, dict | None]:
    """A fresh model from the settings, or (``init``) the checkpoint's model with the settings' dropout and
    weight drop; then also what the checkpoint says of its training (kept in the new one's report)."""
    if cfg.init is None:
        counts = torch.bincount(corpus.train, minlength=corpus.vocab_size)  # (V,) training counts
        classes = None if cfg.classes is None else frequency_classes(counts, cfg.classes).tolist()
        mcfg = RNNLMConfig(vocab_size=corpus.vocab_size, cell=cfg.cell, embed_dim=cfg.hidden,
                           hidden_dim=cfg.hidden, layers=cfg.layers, dropout=cfg.dropout, word_classes=classes,
                           weight_drop=cfg.weight_drop)
        return build_rnnlm(mcfg, seed=cfg.seed, device=cfg.device), mcfg, None
    stage = {"dropout": cfg.dropout, "weight_drop": cfg.weight_drop}
    ckpt = nlpcourse.load_checkpoint(cfg.init, build=lambda config: rnnlm_from_config(config | stage))
    if "init" in ckpt.extra or ckpt.extra.get("itos") != corpus.itos:
        raise ConfigError(f"train_rnnlm: {cfg.init} is not a first-stage model of this corpus (it was already "
                          "fine-tuned, or its vocabulary differs): train the first stage again")
    model, mcfg = ckpt.model, ckpt.model.config
    first = {k: ckpt.extra[k] for k in ("valid_ppl", "test_ppl", "epochs_run", "seconds", "cpu_seconds", "hardware",
                                         "history")}
    first["train_settings"] = dataclasses.asdict(TrainSettings(**ckpt.extra["train_settings"]))  # new keys filled
    return model.to(cfg.device), mcfg, first


def _progress(hist) -> None:
    epoch = f", valid ppl after each epoch {[round(p, 1) for p in hist.valid_ppl]}" if hist.valid_ppl else ""
    elapsed = time.perf_counter() - STARTED
    print(f"{elapsed:.0f} s, window {hist.steps[-1]}: train loss {hist.train_loss[-1]:.3f}{epoch}", flush=True)


def _hardware(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(0)
    return f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads"


if __name__ == "__main__":
    main()
