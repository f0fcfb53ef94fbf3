"""English -> Spanish verse translation: the Transformer (post-LN and pre-LN) against the attention RNN of the
seq2seq chapter, on the same test verses, in sacreBLEU's BLEU and chrF, each trained on the same CPU budget;
and hand-written attention against ``F.scaled_dot_product_attention`` on growing lengths.

Data: ``nlpcourse.data.translation.translation_split()`` (KJV -> Reina-Valera 1909, verses of at most 20
word tokens each side, whole chapters dealt 80/10/10, seed 0), so the test verses and references are the
seq2seq chapter's. The RNN reads lower-cased words (vocabularies of training words seen twice or more);
the Transformers read pieces of one BPE learnt on the training part, English and Spanish together
(``nlpcourse.data.subword``, 4,000 pieces). Every system's translations are detokenised text scored by
sacreBLEU against the bundled Spanish verses (case-insensitive; the signatures are in ``setup``).

Systems (names as in the JSON):

* ``attention_rnn``: ``nlpcourse.models.seq2seq.Seq2Seq``, bidirectional GRU encoder, GRU decoder with
  Luong's general attention (embeddings 128, 256 units, dropout 0.2), Adam 2e-3 halved when validation
  stops improving: the seq2seq chapter's model and recipe;
* ``transformer_postln``, ``transformer_preln``: ``nlpcourse.models.transformer.Transformer`` (D 128, 4
  heads, 3 encoder + 3 decoder layers, feed-forward 512, dropout 0.1, sinusoidal positions, tied
  embeddings), LayerNorm after each residual sum (the paper's) or before each sub-layer; Adam (0.9, 0.98)
  with linear warm-up then inverse square-root decay, label smoothing 0.1, the last 5 epoch ends averaged.

Each model trains until it has used ``--minutes`` x ``--threads`` CPU-minutes (default 10 x 2: the issue's
"10 minutes on 2 cores"), counted as the process's CPU time, per-epoch validation included. Every system
is scored with beam search (5 hypotheses, log P / length^alpha, alpha chosen on validation verses among
0.5, 1, 1.5) and greedily (``greedy_bleu``). ``wall_s`` is training plus beam-decoding the test part.

``attention_speed``: one attention layer's forward and backward (B 8, 4 heads of 32, float32) for lengths
T = 64 .. 2048, written out (``softmax(QK^T/sqrt(d)) V``, the (T,T) weights materialised) and through
``F.scaled_dot_product_attention`` (PyTorch's fused kernel where one applies), median of repeats.

``decoding`` (``--decoding``: only this part, on the saved checkpoints of the chapters, the other entries of
``--json`` kept): seconds to translate the first ``--decode-verses`` test verses (default 200), greedily and
with the beam (5, the alpha chosen for the system), by the Transformer chapter's model with its key-value
cache and without it (re-reading the prefix at every step), and by the seq2seq chapter's attention RNN, in
one run; ``same_output`` says that the cache changed no translation.

``warmup_study`` (``--warmup``: only this part, the other entries of ``--json`` kept): a deeper model than the
chapter's (6 + 6 layers, otherwise its sizes) trained for one epoch of batches of 32 on the training pairs
(at most ``WARMUP_STUDY["steps"]`` steps; ``setup["steps_run"]``), Adam (0.9, 0.98) at a constant rate of 1e-3
from the first step, post-LN and pre-LN, and post-LN with a linear warm-up over the first
``WARMUP_STUDY["warmup"]`` steps; gradients clipped at 1 as in the chapter's recipe, label smoothing 0.1. The
training loss, as the mean of each whole block of 25 steps (a last, shorter block left out), per seed (the
initialisation, the batch order and the dropout), ``--jobs`` runs at once on one thread each.

Targets: ``transformer_*`` BLEU at least ``attention_rnn``'s within the same CPU budget.

    python benchmarks/transformer.py --json benchmarks/results/transformer.json --save data/checkpoints  # ~45 min
    python benchmarks/transformer.py --tiny                                                              # seconds
    OMP_WAIT_POLICY=PASSIVE python benchmarks/transformer.py --decoding --threads 1 \
        --json benchmarks/results/transformer.json                                                       # ~4 min
    OMP_WAIT_POLICY=PASSIVE python benchmarks/transformer.py --warmup --jobs 2 \
        --json benchmarks/results/transformer.json                                                       # ~8 min

``--json FILE`` writes ``{"systems": {NAME: {"bleu", "chrf", "wall_s", ...}}, "attention_speed": [...],
"targets": {...}, "setup": {...}}`` after every step.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch
import torch.nn.functional as F

import nlpcourse
from nlpcourse.data.batching import bucket_batches, pad_batch
from nlpcourse.data.subword import SubwordSplit, load_subword_split, subword_split
from nlpcourse.data.translation import TranslationSplit, mt_scores, translation_split
from nlpcourse.models import seq2seq, transformer
from nlpcourse.report import write_json
from nlpcourse.train import save_checkpoint

ALPHAS = (0.5, 1.0, 1.5)
BEAM = 5
SPEED_LENGTHS = (64, 128, 256, 512, 1024, 2048)
TRANSFORMERS = {"transformer_postln": False, "transformer_preln": True}  # name -> norm_first
CHAPTER_MODEL = "transformer_preln"  # the system --save writes: the Transformer chapter's model
#: The warm-up study (``--warmup``): depth, steps, batch, constant rate, warm-up steps, seeds, block of steps.
WARMUP_STUDY = {"layers": 6, "steps": 300, "batch": 32, "lr": 1e-3, "warmup": 100, "seeds": 3, "block": 25}
#: Its runs: name -> (norm_first, warm-up steps).
WARMUP_RUNS = {"postln_no_warmup": (False, 0), "preln_no_warmup": (True, 0),
               "postln_warmup": (False, WARMUP_STUDY["warmup"])}


class Translator:
    """A trained model with the functions that decode it and turn its ids into text."""

    def __init__(self, model: torch.nn.Module, module, source_ids: Callable[[str], list[list[int]]],
                 to_text: Callable[[Sequence[int]], str], max_len: int):
        self.model, self.module, self.source_ids, self.to_text, self.max_len = (model, module, source_ids,
                                                                                to_text, max_len)

    def translate(self, part: str, beam: int = 1, alpha: float = 1.0, limit: int | None = None,
                  batch_size: int = 64) -> list[str]:
        """Detokenised translations of the first ``limit`` verses of a part: greedy when ``beam`` is 1."""
        src, out = self.source_ids(part)[:limit], []
        device = next(self.model.parameters()).device
        for i in range(0, len(src), batch_size):
            batch = pad_batch(src[i:i + batch_size]).tokens.to(device)  # (B,S)
            d = (self.module.greedy_decode(self.model, batch, self.max_len) if beam == 1
                 else self.module.beam_decode(self.model, batch, self.max_len, beam, alpha))
            out += [self.to_text(ids) for ids in d.ids]
        return out


def score_system(tr: Translator, split: TranslationSplit, trained: dict, opts: argparse.Namespace, say) -> dict:
    """Greedy and beam scores on the test part, alpha chosen on validation verses."""
    valid_refs = split.references("valid")[:opts.alpha_verses]
    valid_bleu = {a: mt_scores(tr.translate("valid", BEAM, a, opts.alpha_verses), valid_refs).bleu for a in ALPHAS}
    alpha = max(ALPHAS, key=lambda a: (valid_bleu[a], -a))
    refs = split.references("test")
    greedy = mt_scores(tr.translate("test"), refs)
    start = time.perf_counter()
    hyps = tr.translate("test", BEAM, alpha)
    decode_s = time.perf_counter() - start
    s = mt_scores(hyps, refs)
    say(f"  BLEU {s.bleu:.2f} chrF {s.chrf:.2f} (beam {BEAM}, alpha {alpha}; greedy {greedy.bleu:.2f}; "
        f"{decode_s:.0f} s to decode)")
    return {"bleu": round(s.bleu, 2), "chrf": round(s.chrf, 2), "wall_s": round(trained["train_wall_s"] + decode_s, 1),
            "decode_s": round(decode_s, 1), "greedy_bleu": round(greedy.bleu, 2), "greedy_chrf": round(greedy.chrf, 2),
            "beam": BEAM, "alpha": alpha, "valid_bleu_by_alpha": {str(a): round(b, 2) for a, b in valid_bleu.items()},
            **trained, "examples": [{"src": p.src, "ref": p.tgt, "hyp": h} for p, h in list(zip(split.test, hyps))[:5]]}


def run_rnn(split: TranslationSplit, opts: argparse.Namespace, say) -> dict:
    cfg = seq2seq.Seq2SeqConfig(len(split.src_vocab), len(split.tgt_vocab), attention="general", **opts.rnn_size)
    model = seq2seq.build_seq2seq(cfg, seed=0, device=opts.device)
    train_cfg = seq2seq.Seq2SeqTrainConfig(max_cpu_seconds=opts.budget, epochs=opts.max_epochs)
    hist = seq2seq.fit_seq2seq(model, (split.source_ids("train"), split.target_ids("train")),
                               (split.source_ids("valid"), split.target_ids("valid")), train_cfg)
    say(f"attention_rnn: {hist.epochs:.1f} epochs, {hist.cpu_seconds:.0f} CPU-s, valid loss {hist.valid_loss[-1]:.3f}")
    trained = {"epochs": round(hist.epochs, 2), "train_wall_s": round(hist.seconds, 1),
               "train_cpu_s": round(hist.cpu_seconds, 1), "cpu_budget_s": opts.budget,
               "parameters": sum(p.numel() for p in model.parameters()), "tokens": "words",
               "valid_loss": [round(v, 4) for v in hist.valid_loss]}
    tr = Translator(model, seq2seq, split.source_ids, split.decode, split.max_tokens + 5)
    return score_system(tr, split, trained, opts, say)


def run_transformer(name: str, sub: SubwordSplit, opts: argparse.Namespace, say) -> dict:
    cfg = transformer.TransformerConfig(sub.vocab_size, norm_first=TRANSFORMERS[name], **opts.tf_size)
    model = transformer.build_transformer(cfg, seed=0, device=opts.device)
    train_cfg = transformer.TransformerTrainConfig(max_cpu_seconds=opts.budget, epochs=opts.max_epochs, **opts.tf_train)
    hist = transformer.fit_transformer(model, (sub.source_ids("train"), sub.target_ids("train")),
                                       (sub.source_ids("valid"), sub.target_ids("valid")), train_cfg)
    say(f"{name}: {hist.epochs:.1f} epochs ({hist.steps} steps), {hist.cpu_seconds:.0f} CPU-s, valid loss "
        f"{hist.valid_loss[-1]:.3f}, averaged {hist.averaged_valid_loss:.3f}")
    trained = {"epochs": round(hist.epochs, 2), "steps": hist.steps, "train_wall_s": round(hist.seconds, 1),
               "train_cpu_s": round(hist.cpu_seconds, 1), "cpu_budget_s": opts.budget,
               "parameters": sum(p.numel() for p in model.parameters()), "tokens": f"BPE {sub.vocab_size}",
               "valid_loss": [round(v, 4) for v in hist.valid_loss],
               "train_loss": [round(v, 4) for v in hist.train_loss],
               "averaged_valid_loss": round(hist.averaged_valid_loss, 4), "averaged": hist.averaged}
    if opts.save is not None and name == CHAPTER_MODEL:
        save_checkpoint(opts.save / f"{name}.pt", model.half(), cfg,
                        extra={"history": hist.to_dict(), "train_config": vars(train_cfg),
                               "split": {"max_tokens": sub.split.max_tokens, "seed": 0},
                               "tokenizer": sub.to_json()})
        model.float()
    tr = Translator(model, transformer, sub.source_ids, sub.decode, opts.max_pieces)
    return score_system(tr, sub.split, trained, opts, say)


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def _backward(attend: Callable, qkv: tuple[torch.Tensor, ...]) -> None:
    attend(*qkv).sum().backward()
    if qkv[0].is_cuda:
        torch.cuda.synchronize()


def written_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T / sqrt(Dh)) v, the (T,T) weights materialised."""
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B,H,T,Dh) x (B,H,Dh,T) -> (B,H,T,T)
    return torch.softmax(scores, dim=-1) @ v  # (B,H,T,T) x (B,H,T,Dh) -> (B,H,T,Dh)


def attention_speed(opts: argparse.Namespace, say) -> list[dict]:
    """Forward + backward time of both attentions at each length."""
    rows, g = [], torch.Generator().manual_seed(0)
    for T in opts.speed_lengths:
        q, k, v = (torch.randn(8, 4, T, 32, generator=g).to(opts.device).requires_grad_() for _ in range(3))
        row = {"T": T, "scores_mib": round(8 * 4 * T * T * 4 / 2 ** 20, 1)}
        for name, attend in (("written", written_attention), ("sdpa", F.scaled_dot_product_attention)):
            row[f"{name}_ms"] = round(_median_ms(lambda a=attend, qkv=(q, k, v): _backward(a, qkv), opts.repeats), 2)
        row["speedup"] = round(row["written_ms"] / row["sdpa_ms"], 2)
        say(f"  T={T}: written {row['written_ms']} ms, sdpa {row['sdpa_ms']} ms ({row['speedup']}x)")
        rows.append(row)
    return rows


def _timed(fn: Callable[[], list[str]]) -> tuple[float, list[str]]:
    start = time.perf_counter()
    out = fn()
    return round(time.perf_counter() - start, 1), out


def decoding_speed(split: TranslationSplit, systems: dict, opts: argparse.Namespace, say) -> dict:
    """Test-part decoding time of the chapters' saved models: the Transformer with and without its cache,
    and the attention RNN (see the module's docstring)."""
    folder = Path(nlpcourse.__file__).resolve().parents[1] / "data" / "checkpoints"
    ckpt = nlpcourse.load_checkpoint(folder / f"{CHAPTER_MODEL}.pt", build=transformer.transformer_from_config)
    sub = load_subword_split(split, ckpt.extra["tokenizer"])
    model = ckpt.model.float().eval().to(opts.device)
    alpha = systems.get(CHAPTER_MODEL, {}).get("alpha", 1.0)
    out = {}
    for cache in (True, False):
        decode = _Uncached if not cache else transformer
        tr = Translator(model, decode, sub.source_ids, sub.decode, opts.max_pieces)
        row = {}
        row["greedy_s"], greedy = _timed(lambda t=tr: t.translate("test", limit=opts.decode_verses))
        row["beam_s"], beam = _timed(lambda t=tr: t.translate("test", BEAM, alpha, opts.decode_verses))
        out["cache" if cache else "no_cache"], out[f"hyps_{cache}"] = row, (greedy, beam)
        say(f"  {CHAPTER_MODEL}, {'with' if cache else 'without'} the cache: greedy {row['greedy_s']} s, "
            f"beam {row['beam_s']} s")
    out["same_output"] = out.pop("hyps_True") == out.pop("hyps_False")
    rnn = nlpcourse.load_checkpoint(folder / "seq2seq_attention.pt", build=seq2seq.seq2seq_from_config)
    tr = Translator(rnn.model.float().eval().to(opts.device), seq2seq, split.source_ids, split.decode,
                    split.max_tokens + 5)
    rnn_alpha = systems.get("attention_rnn", {}).get("alpha", 0.5)
    n = opts.decode_verses
    out["attention_rnn"] = {"greedy_s": _timed(lambda: tr.translate("test", limit=n))[0],
                            "beam_s": _timed(lambda: tr.translate("test", BEAM, rnn_alpha, n))[0]}
    say(f"  attention_rnn: greedy {out['attention_rnn']['greedy_s']} s, beam {out['attention_rnn']['beam_s']} s")
    out.update(verses=len(split.test[:n]), alpha=alpha, rnn_alpha=rnn_alpha, beam=BEAM, threads=opts.threads,
               omp_wait_policy=os.environ.get("OMP_WAIT_POLICY", "default"), device=opts.device,
               torch=torch.__version__, date=time.strftime("%Y-%m-%d"))
    return out


class _Uncached:
    """The decoding functions of ``nlpcourse.models.transformer`` without the key-value cache."""

    @staticmethod
    def greedy_decode(model, src, max_len):
        return transformer.greedy_decode(model, src, max_len, cache=False)

    @staticmethod
    def beam_decode(model, src, max_len, beam, alpha):
        return transformer.beam_decode(model, src, max_len, beam, alpha, cache=False)


def warmup_run(job: tuple[str, int, SubwordSplit, dict, dict]) -> tuple[str, int, list[float]]:
    """One run of the warm-up study: the mean training loss of each block of steps (one thread)."""
    name, seed, sub, size, study = job
    torch.set_num_threads(1)
    norm_first, warmup = WARMUP_RUNS[name]
    warmup = warmup and study["warmup"]
    train = (sub.source_ids("train"), sub.target_ids("train"))
    cfg = transformer.TransformerConfig(sub.vocab_size, norm_first=norm_first, **{
        **size, "enc_layers": study["layers"], "dec_layers": study["layers"]})
    model = transformer.build_transformer(cfg, seed=seed).train()
    opt = torch.optim.Adam(model.parameters(), lr=study["lr"], betas=(0.9, 0.98), eps=1e-9)
    batches = bucket_batches([len(t) for t in train[1]], study["batch"], seed=seed)[:study["steps"]]  # one epoch
    torch.manual_seed(seed)  # the dropout masks
    losses = []
    for step, index in enumerate(batches, 1):
        for group in opt.param_groups:
            group["lr"] = study["lr"] * (min(1.0, step / warmup) if warmup else 1.0)
        loss = transformer.smoothed_loss(model, *seq2seq.pair_batch(model, *train, index), smoothing=0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    k = study["block"]
    whole = range(0, len(losses) - k + 1, k)  # the whole blocks of k steps
    return name, seed, [round(statistics.fmean(losses[i:i + k]), 4) for i in whole]


def warmup_study(sub: SubwordSplit, opts: argparse.Namespace, say) -> dict:
    """Every run of WARMUP_RUNS on WARMUP_STUDY["seeds"] seeds (see the module's docstring)."""
    from concurrent.futures import ProcessPoolExecutor

    study = opts.warmup_study
    todo = [(name, seed, sub, opts.tf_size, study) for seed in range(study["seeds"]) for name in WARMUP_RUNS]
    curves: dict[str, dict[int, list[float]]] = {name: {} for name in WARMUP_RUNS}
    with ProcessPoolExecutor(max_workers=opts.jobs) as pool:
        for name, seed, curve in pool.map(warmup_run, todo):
            curves[name][seed] = curve
            say(f"  {name}, seed {seed}: " + " ".join(f"{v:.2f}" for v in curve))
    epoch = bucket_batches([len(t) for t in sub.target_ids("train")], study["batch"])  # as many for every seed
    steps_run = min(study["steps"], len(epoch))
    return {"curves": {name: [c[s] for s in sorted(c)] for name, c in curves.items()},
            "setup": {**study, "steps_run": steps_run, "d_model": opts.tf_size["d_model"],
                      "heads": opts.tf_size["heads"], "d_ff": opts.tf_size["d_ff"],
                      "dropout": opts.tf_size["dropout"], "clip": 1.0,
                      "smoothing": 0.1, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}}


def targets(systems: dict) -> dict:
    rnn, out = systems.get("attention_rnn"), {}
    for name in TRANSFORMERS:
        if rnn and name in systems:
            gain = systems[name]["bleu"] - rnn["bleu"]
            out[f"{name}_vs_attention_rnn"] = {"bleu_gain": round(gain, 2), "met": gain >= 0}
    for name, s in systems.items():
        out[f"{name}_within_budget"] = {"train_cpu_s": s["train_cpu_s"], "budget_s": s["cpu_budget_s"],
                                        "met": s["train_cpu_s"] <= s["cpu_budget_s"] * 1.05}
    return out


def main(argv: list[str] | None = None) -> dict:
    opts = parse(argv)
    torch.set_num_threads(opts.threads)
    nlpcourse.seed_everything(0)
    split = translation_split()
    if opts.decoding or opts.warmup:
        report = json.loads(opts.json.read_text()) if opts.json and opts.json.exists() else {"systems": {}}
        if opts.decoding:
            print("decoding the test part:")
            report["decoding"] = decoding_speed(split, report["systems"], opts, print)
        else:
            print("the warm-up study (training loss per block of steps):")
            report["warmup_study"] = warmup_study(subword_split(split, opts.bpe_vocab), opts, print)
        write_json(opts.json, report)
        return report
    if opts.tiny:
        split.train, split.valid, split.test = split.train[:256], split.valid[:40], split.test[:40]
    sub = subword_split(split, opts.bpe_vocab)
    report = {"systems": {}, "attention_speed": [], "targets": {}, "setup": setup(sub, opts)}
    for name in opts.systems:
        report["systems"][name] = (run_rnn(split, opts, print) if name == "attention_rnn"
                                   else run_transformer(name, sub, opts, print))
        report["targets"] = targets(report["systems"])
        write_json(opts.json, report)
    print("attention speed (forward + backward):")
    report["attention_speed"] = attention_speed(opts, print)
    write_json(opts.json, report)
    print("targets:", report["targets"])
    return report


def setup(sub: SubwordSplit, opts: argparse.Namespace) -> dict:
    sig, split = mt_scores(["a"], ["a"]), sub.split
    return {"pairs": {p: len(split.part(p)) for p in ("train", "valid", "test")}, "max_tokens": split.max_tokens,
            "src_vocab": len(split.src_vocab), "tgt_vocab": len(split.tgt_vocab), "bpe_vocab": sub.vocab_size,
            "rnn": opts.rnn_size, "transformer": opts.tf_size, "transformer_train": opts.tf_train,
            "cpu_budget_s": opts.budget, "minutes_per_model": opts.minutes, "threads": opts.threads,
            "device": opts.device, "alpha_verses": opts.alpha_verses, "bleu_signature": sig.bleu_signature,
            "chrf_signature": sig.chrf_signature, "torch": torch.__version__,
            "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}", "date": time.strftime("%Y-%m-%d"),
            "tiny": opts.tiny}


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", type=Path, default=None, help="also write the results to this file")
    p.add_argument("--minutes", type=float, default=10.0, help="training budget per model, minutes x threads")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--threads", type=int, default=2, help="PyTorch threads (default 2)")
    p.add_argument("--systems", nargs="+", default=["attention_rnn", *TRANSFORMERS],
                   choices=["attention_rnn", *TRANSFORMERS], help="which systems to train (default: all)")
    p.add_argument("--save", type=Path, default=None, help="save the chapter's model (pre-LN) in this folder")
    p.add_argument("--tiny", action="store_true", help="a smoke run in seconds: small data, small models")
    p.add_argument("--decoding", action="store_true",
                   help="only time decoding with the saved checkpoints, keeping the rest of --json")
    p.add_argument("--decode-verses", type=int, default=200, help="test verses --decoding translates")
    p.add_argument("--warmup", action="store_true",
                   help="only the warm-up study (post-LN and pre-LN without warm-up), keeping the rest of --json")
    p.add_argument("--jobs", type=int, default=1, help="--warmup runs at once, one thread each (default 1)")
    opts = p.parse_args(argv)
    opts.rnn_size = {"embed_dim": 128, "hidden_dim": 256}
    opts.tf_size = {"d_model": 128, "heads": 4, "enc_layers": 3, "dec_layers": 3, "d_ff": 512, "dropout": 0.1}
    opts.tf_train = {"lr": 1.5e-3, "warmup": 300, "smoothing": 0.1, "average_last": 5}
    opts.bpe_vocab, opts.max_epochs, opts.max_pieces, opts.alpha_verses = 4000, 200, 80, 300
    opts.speed_lengths, opts.repeats, opts.warmup_study = SPEED_LENGTHS, 5, WARMUP_STUDY
    if opts.tiny:
        opts.rnn_size = {"embed_dim": 16, "hidden_dim": 16}
        opts.tf_size = {"d_model": 16, "heads": 2, "enc_layers": 1, "dec_layers": 1, "d_ff": 32, "dropout": 0.1}
        opts.tf_train = {**opts.tf_train, "warmup": 10}
        opts.bpe_vocab, opts.max_epochs, opts.max_pieces, opts.alpha_verses = 300, 1, 20, 10
        opts.speed_lengths, opts.repeats, opts.minutes = (16, 32), 1, 0.5
        opts.warmup_study = {**WARMUP_STUDY, "layers": 2, "steps": 6, "batch": 8, "warmup": 3, "seeds": 2,
                             "block": 3}
    opts.budget = opts.minutes * 60 * opts.threads
    return opts


if __name__ == "__main__":
    main()
