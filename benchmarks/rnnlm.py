"""Language models on Austen under one protocol: n-gram models against neural ones, and PyTorch's fused LSTM
and GRU against cells written out step by step.

Protocol (``nlpcourse.data.lm_corpus``): Austen's six novels as one stream of lower-cased a-z words, split by
position (first 80% train, next 10% validation, last 10% test); vocabulary = the 10,000 most frequent
training words + ``<unk>``; perplexity over ALL test tokens (``<unk>`` included), each predicted with the
full preceding context (the state is warmed up on the 200 tokens before the part; the n-gram models and the
feed-forward LM read their last n-1 of them).

Systems (names as in the JSON):

* ``unigram``: maximum likelihood unigram (``nlpcourse.ngram.MLE(1)``);
* ``kn3``, ``kn5``: interpolated modified Kneser-Ney, 3- and 5-gram (``nlpcourse.ngram.KneserNey``);
* ``ffnn``: Bengio et al.'s (2003) feed-forward LM over the 4 previous words (``nlpcourse.models.ffnn_lm``);
* ``elman``, ``gru``, ``lstm``: ``nlpcourse.models.rnnlm.RNNLM``, 2 layers of 256 units, tied embeddings,
  dropout 0.2, truncated BPTT over windows of 35, Adam (lr 2e-3), global-norm clipping at 0.25;
* ``lstm_checkpoint``: the chapter's LSTM (``data/checkpoints/rnnlm_austen.pt``), scored here (float16
  weights); its ``wall_s``, hardware and ``trained_by`` are from the checkpoint: ``scripts/train_rnnlm.py``
  trains a longer one, or it is a run's own ``lstm`` saved with ``--save-lstm``.

Every neural system trains until it has used ``--minutes`` x ``--threads`` CPU-minutes (default 10 x 2:
the issue's "10 CPU-minutes on 2 cores"), counted as the CPU time of the process (all its threads, the
validation after each epoch included), one system after the other. A CPU budget, unlike a wall-clock one,
is the same whether or not other work shares the machine; ``wall_s`` and ``cpu_s`` record both.
``speed`` holds training throughput (forward + backward, tokens per second) of ``nn.LSTM`` and ``nn.GRU``
against the cells of ``nlpcourse.models.lstm_cells`` looped over time in Python (``CoupledPeepholeLSTM``, the
chapter's hand-written LSTM, and ``LoopGRU``, ``nn.GRU``'s equations), on the device.

Targets: ``lstm`` beats ``kn5`` within the budget (ratio ``lstm / kn5`` below 1); ``lstm_checkpoint`` at most
0.7x ``kn5``.

    python benchmarks/rnnlm.py --json benchmarks/results/rnnlm.json     # the full run, about 45 minutes
    python benchmarks/rnnlm.py --tiny                                   # seconds: a smoke run (tests)
    python benchmarks/rnnlm.py --systems gru,elman --minutes 5 --json /tmp/rest.json   # a part of it ...
    python benchmarks/rnnlm.py --systems lstm_checkpoint --merge --include /tmp/rest.json --json FILE
                                                            # ... merged into FILE, each with its budget

``--json FILE`` writes ``{"systems": {NAME: {"test_ppl", "valid_ppl", "wall_s", ...}}, "speed": {...},
"targets": {...}, "setup": {...}}`` (after every system, so a cut run keeps what it measured).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

import nlpcourse
from nlpcourse.data.lm_corpus import LMCorpus, lm_corpus
from nlpcourse.models.ffnn_lm import FFNNLM, FFNNLMConfig, ffnn_log_probs, fit_ffnn
from nlpcourse.models.lstm_cells import CoupledPeepholeLSTM, LoopGRU
from nlpcourse.models.rnnlm import (
    LMHistory,
    LMTrainConfig,
    RNNLMConfig,
    build_rnnlm,
    fit_lm,
    lm_perplexity,
    perplexity_of,
    rnnlm_from_config,
)
from nlpcourse.ngram import MLE, KneserNey
from nlpcourse.report import write_json

REPO = Path(__file__).resolve().parents[1]
CHECKPOINT = REPO / "data" / "checkpoints" / "rnnlm_austen.pt"
CONTEXT = 200  # tokens before a part that its first tokens are predicted with
NGRAMS = {"unigram": lambda: MLE(1), "kn3": lambda: KneserNey(3), "kn5": lambda: KneserNey(5)}
RNNS = ("elman", "gru", "lstm")
DROPOUT = 0.2  # for a budget of 2-3 epochs; the longer-trained checkpoint uses 0.3


def run_ngram(name: str, corpus: LMCorpus) -> dict:
    start = time.perf_counter()
    model = NGRAMS[name]().fit(corpus.train, corpus.vocab_size)
    ppl = {part: model.perplexity(getattr(corpus, part), corpus.context_before(part, CONTEXT))
           for part in ("valid", "test")}
    return {"test_ppl": ppl["test"], "valid_ppl": ppl["valid"], "wall_s": round(time.perf_counter() - start, 1)}


def run_rnn(cell: str, corpus: LMCorpus, opts: argparse.Namespace) -> dict:
    cfg = RNNLMConfig(vocab_size=corpus.vocab_size, cell=cell, embed_dim=opts.hidden, hidden_dim=opts.hidden,
                      layers=2, dropout=DROPOUT)
    model = build_rnnlm(cfg, seed=0, device=opts.device)
    tcfg = LMTrainConfig(epochs=opts.max_epochs, max_cpu_seconds=opts.minutes * 60 * opts.threads,
                         eval_tokens=None, max_steps=opts.max_steps)
    hist = fit_lm(model, corpus.train, corpus.valid, tcfg, valid_context=corpus.context_before("valid", CONTEXT))
    result = _scored(model, corpus, hist, lm_perplexity, tcfg.max_cpu_seconds)
    if cell == "lstm" and opts.save_lstm is not None:
        save_lstm(opts.save_lstm, model, cfg, corpus, hist, result, opts.threads)
    return result


def save_lstm(path: Path, model: nn.Module, cfg: RNNLMConfig, corpus: LMCorpus, hist: LMHistory, result: dict,
              threads: int) -> None:
    """The trained lstm as a checkpoint in the format of ``scripts/train_rnnlm.py`` (and its JSON beside it)."""
    report = {"config": dataclasses.asdict(cfg), "valid_ppl": result["valid_ppl"], "test_ppl": result["test_ppl"],
              "epochs_run": result["epochs"], "train_tokens_seen": hist.tokens, "seconds": result["wall_s"],
              "cpu_seconds": result["cpu_s"], "hardware": f"{platform.machine()}, {threads} threads",
              "trained_by": "benchmarks/rnnlm.py --save-lstm (its lstm system)"}
    nlpcourse.save_checkpoint(path, model.cpu().half(), cfg, None, extra={
        "itos": corpus.itos, "level": "word", "history": hist.to_dict(),
        **{k: v for k, v in report.items() if k != "config"}})
    write_json(path.with_suffix(".json"), report)


def run_ffnn(corpus: LMCorpus, opts: argparse.Namespace) -> dict:
    torch.manual_seed(0)
    model = FFNNLM(FFNNLMConfig(vocab_size=corpus.vocab_size, context=4, embed_dim=128,
                                hidden_dim=opts.hidden * 2)).to(opts.device)
    hist = fit_ffnn(model, corpus.train, corpus.valid, corpus.context_before("valid", CONTEXT),
                    epochs=opts.max_epochs, max_cpu_seconds=opts.minutes * 60 * opts.threads)
    return _scored(model, corpus, hist, lambda m, ids, ctx: perplexity_of(ffnn_log_probs(m, ids, ctx)),
                   opts.minutes * 60 * opts.threads)


def _scored(model: nn.Module, corpus: LMCorpus, hist: LMHistory, score: Callable, budget_s: float) -> dict:
    ppl = {part: score(model, getattr(corpus, part), corpus.context_before(part, CONTEXT))
           for part in ("valid", "test")}
    return {"test_ppl": ppl["test"], "valid_ppl": ppl["valid"], "wall_s": round(hist.seconds, 1),
            "cpu_s": round(hist.cpu_seconds, 1), "cpu_budget_s": budget_s, "train_tokens_seen": hist.tokens,
            "epochs": round(hist.tokens / len(corpus.train), 2), "valid_ppl_per_epoch": hist.valid_ppl}


def run_checkpoint(corpus: LMCorpus, device: str) -> dict | None:
    if not CHECKPOINT.is_file():
        return None
    ckpt = nlpcourse.load_checkpoint(CHECKPOINT, build=rnnlm_from_config, device=device)
    model = ckpt.model.float()
    if ckpt.extra["itos"] != corpus.itos:
        raise nlpcourse.errors.DataError(f"{CHECKPOINT}: its vocabulary is not this corpus's; retrain it")
    ppl = {part: lm_perplexity(model, getattr(corpus, part), corpus.context_before(part, CONTEXT))
           for part in ("valid", "test")}
    return {"test_ppl": ppl["test"], "valid_ppl": ppl["valid"], "wall_s": ckpt.extra["seconds"],
            "hardware": ckpt.extra["hardware"], "epochs": ckpt.extra["epochs_run"],
            "trained_by": ckpt.extra.get("trained_by", "scripts/train_rnnlm.py"), "config": ckpt.config}


def loop_speed(device: str, hidden: int, seconds: float = 5.0) -> dict:
    """Training tokens per second (forward + backward of one layer, windows of 32 x 35) of PyTorch's fused
    ``nn.LSTM`` and ``nn.GRU`` against cells looped over time in Python: ``LoopGRU`` (the same equations as
    ``nn.GRU``, its weights) and ``CoupledPeepholeLSTM`` (the hand-written LSTM of the chapter)."""
    torch.manual_seed(0)
    gru = nn.GRU(hidden, hidden, batch_first=True).to(device)
    loop_gru = LoopGRU(hidden, hidden).to(device)
    loop_gru.load_state_dict(gru.state_dict())
    layers = {"nn_lstm": nn.LSTM(hidden, hidden, batch_first=True).to(device),
              "loop_lstm": CoupledPeepholeLSTM(hidden, hidden).to(device), "nn_gru": gru, "loop_gru": loop_gru}
    x = torch.randn(32, 35, hidden, device=device)  # (B,T,H): one window of the benchmark's batches
    out = {f"{name}_tokens_per_s": _tokens_per_second(layer, x, device, seconds) for name, layer in layers.items()}
    out["lstm_speedup"] = round(out["nn_lstm_tokens_per_s"] / out["loop_lstm_tokens_per_s"], 2)
    out["gru_speedup"] = round(out["nn_gru_tokens_per_s"] / out["loop_gru_tokens_per_s"], 2)
    out["loop_lstm"] = "CoupledPeepholeLSTM"
    return out


def _tokens_per_second(layer: nn.Module, x: torch.Tensor, device: str, seconds: float) -> int:
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        layer(x)[0].sum().backward()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        n += x.shape[0] * x.shape[1]
    return round(n / (time.perf_counter() - start))


def targets(systems: dict) -> dict:
    kn5 = systems.get("kn5", {}).get("test_ppl")
    out = {}
    for name, bar in (("lstm", 1.0), ("lstm_checkpoint", 0.7)):
        if kn5 and name in systems:
            ratio = systems[name]["test_ppl"] / kn5
            out[f"{name}_over_kn5"] = {"ratio": round(ratio, 3), "target": bar, "met": ratio < bar if bar == 1.0
                                       else ratio <= bar}
    return out


def main(argv: list[str] | None = None) -> dict:
    opts = parse(argv)
    torch.set_num_threads(opts.threads)
    nlpcourse.seed_everything(0)
    corpus = lm_corpus("austen", "word", 10_000, opts.max_chars)
    report = {"systems": {}, "speed": {}, "targets": {}, "setup": setup(corpus, opts)}
    for path in ([opts.json] if opts.merge and opts.json is not None and opts.json.is_file() else []) + opts.include:
        merge(report, json.loads(path.read_text()))
    report["targets"] = targets(report["systems"])
    for name in opts.systems:
        print(f"{name} ...", flush=True)
        report["systems"].pop(name, None)
        if name in NGRAMS:
            result = run_ngram(name, corpus)
        elif name in RNNS:
            result = run_rnn(name, corpus, opts)
        elif name == "ffnn":
            result = run_ffnn(corpus, opts)
        else:
            result = run_checkpoint(corpus, opts.device)
        if result is not None:
            report["systems"][name] = result
            print(f"  test ppl {result['test_ppl']:.1f}  valid ppl {result['valid_ppl']:.1f}  "
                  f"wall {result['wall_s']} s", flush=True)
        report["targets"] = targets(report["systems"])
        write_json(opts.json, report)
    if not opts.no_speed:
        report["speed"] = loop_speed(opts.device, opts.hidden, 1.0 if opts.tiny else 5.0)
    print("speed:", report["speed"], "\ntargets:", report["targets"])
    write_json(opts.json, report)
    return report


def merge(report: dict, earlier: dict) -> None:
    """Add the systems (and speed) of an earlier run's report, each with the CPU budget it had."""
    budget = earlier["setup"]["minutes_per_neural_system"] * 60 * earlier["setup"]["threads"]
    for name, result in earlier["systems"].items():
        if "cpu_s" in result:
            result.setdefault("cpu_budget_s", budget)
        report["systems"][name] = result
    report["speed"] = report["speed"] or earlier.get("speed", {})


def setup(corpus: LMCorpus, opts: argparse.Namespace) -> dict:
    return {"corpus": "austen", "level": "word", "vocab_size": corpus.vocab_size,
            "tokens": {p: len(getattr(corpus, p)) for p in ("train", "valid", "test")},
            "unk_rate_test": round((corpus.test == 0).float().mean().item(), 4),
            "minutes_per_neural_system": opts.minutes, "threads": opts.threads, "device": opts.device,
            "hidden": opts.hidden, "dropout": DROPOUT, "torch": torch.__version__,
            "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}", "tiny": opts.tiny}


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    p.add_argument("--minutes", type=float, default=10.0, help="training budget per neural system (default 10)")
    p.add_argument("--systems", default=",".join([*NGRAMS, "ffnn", *RNNS, "lstm_checkpoint"]),
                   help="comma-separated subset of the systems, in the order to run them")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--threads", type=int, default=2, help="PyTorch threads (default 2)")
    p.add_argument("--save-lstm", type=Path, default=None, help="also save the trained lstm as a checkpoint here")
    p.add_argument("--merge", action="store_true", help="keep the systems already in --json FILE, add these")
    p.add_argument("--include", type=Path, action="append", default=[],
                   help="also take the systems of this earlier run's JSON (repeatable)")
    p.add_argument("--no-speed", action="store_true", help="skip the fused vs looped cells speed measurement")
    p.add_argument("--tiny", action="store_true", help="a smoke run in seconds: 60,000 characters, small models")
    opts = p.parse_args(argv)
    opts.systems = [s for s in opts.systems.split(",") if s]
    known = {*NGRAMS, "ffnn", *RNNS, "lstm_checkpoint"}
    unknown = [s for s in opts.systems if s not in known]
    if unknown:
        p.error(f"unknown systems {unknown}; choose from {sorted(known)}")
    opts.hidden, opts.max_chars, opts.max_epochs, opts.max_steps = 256, None, 100, None
    if opts.tiny:
        opts.hidden, opts.max_chars, opts.max_epochs, opts.max_steps = 16, 60_000, 1, 20
        opts.systems = [s for s in opts.systems if s != "lstm_checkpoint"]
    return opts


if __name__ == "__main__":
    main()
