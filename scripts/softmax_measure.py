"""Measure cheaper softmaxes against the full one on the RNN LM chapter's word-level Austen (V = 10,001).

``nlpcourse.models.softmax``: the full softmax, the class-based softmax (Goodman 2001; Mikolov et al. 2011;
sqrt-frequency classes, C = round(sqrt(V)) = 100) and the sampled softmax (Jean et al. 2015; k negatives
from the unigram^0.75, shared by the batch), all at H = 256:

* ``output_layer``: forward + backward of the output layer alone on a batch of N = B*T = 1120 random
  hidden states whose targets are real training windows (the class softmax's cost depends on which
  classes the targets fall in), in microseconds of CPU time per token; and the cost of the full
  distribution over V (``log_prob``, forward only), which evaluation needs;
* ``lm``: a 1-layer LSTM LM of 256 units (untied, no dropout), the same initial weights, trained with
  each output layer for the *same number of windows* (the same text: the comparison is of what each
  loss makes of the same data; the CPU seconds each took are reported beside it), Adam 2e-3, clipping
  0.25, on ``--seeds`` seeds (default 3: mean, ``test_ppl_std`` and every run), then scored on the
  whole test text with the full distribution (the sampled-softmax model is evaluated with the full
  softmax; the class model with its exact class-factored distribution).

Times are CPU seconds of this process (``time.process_time``), which a busy machine disturbs less than
wall time. Seeded; one thread by default. The default run takes about 12 CPU-minutes:

    python scripts/softmax_measure.py --json benchmarks/results/softmax.json
    python scripts/softmax_measure.py --tiny --json /tmp/softmax.json   # seconds, for tests
"""
from __future__ import annotations

import argparse
import dataclasses
import math
import platform
import statistics
import time
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import torch
from torch import nn

import nlpcourse
from nlpcourse.data.batching import lm_batches
from nlpcourse.data.lm_corpus import LMCorpus, lm_corpus
from nlpcourse.models.rnnlm import RNNLMConfig, build_rnnlm, detach_state, lm_perplexity
from nlpcourse.models.softmax import (
    ClassSoftmax,
    FullSoftmax,
    SampledSoftmax,
    expected_rows,
    frequency_classes,
)
from nlpcourse.report import write_json

CONTEXT = 200  # tokens before the test part that warm the state up (the chapter's protocol)


@dataclass
class Settings:
    """Everything that decides the numbers (written to the JSON)."""

    hidden: int = 256  # H = E: LSTM units and embedding size
    n_classes: int | None = None  # C of the class softmax (None: round(sqrt(V)))
    class_power: float = 0.5  # classes of equal count**power mass (0.5: Mikolov's toolkit)
    proposal_power: float = 0.75  # Q of the sampled softmax: unigram**power
    ks: tuple[int, ...] = (64, 512)  # negatives of the sampled softmax
    batch_size: int = 32  # B
    bptt: int = 35  # T
    windows: int = 300  # training windows of B*T tokens for each LM (300: 336,000 tokens, 0.58 epoch)
    lr: float = 2e-3  # Adam
    clip: float = 0.25  # global gradient norm
    timing_reps: int = 10  # timed forward+backward passes of each output layer (after 2 warm-up passes)
    max_chars: int | None = None  # characters of Austen read (None: all; --tiny reads a little)
    test_tokens: int | None = None  # test tokens scored (None: all)
    threads: int = 1
    seed: int = 0  # the first seed (initial weights and samples); the LMs train on seeds seed..seed+seeds-1
    seeds: int = 3  # trained LMs per output layer


def parse(argv: list[str] | None) -> tuple[Settings, Path | None, bool]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    p.add_argument("--windows", type=int, default=None, help="training windows per LM (default 300)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=3, help="trained LMs per output layer (default 3)")
    p.add_argument("--tiny", action="store_true", help="seconds: a small model on 30,000 characters")
    args = p.parse_args(argv)
    if args.seeds < 1:
        p.error(f"--seeds must be at least 1, got {args.seeds}")
    s = Settings(threads=args.threads, seed=args.seed, seeds=args.seeds)
    if args.tiny:
        s = dataclasses.replace(s, hidden=16, windows=5, batch_size=8, bptt=10, timing_reps=2, max_chars=30_000,
                                test_tokens=500, ks=(8, 32), seeds=min(args.seeds, 2))
    if args.windows is not None:
        s = dataclasses.replace(s, windows=args.windows)
    return s, args.json, args.tiny


def make_heads(s: Settings, counts: torch.Tensor) -> dict[str, nn.Module]:
    """Every output layer measured, freshly initialised from ``s.seed``."""
    V = len(counts)
    classes = frequency_classes(counts, s.n_classes, s.class_power)
    q = counts.double() ** s.proposal_power  # (V,) every count >= 1: every word drawable
    log_q = (q / q.sum()).log().float()  # (V,) log Q
    torch.manual_seed(s.seed)
    heads = {"full": FullSoftmax(s.hidden, V), "class": ClassSoftmax(s.hidden, classes)}
    for k in s.ks:
        heads[f"sampled_{k}"] = SampledSoftmax(s.hidden, log_q, k, torch.Generator().manual_seed(s.seed))
    return heads


# ------------------------------------------------------------------ (a) the output layer alone


def time_output_layer(head: nn.Module, H: int, targets: list[torch.Tensor], reps: int) -> dict:
    """CPU microseconds per token of loss + backward (training) and of log_prob (the full distribution)."""
    g = torch.Generator().manual_seed(0)
    N = targets[0].numel()
    hs = [torch.randn(N, H, generator=g, requires_grad=True) for _ in targets]

    def train_pass(i: int) -> None:
        head.zero_grad(set_to_none=True)
        head.loss(hs[i % len(hs)], targets[i % len(targets)].reshape(-1)).backward()

    def eval_pass(i: int) -> None:
        with torch.no_grad():
            head.log_prob(hs[i % len(hs)])

    out = {}
    for name, one in (("train", train_pass), ("log_prob", eval_pass)):
        for i in range(2):  # warm-up: allocator, kernels
            one(i)
        start = time.process_time()
        for i in range(reps):
            one(i)
        out[f"{name}_us_per_token"] = (time.process_time() - start) / (reps * N) * 1e6
    return out


def measure_output_layers(s: Settings, corpus: LMCorpus, counts: torch.Tensor) -> dict:
    heads = make_heads(s, counts)
    targets = [y for _, y in islice(lm_batches(corpus.train, s.batch_size, s.bptt), s.timing_reps)]
    report = {name: time_output_layer(head, s.hidden, targets, s.timing_reps) for name, head in heads.items()}
    full = report["full"]["train_us_per_token"]
    for r in report.values():
        r["train_speedup"] = full / r["train_us_per_token"]
        r["train_tokens_per_cpu_s"] = 1e6 / r["train_us_per_token"]
    report["class"]["expected_rows"] = expected_rows(heads["class"].classes, counts)  # full: V
    report["class"]["n_classes"] = heads["class"].n_classes
    return report


# ------------------------------------------------------------------ (b) LSTM LMs with each output layer


class HeadLM(nn.Module):
    """Embedding, LSTM and an output layer with ``loss(h, y)`` and ``log_prob(h)``; ``forward`` gives the
    normalised log-probabilities (B,T,V), so ``lm_perplexity`` (which takes a log_softmax) scores it as is."""

    def __init__(self, embed: nn.Embedding, rnn: nn.LSTM, head: nn.Module):
        super().__init__()
        self.embed, self.rnn, self.head = embed, rnn, head

    def hidden(self, x: torch.Tensor, state=None) -> tuple[torch.Tensor, tuple]:
        return self.rnn(self.embed(x), state)  # (B,T) -> (B,T,E) -> (B,T,H)

    def forward(self, x: torch.Tensor, state=None) -> tuple[torch.Tensor, tuple]:
        out, state = self.hidden(x, state)  # (B,T,H)
        return self.head.log_prob(out), state  # (B,T,V)


def train_lm(model: HeadLM, s: Settings, train: torch.Tensor) -> dict:
    """``s.windows`` windows of truncated BPTT; returns the CPU seconds and tokens."""
    opt = torch.optim.Adam(model.parameters(), lr=s.lr)
    model.train()
    state, tokens, start = None, 0, time.process_time()
    for x, y in islice(lm_batches(train, s.batch_size, s.bptt), s.windows):
        out, state = model.hidden(x, state)  # (B,T,H)
        loss = model.head.loss(out, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), s.clip)
        opt.step()
        if not math.isfinite(loss.item()):
            raise FloatingPointError(f"the loss became {loss.item()} after {tokens} tokens")
        state, tokens = detach_state(state), tokens + x.numel()
    cpu = time.process_time() - start
    return {"train_tokens": tokens, "train_cpu_s": cpu, "train_tokens_per_cpu_s": tokens / cpu}


def measure_lms(s: Settings, corpus: LMCorpus, counts: torch.Tensor) -> dict:
    """Each output layer under the same embedding and LSTM, trained on ``s.seeds`` seeds: the mean test
    perplexity, its standard deviation and every run."""
    runs: dict[str, list[dict]] = {}
    for seed in range(s.seed, s.seed + s.seeds):
        for name, r in measure_lm_seed(dataclasses.replace(s, seed=seed), corpus, counts).items():
            runs.setdefault(name, []).append({"seed": seed, **r})
    return {name: summarise_runs(rs) for name, rs in runs.items()}


def summarise_runs(runs: list[dict]) -> dict:
    out = {key: statistics.fmean(r[key] for r in runs) for key in runs[0] if key != "seed"}
    ppl = [r["test_ppl"] for r in runs]
    return {**out, "test_ppl_std": statistics.stdev(ppl) if len(ppl) > 1 else 0.0, "seeds": len(runs),
            "runs": runs}


def measure_lm_seed(s: Settings, corpus: LMCorpus, counts: torch.Tensor) -> dict:
    test = corpus.test if s.test_tokens is None else corpus.test[:s.test_tokens]
    context = corpus.context_before("test", CONTEXT)
    report = {}
    for name, head in make_heads(s, counts).items():
        base = build_rnnlm(RNNLMConfig(corpus.vocab_size, "lstm", s.hidden, s.hidden, layers=1, dropout=0.0,
                                       tie_weights=False), seed=s.seed)  # the same embedding and LSTM each time
        model = HeadLM(base.embed, base.rnn, head)
        r = train_lm(model, s, corpus.train)
        start = time.process_time()
        r["test_ppl"] = lm_perplexity(model, test, context)
        r["eval_cpu_s"] = time.process_time() - start
        report[name] = r
        print(f"seed {s.seed} {name:12s} test ppl {r['test_ppl']:7.1f}  {r['train_tokens_per_cpu_s']:7.0f} "
              f"training tokens per CPU-s  ({r['train_cpu_s']:.0f} + {r['eval_cpu_s']:.0f} CPU-s)", flush=True)
    return report


def main(argv: list[str] | None = None) -> dict:
    s, path, tiny = parse(argv)
    nlpcourse.use_threads(s.threads)
    nlpcourse.seed_everything(s.seed)
    start = time.process_time()
    corpus = lm_corpus("austen", "word", 10_000, s.max_chars)
    counts = torch.bincount(corpus.train, minlength=corpus.vocab_size).clamp_min(1)  # (V,)
    layers = measure_output_layers(s, corpus, counts)
    for name, r in layers.items():
        print(f"{name:12s} output layer: {r['train_us_per_token']:7.2f} us per token (x{r['train_speedup']:.1f}), "
              f"log_prob {r['log_prob_us_per_token']:.2f} us per token", flush=True)
    report = {"output_layer": layers, "lm": measure_lms(s, corpus, counts),
              "setup": {**dataclasses.asdict(s), "corpus": "austen", "vocab_size": corpus.vocab_size,
                        "output_layer_tokens": s.batch_size * s.bptt, "train_tokens": len(corpus.train),
                        "test_tokens": len(corpus.test) if s.test_tokens is None else s.test_tokens,
                        "budget": "the same training windows for every output layer",
                        "torch": torch.__version__, "machine": f"{platform.machine()}, {platform.processor() or 'cpu'}",
                        "tiny": tiny},
              "cpu_s_total": time.process_time() - start}
    write_json(path, report)
    print(f"{report['cpu_s_total']:.0f} CPU-s in all" + (f"; wrote {path}" if path else ""))
    return report


if __name__ == "__main__":
    main()
