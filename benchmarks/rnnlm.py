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
  dropout 0.2, truncated BPTT over windows of 35, Adam (lr 2e-3), global-norm clipping at 0.25; the LSTM's
  forget gate and the GRU's update gate start with bias 1 (the Elman cell has no gate to bias);
* ``lstm_long``: the same LSTM on a longer budget, ``--long-cpu-minutes`` (default 20);
* ``lstm_class``: the same LSTM on that budget with a class-based softmax (``RNNLMConfig.word_classes``:
  ``nlpcourse.models.softmax.frequency_classes`` of the training counts, C = round(sqrt(V)) = 100; tied:
  word w's embedding is its row in its class's output block) and dropout 0.3: each training step scores the
  100 classes and the target's class, not all V words, so the same CPU time reads about three times the
  text, and more passes over it want more dropout;
* ``lstm_checkpoint``: the chapter's LSTM (``data/checkpoints/rnnlm_austen.pt``), scored here (float16
  weights); its ``wall_s``, ``cpu_s``, epochs, ``stages``, hardware and ``trained_by`` are from the
  checkpoint: ``scripts/train_rnnlm.py`` trains it (``lstm_class`` with 512 units, dropout 0.5 and 90
  CPU-minutes, one seed) and ``--finetune`` continues it (8 epochs of averaged SGD with weight drop 0.5), or
  ``--save-lstm`` saves seed 0 of a run's ``lstm_long`` (else ``lstm``) in its place.

Every neural system trains ``--seeds`` times (default 3: seeds 0, 1, 2 draw the initial weights, the
dropout masks and the feed-forward model's batches), each run until it has used ``--cpu-minutes`` of CPU
time (default 10), counted as the CPU time of the process (all its ``--threads``, default 1, the validation
after each epoch included); ``--jobs`` runs (default 2) train at once. A CPU budget, unlike a wall-clock
one, is the same whether or not other work shares the machine; ``wall_s`` and ``cpu_s`` record both. All
of them get the same early stopping: validation perplexity after every epoch (and when the budget runs
out), the learning rate halved after an epoch that did not improve it, and the weights of the best
evaluation kept. A system's ``test_ppl`` is the mean over its seeds, with ``test_ppl_std`` (sample
standard deviation), ``test_ppl_ci95`` (t interval of the mean) and its ``runs``. Each run is also
interpolated with ``kn5`` token by token, ``w p_net + (1 - w) p_kn5``, ``w`` chosen on validation (a grid
of 0.05): Bengio et al.'s mixture (``mix_kn5_test_ppl``). ``ranking`` lists the systems by test
perplexity, each with the difference to the next one and its 95% Welch t interval; a difference whose
interval holds 0 is a tie; ``pairs`` holds the same for every two neural systems and each against ``kn5``.
``speed`` holds training throughput (forward + backward, tokens per second) of ``nn.LSTM`` and ``nn.GRU``
against the cells of ``nlpcourse.models.lstm_cells`` looped over time in Python (``CoupledPeepholeLSTM``, the
chapter's hand-written LSTM, and ``LoopGRU``, ``nn.GRU``'s equations), on the device.

Targets (``targets``, ratios of mean test perplexities): ``lstm`` below ``kn5`` within its 10 CPU-minutes;
``lstm_long`` and ``lstm_class`` at most 0.8x ``kn5`` within 20; ``lstm_checkpoint`` at most 0.7x ``kn5``.

    python benchmarks/rnnlm.py --json benchmarks/results/rnnlm.json     # the full run, about 95 minutes
    python benchmarks/rnnlm.py --tiny                                   # seconds: a smoke run (tests)
    python benchmarks/rnnlm.py --systems gru,elman --cpu-minutes 5 --json /tmp/rest.json   # a part of it ...
    python benchmarks/rnnlm.py --systems lstm_checkpoint --merge --include /tmp/rest.json --json FILE
                                                            # ... merged into FILE, each with its budget

``--json FILE`` writes ``{"systems": {NAME: {"test_ppl", "valid_ppl", "wall_s", ...}}, "speed": {...},
"targets": {...}, "ranking": [...], "pairs": {...}, "setup": {...}}`` (after every system, so a cut run
keeps what it measured).
"""
from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import scipy.stats
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
    config_summary,
    fit_lm,
    lm_perplexity,
    perplexity_of,
    rnnlm_from_config,
    stream_log_probs,
)
from nlpcourse.models.softmax import frequency_classes
from nlpcourse.ngram import MLE, KneserNey
from nlpcourse.report import write_json

REPO = Path(__file__).resolve().parents[1]
CHECKPOINT = REPO / "data" / "checkpoints" / "rnnlm_austen.pt"
CONTEXT = 200  # tokens before a part that its first tokens are predicted with
NGRAMS = {"unigram": lambda: MLE(1), "kn3": lambda: KneserNey(3), "kn5": lambda: KneserNey(5)}
RNNS = ("elman", "gru", "lstm")
LONG = ("lstm_long", "lstm_class")  # the LSTM again, on --long-cpu-minutes: as it is, and with class softmax
NEURAL = ("ffnn", *RNNS, *LONG)
DROPOUT = 0.2  # for a budget of 2-3 epochs; the longer-trained checkpoint uses 0.5
CLASS_DROPOUT = 0.3  # lstm_class reads about three times the text in the same time: more dropout


def run_ngram(name: str, corpus: LMCorpus) -> dict:
    start = time.perf_counter()
    model = NGRAMS[name]().fit(corpus.train, corpus.vocab_size)
    ppl = {part: model.perplexity(getattr(corpus, part), corpus.context_before(part, CONTEXT))
           for part in ("valid", "test")}
    return {"test_ppl": ppl["test"], "valid_ppl": ppl["valid"], "wall_s": round(time.perf_counter() - start, 1)}


def run_rnn(name: str, seed: int, corpus: LMCorpus, opts: argparse.Namespace) -> dict:
    cfg = RNNLMConfig(vocab_size=corpus.vocab_size, cell="lstm" if name in LONG else name, embed_dim=opts.hidden,
                      hidden_dim=opts.hidden, layers=2, dropout=CLASS_DROPOUT if name == "lstm_class" else DROPOUT,
                      **output_layer(name, corpus))
    model = build_rnnlm(cfg, seed=seed, device=opts.device)
    minutes = opts.long_cpu_minutes if name in LONG else opts.cpu_minutes
    tcfg = LMTrainConfig(epochs=opts.max_epochs, max_cpu_seconds=minutes * 60, eval_tokens=None,
                         max_steps=opts.max_steps, seed=seed, keep_best=True)
    hist = fit_lm(model, corpus.train, corpus.valid, tcfg, valid_context=corpus.context_before("valid", CONTEXT))
    result = _scored(model, corpus, hist, stream_log_probs, tcfg.max_cpu_seconds, opts.max_chars)
    if name == opts.save_system and seed == 0 and opts.save_lstm is not None:
        save_lstm(opts.save_lstm, model, cfg, corpus, hist, result, opts.threads, name)
    return result


def output_layer(name: str, corpus: LMCorpus) -> dict:
    """RNNLMConfig's output fields of system ``name``: the class-based softmax for ``lstm_class`` (its word
    rows the embeddings), the full softmax tied to the embeddings for the others."""
    if name != "lstm_class":
        return {}
    counts = torch.bincount(corpus.train, minlength=corpus.vocab_size)  # (V,) training counts
    return {"word_classes": frequency_classes(counts).tolist(), "tie_weights": True}


def save_lstm(path: Path, model: nn.Module, cfg: RNNLMConfig, corpus: LMCorpus, hist: LMHistory, result: dict,
              threads: int, name: str) -> None:
    """The trained lstm as a checkpoint in the format of ``scripts/train_rnnlm.py`` (and its JSON beside it)."""
    report = {"config": dataclasses.asdict(cfg), "valid_ppl": result["valid_ppl"], "test_ppl": result["test_ppl"],
              "epochs_run": result["epochs"], "train_tokens_seen": hist.tokens, "seconds": result["wall_s"],
              "cpu_seconds": result["cpu_s"], "hardware": f"{platform.machine()}, {threads} threads",
              "trained_by": f"benchmarks/rnnlm.py --save-lstm (its {name} system, seed 0)"}
    nlpcourse.save_checkpoint(path, model.cpu().half(), cfg, None, extra={
        "itos": corpus.itos, "level": "word", "history": hist.to_dict(),
        **{k: v for k, v in report.items() if k != "config"}})
    write_json(path.with_suffix(".json"), report)


def run_ffnn(seed: int, corpus: LMCorpus, opts: argparse.Namespace) -> dict:
    torch.manual_seed(seed)
    model = FFNNLM(FFNNLMConfig(vocab_size=corpus.vocab_size, context=4, embed_dim=128,
                                hidden_dim=opts.hidden * 2)).to(opts.device)
    hist = fit_ffnn(model, corpus.train, corpus.valid, corpus.context_before("valid", CONTEXT),
                    epochs=opts.max_epochs, seed=seed, max_cpu_seconds=opts.cpu_minutes * 60, keep_best=True)
    return _scored(model, corpus, hist, ffnn_log_probs, opts.cpu_minutes * 60, opts.max_chars)


def _scored(model: nn.Module, corpus: LMCorpus, hist: LMHistory, log_probs: Callable, budget_s: float,
            max_chars: int | None) -> dict:
    """Test and validation perplexity of a trained run, alone and interpolated with ``kn5``."""
    lp = {part: log_probs(model, getattr(corpus, part), corpus.context_before(part, CONTEXT))
          for part in ("valid", "test")}
    return {"test_ppl": perplexity_of(lp["test"]), "valid_ppl": perplexity_of(lp["valid"]),
            "wall_s": round(hist.seconds, 1), "cpu_s": round(hist.cpu_seconds, 1), "cpu_budget_s": budget_s,
            "train_tokens_seen": hist.tokens, "epochs": round(hist.tokens / len(corpus.train), 2),
            "valid_ppl_per_epoch": hist.valid_ppl, "best_epoch": hist.best_epoch,
            "mix_kn5": mix_kn5(lp, kn5_log_probs(max_chars))}


@functools.lru_cache(maxsize=1)
def kn5_log_probs(max_chars: int | None) -> dict:
    corpus = lm_corpus("austen", "word", 10_000, max_chars)
    kn = KneserNey(5).fit(corpus.train, corpus.vocab_size)
    return {part: kn.log_probs(getattr(corpus, part), corpus.context_before(part, CONTEXT)).double()
            for part in ("valid", "test")}


def mix_kn5(lp: dict, kn: dict) -> dict:
    """``w p_net + (1 - w) p_kn5`` for every token, ``w`` the grid point (0.05 apart) best on validation."""
    def mixed(part: str, w: float) -> torch.Tensor:
        return torch.logaddexp(lp[part].double() + math.log(w), kn[part] + math.log1p(-w))
    w = min((i / 20 for i in range(1, 20)), key=lambda w: -mixed("valid", w).mean().item())
    return {"weight": w, "valid_ppl": perplexity_of(mixed("valid", w)), "test_ppl": perplexity_of(mixed("test", w))}


def neural_run(task: tuple[str, int, argparse.Namespace]) -> dict:
    """One seed of one neural system, in its own process (``--jobs``) with ``--threads`` threads."""
    name, seed, opts = task
    torch.set_num_threads(opts.threads)
    corpus = lm_corpus("austen", "word", 10_000, opts.max_chars)
    result = run_ffnn(seed, corpus, opts) if name == "ffnn" else run_rnn(name, seed, corpus, opts)
    return {"system": name, "seed": seed, **result}


def summarise(runs: list[dict]) -> dict:
    """A system's runs, one per seed: means, spreads and every run."""
    def mean(key: str) -> float:
        return statistics.fmean(r[key] for r in runs)
    test = [r["test_ppl"] for r in runs]
    return {"test_ppl": mean("test_ppl"), "test_ppl_std": _std(test), "test_ppl_ci95": mean_ci95(test),
            "valid_ppl": mean("valid_ppl"), "seeds": len(runs), "cpu_budget_s": runs[0]["cpu_budget_s"],
            "cpu_s": round(mean("cpu_s"), 1), "wall_s": round(mean("wall_s"), 1), "epochs": round(mean("epochs"), 2),
            "mix_kn5_test_ppl": statistics.fmean(r["mix_kn5"]["test_ppl"] for r in runs),
            "mix_kn5_test_ppl_std": _std([r["mix_kn5"]["test_ppl"] for r in runs]),
            "runs": [{k: v for k, v in r.items() if k != "system"} for r in runs]}


def _std(xs: list[float]) -> float:
    return statistics.stdev(xs) if len(xs) > 1 else 0.0


def mean_ci95(xs: list[float]) -> list[float]:
    """The 95% t interval of the mean of ``xs`` (NaN bounds for one value)."""
    m = statistics.fmean(xs)
    half = float(scipy.stats.t.ppf(0.975, len(xs) - 1)) * _std(xs) / math.sqrt(len(xs)) if len(xs) > 1 else math.nan
    return [m - half, m + half]


def welch(a: list[float], b: list[float]) -> dict:
    """mean(a) - mean(b) and its 95% Welch t interval; a system with one value (an n-gram model) has no
    spread, so the interval is the other's (a point when neither has one: two n-gram models)."""
    va, vb = _std(a) ** 2 / len(a), _std(b) ** 2 / len(b)
    d = statistics.fmean(a) - statistics.fmean(b)
    if va + vb == 0:
        return {"diff": d, "diff_ci95": [d, d]}
    df = (va + vb) ** 2 / sum(v * v / (len(x) - 1) for v, x in ((va, a), (vb, b)) if v > 0)
    half = float(scipy.stats.t.ppf(0.975, df)) * math.sqrt(va + vb)
    return {"diff": d, "diff_ci95": [d - half, d + half]}


def _values(systems: dict, name: str) -> list[float]:
    r = systems[name]
    return [x["test_ppl"] for x in r["runs"]] if "runs" in r else [r["test_ppl"]]


def pairs(systems: dict) -> dict:
    """Every neural system against every other and against ``kn5``: ``"a - b"`` -> the difference of their
    mean test perplexities, its 95% Welch interval and whether it is a tie."""
    names = [n for n in (*NEURAL, "kn5") if n in systems]
    out = {}
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            w = welch(_values(systems, a), _values(systems, b))
            out[f"{a} - {b}"] = {**w, "tie": bool(w["diff_ci95"][0] <= 0 <= w["diff_ci95"][1])}
    return out


def ranking(systems: dict) -> list[dict]:
    """Systems from the lowest test perplexity up, each with its difference to the next (a tie when the
    difference's interval holds 0)."""
    names = sorted((n for n in systems if n != "lstm_checkpoint"), key=lambda n: systems[n]["test_ppl"])
    out = []
    for a, b in zip(names, names[1:] + [None]):
        row = {"system": a, "test_ppl": systems[a]["test_ppl"]}
        if b is not None:
            w = welch(_values(systems, a), _values(systems, b))
            row |= {"next": b, "diff_to_next": w["diff"], "diff_ci95": w["diff_ci95"],
                    "tie_with_next": bool(not w["diff_ci95"][1] < 0)}
        out.append(row)
    return out


def run_checkpoint(corpus: LMCorpus, device: str) -> dict | None:
    if not CHECKPOINT.is_file():
        return None
    ckpt = nlpcourse.load_checkpoint(CHECKPOINT, build=rnnlm_from_config, device=device)
    model = ckpt.model.float()
    if ckpt.extra["itos"] != corpus.itos:
        raise nlpcourse.errors.DataError(f"{CHECKPOINT}: its vocabulary is not this corpus's; retrain it")
    ppl = {part: lm_perplexity(model, getattr(corpus, part), corpus.context_before(part, CONTEXT))
           for part in ("valid", "test")}
    stages = [e for e in (ckpt.extra.get("init"), ckpt.extra) if e is not None]  # a fine-tuned one: two
    return {"test_ppl": ppl["test"], "valid_ppl": ppl["valid"], "wall_s": sum(e["seconds"] for e in stages),
            "cpu_s": sum(e["cpu_seconds"] for e in stages), "hardware": ckpt.extra["hardware"],
            "epochs": sum(e["epochs_run"] for e in stages), "stages": [_stage(e) for e in stages],
            "trained_by": ckpt.extra.get("trained_by", "scripts/train_rnnlm.py"), "config": config_summary(ckpt.config)}


def _stage(extra: dict) -> dict:
    """One training stage of the checkpoint as its script saved it: settings, effort, perplexities."""
    settings = extra["train_settings"]  # a stage saved before a setting existed lacks it: null
    return {"epochs": extra["epochs_run"], "cpu_s": extra["cpu_seconds"], "valid_ppl": extra["valid_ppl"],
            "test_ppl": extra["test_ppl"],
            **{k: settings.get(k) for k in ("optimizer", "lr", "weight_drop", "average")}}


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
    for name, bar in (("lstm", 1.0), ("lstm_long", 0.8), ("lstm_class", 0.8), ("lstm_checkpoint", 0.7)):
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
    report = {"systems": {}, "speed": {}, "targets": {}, "ranking": [], "pairs": {}, "setup": setup(corpus, opts)}
    for path in ([opts.json] if opts.merge and opts.json is not None and opts.json.is_file() else []) + opts.include:
        merge(report, json.loads(path.read_text()))
    for name in opts.systems:
        report["systems"].pop(name, None)
        if name in NGRAMS:
            record(report, name, run_ngram(name, corpus), opts)
        elif name == "lstm_checkpoint" and (result := run_checkpoint(corpus, opts.device)) is not None:
            record(report, name, result, opts)
    run_neural(report, [n for n in opts.systems if n in NEURAL], opts)
    if not opts.no_speed:
        torch.set_num_threads(opts.speed_threads)
        report["speed"] = loop_speed(opts.device, opts.hidden, 1.0 if opts.tiny else 5.0)
    print("speed:", report["speed"], "\ntargets:", report["targets"])
    write_json(opts.json, report)
    return report


def run_neural(report: dict, names: list[str], opts: argparse.Namespace) -> None:
    """Every seed of every neural system in ``names``, ``opts.jobs`` at a time; each system is recorded
    once all its seeds are in."""
    from concurrent.futures import ProcessPoolExecutor

    tasks = [(name, seed, opts) for name in names for seed in range(opts.seeds)]
    done: dict[str, list[dict]] = {name: [] for name in names}
    with ProcessPoolExecutor(max_workers=opts.jobs) as pool:
        for run in pool.map(neural_run, tasks):
            print(f"  {run['system']} seed {run['seed']}: test ppl {run['test_ppl']:.1f}, with kn5 "
                  f"{run['mix_kn5']['test_ppl']:.1f} ({run['epochs']} epochs, {run['cpu_s']} CPU-s)", flush=True)
            done[run["system"]].append(run)
            if len(done[run["system"]]) == opts.seeds:
                record(report, run["system"], summarise(done[run["system"]]), opts)


def record(report: dict, name: str, result: dict, opts: argparse.Namespace) -> None:
    """Add one system's result; the targets and the ranking follow; the JSON is rewritten."""
    report["systems"][name] = result
    report["targets"], report["ranking"] = targets(report["systems"]), ranking(report["systems"])
    report["pairs"] = pairs(report["systems"])
    spread = f" (sd {result['test_ppl_std']:.1f} over {result['seeds']} seeds)" if "seeds" in result else ""
    print(f"{name}: test ppl {result['test_ppl']:.1f}{spread}, valid ppl {result['valid_ppl']:.1f}", flush=True)
    write_json(opts.json, report)


def merge(report: dict, earlier: dict) -> None:
    """Add the systems (and speed) of an earlier run's report; the targets, ranking and pairs follow."""
    for name, result in earlier["systems"].items():
        report["systems"][name] = result
    report["speed"] = report["speed"] or earlier.get("speed", {})
    report["targets"], report["ranking"] = targets(report["systems"]), ranking(report["systems"])
    report["pairs"] = pairs(report["systems"])


def setup(corpus: LMCorpus, opts: argparse.Namespace) -> dict:
    return {"corpus": "austen", "level": "word", "vocab_size": corpus.vocab_size,
            "tokens": {p: len(getattr(corpus, p)) for p in ("train", "valid", "test")},
            "unk_rate_test": round((corpus.test == 0).float().mean().item(), 4),
            "cpu_minutes_per_run": opts.cpu_minutes, "long_cpu_minutes": opts.long_cpu_minutes,
            "seeds": opts.seeds, "threads_per_run": opts.threads,
            "jobs": opts.jobs, "speed_threads": opts.speed_threads, "device": opts.device,
            "hidden": opts.hidden, "dropout": DROPOUT, "torch": torch.__version__,
            "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}", "tiny": opts.tiny}


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    p.add_argument("--cpu-minutes", type=float, default=10.0,
                   help="CPU time each run of a neural system trains for, all its threads (default 10)")
    p.add_argument("--long-cpu-minutes", type=float, default=20.0,
                   help="CPU time of each run of lstm_long and lstm_class, the LSTM on a longer budget "
                        "(default 20)")
    p.add_argument("--seeds", type=int, default=3, help="runs of each neural system (default 3)")
    p.add_argument("--jobs", type=int, default=2, help="runs at once (default 2)")
    p.add_argument("--systems", default=",".join([*NGRAMS, *NEURAL, "lstm_checkpoint"]),
                   help="comma-separated subset of the systems, in the order to run them")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--threads", type=int, default=1, help="PyTorch threads of each run (default 1)")
    p.add_argument("--speed-threads", type=int, default=2,
                   help="PyTorch threads of the fused vs looped speed measurement (default 2)")
    p.add_argument("--save-lstm", type=Path, default=None, help="also save the trained lstm as a checkpoint here")
    p.add_argument("--merge", action="store_true", help="keep the systems already in --json FILE, add these")
    p.add_argument("--include", type=Path, action="append", default=[],
                   help="also take the systems of this earlier run's JSON (repeatable)")
    p.add_argument("--no-speed", action="store_true", help="skip the fused vs looped cells speed measurement")
    p.add_argument("--tiny", action="store_true", help="a smoke run in seconds: 60,000 characters, small models")
    opts = p.parse_args(argv)
    opts.systems = [s for s in opts.systems.split(",") if s]
    known = {*NGRAMS, *NEURAL, "lstm_checkpoint"}
    unknown = [s for s in opts.systems if s not in known]
    if unknown:
        p.error(f"unknown systems {unknown}; choose from {sorted(known)}")
    if opts.seeds < 1 or opts.jobs < 1 or opts.threads < 1 or min(opts.cpu_minutes, opts.long_cpu_minutes) <= 0:
        p.error("--seeds, --jobs and --threads must be at least 1, the budgets above 0")
    opts.save_system = "lstm_long" if "lstm_long" in opts.systems else "lstm"  # what --save-lstm saves
    opts.hidden, opts.max_chars, opts.max_epochs, opts.max_steps = 256, None, 100, None
    if opts.tiny:
        opts.hidden, opts.max_chars, opts.max_epochs, opts.max_steps = 16, 60_000, 1, 20
        opts.systems = [s for s in opts.systems if s != "lstm_checkpoint"]
    return opts


if __name__ == "__main__":
    main()
