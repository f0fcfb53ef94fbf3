"""English -> Spanish verse translation with and without attention, greedy against beam search, measured by
sacreBLEU; and a BiLSTM part-of-speech tagger against the most-frequent-tag baseline.

Data (``nlpcourse.data.translation``): KJV -> Reina-Valera 1909 verse pairs of at most 20 tokens on each
side, whole chapters dealt to train / valid / test (80/10/10 of the pairs, seed 0); lower-cased word
tokens, vocabularies (training tokens seen twice or more) fit on the training part. Translations are
detokenised and scored against the bundled Spanish verses by sacreBLEU (BLEU and chrF, case-insensitive;
the signatures are in ``setup``).

Systems (names as in the JSON): ``nlpcourse.models.seq2seq.Seq2Seq``, a bidirectional GRU encoder and a GRU
decoder (embeddings 128, 256 units, dropout 0.2), Adam (lr 2e-3, halved after an epoch whose validation loss
did not improve), teacher forcing, global-norm clipping at 1:

* ``rnn_greedy``, ``rnn_beam``: no attention: the decoder sees the source only through one summary vector
  (its first state, and the same context at every step);
* ``attention_greedy``, ``attention_beam``: the same network with Luong's "general" attention;
* ``*_beam``: beam search (5 hypotheses), each finished hypothesis ranked by log P / length^alpha, alpha
  chosen on the validation part among 0, 0.5, 1 (``alpha`` in the system's entry).

Each translation model trains until it has used ``--minutes`` x ``--threads`` CPU-minutes (default 5 x 2: the
issue's "5 CPU-minutes on 2 cores"), counted as the process's CPU time, the validation after each epoch
included. ``wall_s`` is training plus decoding the test part. ``by_length`` holds BLEU per source-length
bucket of the test part (the bottleneck shows as BLEU falling with length without attention).

``tagger``: ``nlpcourse.models.tagger.BiLSTMTagger`` (word, suffix and shape features, 128 units each way) on
the Brown corpus split by document (80/10/10), trained within the same budget; accuracy over all test tokens
against ``MostFrequentTag``; ``per_tag`` for the most frequent tags.

Targets: ``attention_*`` at least +5 BLEU over ``rnn_*``; ``*_beam`` at least ``*_greedy``; each model within
its budget.

``--ablations`` (only this part; the other entries of ``--json`` are kept): the summary and the depth, each
system on ``--seeds`` seeds (initialisation, dropout and batch order), one thread and ``--ablation-minutes``
CPU-minutes a run, ``--jobs`` runs at once, greedy BLEU on the test part: ``rnn`` (no attention, the summary
is the last states, as above) against ``rnn_mean`` (the mean of the encoder's states), and ``attention``
against ``attention_2layers`` (two stacked GRU layers in the encoder and the decoder). ``"ablations": {NAME:
{"bleu": [per seed], "chrf", "epochs", "best_valid_loss"}, "pairs": {"rnn_mean - rnn": {"diff": [per seed],
"diff_mean", "diff_ci95"}, ...}, "setup"}``.

    python benchmarks/seq2seq.py --json benchmarks/results/seq2seq.json --save data/checkpoints  # ~20 min
    python benchmarks/seq2seq.py --tiny                                                         # seconds
    OMP_WAIT_POLICY=PASSIVE python benchmarks/seq2seq.py --ablations --jobs 2 --json benchmarks/results/seq2seq.json

``--rescore DIR`` (only this part): the two saved models of ``DIR`` scored again on the split as it is now (greedy,
beam with alpha chosen again on validation, by length, examples), what ``--json`` says of their training kept;
``setup["rescored"]`` says when and why (the split dropped the validation and test pairs whose source occurs in
training, ``setup["dropped_seen_in_training"]``; the training part, and so the models, did not change).

    python benchmarks/seq2seq.py --rescore data/checkpoints --json benchmarks/results/seq2seq.json            # ~3 min

``--json FILE`` writes ``{"systems": {NAME: {"bleu", "chrf", "wall_s", ...}}, "tagger": {"accuracy",
"baseline_accuracy", ...}, "targets": {...}, "setup": {...}}`` after every step.
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Sequence
from pathlib import Path

import cnn  # benchmarks/cnn.py: the paired 95% t interval
import torch

import nlpcourse
from nlpcourse.data.batching import pad_batch
from nlpcourse.data.tagging import tagging_split
from nlpcourse.data.translation import TranslationSplit, mt_scores, tokens, translation_split
from nlpcourse.errors import ConfigError
from nlpcourse.models.seq2seq import (
    Seq2Seq,
    Seq2SeqConfig,
    Seq2SeqTrainConfig,
    beam_decode,
    build_seq2seq,
    fit_seq2seq,
    greedy_decode,
    seq2seq_from_config,
)
from nlpcourse.models.tagger import (
    BiLSTMTagger,
    MostFrequentTag,
    TaggerConfig,
    TaggerFeatures,
    fit_tagger,
    per_tag_accuracy,
    predict_tags,
    tag_accuracy,
)
from nlpcourse.report import write_json
from nlpcourse.train import save_checkpoint

MODELS = {"rnn": "none", "attention": "general"}  # system prefix -> Seq2SeqConfig.attention
ALPHAS = (0.0, 0.5, 1.0)
BEAM = 5
#: ``--ablations``: system -> its Seq2SeqConfig fields; and the pairs compared seed by seed (first - second).
ABLATIONS = {"rnn": {"attention": "none"}, "rnn_mean": {"attention": "none", "summary": "mean"},
             "attention": {"attention": "general"}, "attention_2layers": {"attention": "general", "layers": 2}}
PAIRS = (("rnn_mean", "rnn"), ("attention_2layers", "attention"))
TRAINED_FIELDS = ("epochs", "train_wall_s", "train_cpu_s", "cpu_budget_s", "valid_loss")  # kept by --rescore
LENGTH_BUCKETS = ((1, 8), (9, 12), (13, 16), (17, 20))  # source tokens


def translate(model: Seq2Seq, split: TranslationSplit, part: str, beam: int = 1, alpha: float = 0.0,
              batch_size: int = 64) -> list[str]:
    """Detokenised translations of a part: greedy when ``beam`` is 1, else beam search."""
    src, out = split.source_ids(part), []
    device = next(model.parameters()).device
    for i in range(0, len(src), batch_size):
        batch = pad_batch(src[i:i + batch_size]).tokens.to(device)  # (B,S)
        max_len = split.max_tokens + 5
        d = greedy_decode(model, batch, max_len) if beam == 1 else beam_decode(model, batch, max_len, beam, alpha)
        out += [split.decode(ids) for ids in d.ids]
    return out


def bleu_by_length(split: TranslationSplit, hyps: Sequence[str]) -> dict[str, dict]:
    """Corpus BLEU of the test translations whose source has a length in each bucket."""
    lengths, refs, out = [len(tokens(p.src)) for p in split.test], split.references("test"), {}
    for lo, hi in LENGTH_BUCKETS:
        idx = [i for i, n in enumerate(lengths) if lo <= n <= hi]
        if idx:
            s = mt_scores([hyps[i] for i in idx], [refs[i] for i in idx])
            out[f"{lo}-{hi}"] = {"bleu": round(s.bleu, 2), "n": len(idx)}
    return out


def run_model(prefix: str, split: TranslationSplit, opts: argparse.Namespace, say) -> dict[str, dict]:
    """Train one encoder-decoder within the budget; its greedy and beam systems."""
    cfg = Seq2SeqConfig(len(split.src_vocab), len(split.tgt_vocab), attention=MODELS[prefix], **opts.size)
    model = build_seq2seq(cfg, seed=0, device=opts.device)
    train_cfg = Seq2SeqTrainConfig(max_cpu_seconds=opts.minutes * 60 * opts.threads, epochs=opts.max_epochs)
    hist = fit_seq2seq(model, (split.source_ids("train"), split.target_ids("train")),
                       (split.source_ids("valid"), split.target_ids("valid")), train_cfg)
    say(f"{prefix}: {hist.epochs:.1f} epochs, {hist.cpu_seconds:.0f} CPU-s, valid loss {hist.valid_loss[-1]:.3f}")
    trained = {"epochs": round(hist.epochs, 2), "train_wall_s": round(hist.seconds, 1),
               "train_cpu_s": round(hist.cpu_seconds, 1), "cpu_budget_s": train_cfg.max_cpu_seconds,
               "valid_loss": [round(v, 4) for v in hist.valid_loss]}
    if opts.save is not None:
        save_checkpoint(opts.save / f"seq2seq_{prefix}.pt", model.half(), cfg,
                        extra={"history": hist.to_dict(), "split": {"max_tokens": split.max_tokens, "seed": 0},
                               "src_itos": split.src_vocab.itos, "tgt_itos": split.tgt_vocab.itos})
        model.float()
    return score_model(model, prefix, split, trained, say)


def score_model(model: Seq2Seq, prefix: str, split: TranslationSplit, trained: dict, say) -> dict[str, dict]:
    """A trained model's greedy and beam systems on the test part, the beam's alpha chosen on validation."""
    systems = {}
    refs = split.references("test")
    valid_bleu = {a: mt_scores(translate(model, split, "valid", BEAM, a), split.references("valid")).bleu
                  for a in ALPHAS}
    alpha = max(ALPHAS, key=lambda a: (valid_bleu[a], -a))
    for method, beam in (("greedy", 1), ("beam", BEAM)):
        start = time.perf_counter()
        hyps = translate(model, split, "test", beam, alpha)
        s = mt_scores(hyps, refs)
        decode_s = time.perf_counter() - start
        systems[f"{prefix}_{method}"] = {
            "bleu": round(s.bleu, 2), "chrf": round(s.chrf, 2), "wall_s": round(trained["train_wall_s"] + decode_s, 1),
            "decode_s": round(decode_s, 1), **trained, "by_length": bleu_by_length(split, hyps),
            "examples": [{"src": p.src, "ref": p.tgt, "hyp": h} for p, h in list(zip(split.test, hyps))[:5]],
            **({"beam": BEAM, "alpha": alpha, "valid_bleu_by_alpha": {str(a): round(b, 2)
                                                                      for a, b in valid_bleu.items()}}
               if beam > 1 else {})}
        say(f"  {prefix}_{method}: BLEU {s.bleu:.2f}  chrF {s.chrf:.2f}  ({decode_s:.0f} s to decode)")
    return systems


def rescore(split: TranslationSplit, opts: argparse.Namespace, say) -> dict:
    """The saved models (``--rescore DIR``) scored again on ``split``: what was measured in training (epochs,
    CPU time, validation losses) is kept from ``--json``, every test score is measured here."""
    report = json.loads(opts.json.read_text()) if opts.json and opts.json.exists() else {"systems": {}}
    for prefix in MODELS:
        ckpt = nlpcourse.load_checkpoint(opts.rescore / f"seq2seq_{prefix}.pt", build=seq2seq_from_config)
        if ckpt.extra["tgt_itos"] != split.tgt_vocab.itos or ckpt.extra["src_itos"] != split.src_vocab.itos:
            raise ConfigError(f"--rescore: seq2seq_{prefix}.pt was trained on other vocabularies than this split's")
        old = report["systems"].get(f"{prefix}_greedy", {})
        trained = {k: old[k] for k in TRAINED_FIELDS if k in old}
        trained.setdefault("train_wall_s", 0.0)
        report["systems"].update(score_model(ckpt.model.float().eval().to(opts.device), prefix, split, trained, say))
    report["targets"] = targets(report["systems"], opts.minutes * 60 * opts.threads)
    trained_date = report.get("setup", {}).get("rescored", {}).get("trained", report.get("setup", {}).get("date"))
    report["setup"] = report.get("setup", {}) | setup(split, opts) | {
        "rescored": {"from": str(opts.rescore), "date": time.strftime("%Y-%m-%d"), "trained": trained_date,
                     "why": "the test and validation parts lost the pairs whose source occurs in training; "
                            "the training part, and so the models, are unchanged"}}
    return report


def run_tagger(opts: argparse.Namespace, say) -> dict:
    split = tagging_split()
    if opts.tiny:
        split.train, split.valid, split.test = split.train[:300], split.valid[:100], split.test[:100]
    gold = split.tag_ids(split.test)
    base_predicted = MostFrequentTag(split).predict(split.test)
    baseline = tag_accuracy(base_predicted, gold)
    feats = TaggerFeatures.fit(split)
    torch.manual_seed(0)
    model = BiLSTMTagger(TaggerConfig(len(feats.words), len(feats.suffixes), len(split.tags),
                                      hidden_dim=opts.size["hidden_dim"] // 2)).to(opts.device)
    hist = fit_tagger(model, feats, split, epochs=opts.max_epochs, max_cpu_seconds=opts.minutes * 60 * opts.threads)
    predicted = predict_tags(model, feats, split.test)
    acc = tag_accuracy(predicted, gold)
    say(f"tagger: accuracy {acc:.4f} vs most frequent tag {baseline:.4f} ({hist.epochs:.1f} epochs)")
    per_tag = per_tag_accuracy(predicted, gold, split.tags)
    base_tag = per_tag_accuracy(base_predicted, gold, split.tags)
    return {"accuracy": round(acc, 4), "baseline_accuracy": round(baseline, 4), "margin": round(acc - baseline, 4),
            "wall_s": round(hist.seconds, 1), "train_cpu_s": round(hist.cpu_seconds, 1),
            "epochs": round(hist.epochs, 2), "test_tokens": sum(len(g) for g in gold),
            "tags": len(split.tags),
            "per_tag": {t: {"accuracy": round(a, 4), "baseline": round(base_tag[t][0], 4), "n": n}
                        for t, (a, n) in list(per_tag.items())[:15]}}


def ablation_run(job: tuple[str, int, TranslationSplit, argparse.Namespace]) -> tuple[str, int, dict]:
    """One system of ``ABLATIONS`` on one seed, one thread, within the ablation budget: its greedy test scores."""
    name, seed, split, opts = job
    nlpcourse.use_threads(1)
    nlpcourse.seed_everything(seed)
    cfg = Seq2SeqConfig(len(split.src_vocab), len(split.tgt_vocab), **opts.size, **ABLATIONS[name])
    model = build_seq2seq(cfg, seed=seed, device=opts.device)
    train_cfg = Seq2SeqTrainConfig(max_cpu_seconds=opts.ablation_minutes * 60, epochs=opts.max_epochs, seed=seed)
    hist = fit_seq2seq(model, (split.source_ids("train"), split.target_ids("train")),
                       (split.source_ids("valid"), split.target_ids("valid")), train_cfg)
    s = mt_scores(translate(model, split, "test"), split.references("test"))
    return name, seed, {"bleu": round(s.bleu, 2), "chrf": round(s.chrf, 2), "epochs": round(hist.epochs, 2),
                        "best_valid_loss": round(min(hist.valid_loss), 4), "train_cpu_s": round(hist.cpu_seconds, 1)}


def ablations(split: TranslationSplit, opts: argparse.Namespace, say) -> dict:
    """Every system of ``ABLATIONS`` on ``opts.seeds`` seeds; each pair of ``PAIRS`` compared seed by seed."""
    from concurrent.futures import ProcessPoolExecutor

    todo = [(name, seed, split, opts) for seed in range(opts.seeds) for name in ABLATIONS]
    runs: dict[str, dict[int, dict]] = {name: {} for name in ABLATIONS}
    with ProcessPoolExecutor(max_workers=opts.jobs) as pool:
        for name, seed, r in pool.map(ablation_run, todo):
            runs[name][seed] = r
            say(f"  {name}, seed {seed}: BLEU {r['bleu']:.2f}, {r['epochs']:.1f} epochs")
    seeds = range(opts.seeds)
    out: dict = {name: {k: [runs[name][s][k] for s in seeds] for k in runs[name][0]} for name in ABLATIONS}
    out["pairs"] = {}
    for a, b in PAIRS:
        diff = [round(x - y, 2) for x, y in zip(out[a]["bleu"], out[b]["bleu"])]
        out["pairs"][f"{a} - {b}"] = {"diff": diff} | cnn.paired(out[a]["bleu"], out[b]["bleu"])
    out["setup"] = {"seeds": opts.seeds, "cpu_minutes_per_run": opts.ablation_minutes, "threads_per_run": 1,
                    "changes": ABLATIONS, **opts.size, "decoding": "greedy, test part",
                    "date": time.strftime("%Y-%m-%d")}
    return out


def targets(systems: dict, budget: float) -> dict:
    out = {}
    for method in ("greedy", "beam"):
        a, r = systems.get(f"attention_{method}"), systems.get(f"rnn_{method}")
        if a and r:
            gain = a["bleu"] - r["bleu"]
            out[f"attention_gain_{method}"] = {"bleu_gain": round(gain, 2), "target": 5.0, "met": gain >= 5.0}
    for prefix in MODELS:
        g, b = systems.get(f"{prefix}_greedy"), systems.get(f"{prefix}_beam")
        if g and b:
            out[f"{prefix}_beam_vs_greedy"] = {"bleu_gain": round(b["bleu"] - g["bleu"], 2),
                                               "met": b["bleu"] >= g["bleu"]}
            out[f"{prefix}_within_budget"] = {"train_cpu_s": g["train_cpu_s"], "budget_s": budget,
                                              "met": g["train_cpu_s"] <= budget * 1.05}
    return out


def main(argv: list[str] | None = None) -> dict:
    opts = parse(argv)
    torch.set_num_threads(opts.threads)
    nlpcourse.seed_everything(0)
    split = translation_split()
    if opts.tiny:
        split.train, split.valid, split.test = split.train[:256], split.valid[:40], split.test[:40]
    if opts.rescore is not None:
        report = rescore(split, opts, print)
        write_json(opts.json, report)
        return report
    if opts.ablations:
        report = json.loads(opts.json.read_text()) if opts.json and opts.json.exists() else {}
        report["ablations"] = ablations(split, opts, print)
        write_json(opts.json, report)
        return report
    budget = opts.minutes * 60 * opts.threads
    report = {"systems": {}, "tagger": {}, "targets": {}, "setup": setup(split, opts)}
    for prefix in MODELS:
        report["systems"].update(run_model(prefix, split, opts, print))
        report["targets"] = targets(report["systems"], budget)
        write_json(opts.json, report)
    report["tagger"] = run_tagger(opts, print)
    write_json(opts.json, report)
    print("targets:", report["targets"])
    return report


def setup(split: TranslationSplit, opts: argparse.Namespace) -> dict:
    sig = mt_scores(["a"], ["a"])
    return {"pairs": {p: len(split.part(p)) for p in ("train", "valid", "test")},
            "dropped_seen_in_training": split.dropped, "max_tokens": split.max_tokens,
            "src_vocab": len(split.src_vocab), "tgt_vocab": len(split.tgt_vocab), **opts.size,
            "minutes_per_model": opts.minutes, "threads": opts.threads, "device": opts.device,
            "bleu_signature": sig.bleu_signature, "chrf_signature": sig.chrf_signature, "torch": torch.__version__,
            "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}", "date": time.strftime("%Y-%m-%d"),
            "tiny": opts.tiny}


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    p.add_argument("--minutes", type=float, default=5.0, help="training budget per model, minutes x threads")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--threads", type=int, default=2, help="PyTorch threads (default 2)")
    p.add_argument("--save", type=Path, default=None, help="save the two translation models in this folder")
    p.add_argument("--tiny", action="store_true", help="a smoke run in seconds: small data, small models")
    p.add_argument("--ablations", action="store_true", help="only the summary and depth ablations, keeping the "
                   "rest of --json")
    p.add_argument("--rescore", type=Path, default=None, help="only score the models saved in this folder again "
                   "(seq2seq_rnn.pt, seq2seq_attention.pt), keeping what --json says of their training")
    p.add_argument("--seeds", type=int, default=3, help="seeds per ablation system (default 3)")
    p.add_argument("--ablation-minutes", type=float, default=4.0, help="CPU-minutes per ablation run (default 4)")
    p.add_argument("--jobs", type=int, default=1, help="ablation runs at once, one thread each (default 1)")
    opts = p.parse_args(argv)
    if opts.seeds < 1 or opts.jobs < 1:
        p.error("--seeds and --jobs must be at least 1")
    opts.size, opts.max_epochs = {"embed_dim": 128, "hidden_dim": 256}, 100
    if opts.tiny:
        opts.size, opts.max_epochs, opts.minutes = {"embed_dim": 16, "hidden_dim": 16}, 1, 0.5
        opts.ablation_minutes = min(opts.ablation_minutes, 0.1)
    return opts


if __name__ == "__main__":
    main()
