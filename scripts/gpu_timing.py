#!/usr/bin/env python3
"""Time each chapter's main trainer on a device: a fixed, short workload, reported as throughput.

    python scripts/gpu_timing.py                   # cpu, and cuda where there is one
    python scripts/gpu_timing.py --dry-run         # tiny sizes: the same code paths in seconds
    python scripts/gpu_timing.py --json out.json

What is timed: the course's own training code, on the bundled data, with small real configurations
(the sizes of ``benchmarks/*.py`` and the chapters) and a fixed number of steps, never a time budget:

* ``word2vec``: ``Word2Vec.fit`` (skip-gram, negative sampling) on the first words of Austen: words/s;
* ``cnn``: Kim's CNN, an Adam step (``make_optimizer``, ``cnn_loss``) per batch of 50 snippets: tokens/s;
* ``rnnlm``: the 2-layer LSTM LM, ``rnnlm._train_window`` per BPTT window of 32 x 35: tokens/s;
* ``seq2seq``: the attention encoder-decoder, ``seq2seq._train_step`` per batch of 64 verse pairs:
  target tokens/s;
* ``transformer``: the pre-LN Transformer on BPE pieces, ``transformer._train_step``: target pieces/s;
* ``bert``: the masked-LM step of ``scripts/pretrain_bert.py`` (its ``train_step``), in this process: pieces/s;
* ``torchrun``: ``scripts/pretrain_bert.py`` launched by ``python -m torch.distributed.run --standalone``
  (gloo, 2 processes on the CPU; on CUDA nccl, 2 processes when there are 2 GPUs, else a world of one on the
  GPU): pieces/s from the script's per-step loss log.

How: each device gets its own fixed number of steps (more on CUDA, so that both runs last seconds), after one
warm-up step that is not timed; on CUDA the clock is read after ``torch.cuda.synchronize()``. Everything is
seeded. Sizes: on an H200 with 16 cores (2026-11-27) each CUDA run took 3-6 s, each CPU run 2-9 s and the
whole non-dry call about 2 minutes (the two torchrun launches: about 18 s each); a dry run takes seconds. CPU
runs use ``min(8, os.cpu_count())`` torch threads (restored afterwards; torchrun's processes share them). A
trainer that fails records ``{"error": ...}`` and the others go on. ``time_trainers(devices, dry_run)`` returns
one dict per trainer; ``table(rows)`` prints one line per trainer. ``scripts/gpu_check.py`` imports both.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import nlpcourse  # noqa: E402, F401, I001 - first: the thread policy, before torch loads
import torch  # noqa: E402

from nlpcourse.seed import seed_everything  # noqa: E402
from nlpcourse.threads import use_threads  # noqa: E402
from nlpcourse.torchrun import torchrun  # noqa: E402

SEED = 0
PRETRAIN_SCRIPT = ROOT / "scripts" / "pretrain_bert.py"
TRAINERS = ("word2vec", "cnn", "rnnlm", "seq2seq", "transformer", "bert", "torchrun")

Step = Callable[[], tuple[float, int]]  # one training step: (its loss, the units it processed)


@dataclass
class _Job:
    """A prepared workload on one device: an untimed warm-up, then ``steps`` calls of ``step``."""

    step: Step
    steps: int
    warmup: Step | None = None  # None: one call of ``step``


# ------------------------------------------------------------------ the harness


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextlib.contextmanager
def _cpu_threads(device: torch.device) -> Iterator[None]:
    """min(8, cores) threads for a CPU run, torch's and the BLAS libraries' alike (the course's one thread
    policy, ``nlpcourse.use_threads``); the previous number restored after."""
    before = torch.get_num_threads()
    if device.type == "cpu":
        use_threads(min(8, os.cpu_count() or 1))
    try:
        yield
    finally:
        use_threads(before)


def _time_job(job: _Job, device: torch.device) -> dict:
    """Run ``job``'s warm-up, then time its steps: seconds, units per second and the last loss."""
    (job.warmup or job.step)()
    _sync(device)
    units, loss = 0, math.nan
    start = time.perf_counter()
    for _ in range(job.steps):
        loss, n = job.step()
        units += n
    _sync(device)
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "per_second": units / seconds, "final_loss": float(loss)}


def _steps(dry_run: bool, device: torch.device, dry: int, cpu: int, cuda: int) -> int:
    if dry_run:
        return dry
    return cuda if device.type == "cuda" else cpu


def _cycle(items: list) -> Callable[[], object]:
    """A function that returns the items one after the other, round and round."""
    state = {"i": 0}

    def take():
        item = items[state["i"] % len(items)]
        state["i"] += 1
        return item
    return take


# ------------------------------------------------------------------ data, loaded once


@lru_cache(maxsize=2)
def _w2v_corpus(words: int):
    from nlpcourse.data.word_corpus import build_word_corpus, bundled_sentences

    return build_word_corpus(bundled_sentences(("austen",), max_tokens=words), min_count=5)


@lru_cache(maxsize=1)
def _translation():
    from nlpcourse.data.translation import translation_split

    return translation_split()


@lru_cache(maxsize=2)
def _subwords(vocab_size: int):
    from nlpcourse.data.subword import subword_split

    return subword_split(_translation(), vocab_size=vocab_size)


@lru_cache(maxsize=1)
def _pretrain_module():
    """``scripts/pretrain_bert.py`` as a module (its ``main`` is not run)."""
    spec = importlib.util.spec_from_file_location("_pretrain_bert_timed", PRETRAIN_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@lru_cache(maxsize=2)
def _wordpieces_json(vocab_size: int) -> str:
    """One WordPiece vocabulary learnt on the pretraining snippets, shared by ``bert`` and ``torchrun``."""
    from nlpcourse.data.wordpiece import WordPieces, train_wordpiece

    return WordPieces(train_wordpiece(_pretrain_module().training_snippets(), vocab_size)).to_json()


# ------------------------------------------------------------------ the trainers


def _time_word2vec(device: torch.device, dry_run: bool) -> tuple[str, dict]:
    from nlpcourse.data.word_corpus import WordCorpus
    from nlpcourse.models.word2vec import Word2Vec, Word2VecConfig

    words = 20_000 if dry_run else 400_000
    epochs = _steps(dry_run, device, 1, 3, 10)
    corpus = _w2v_corpus(words)
    cfg = Word2VecConfig(epochs=epochs, seed=SEED, noise_table_size=1_000_000 if dry_run else 10_000_000)
    model = Word2Vec(cfg, corpus, device=device)
    head = slice(0, min(len(corpus), 2 * cfg.batch_size))
    warm = WordCorpus(corpus.words, corpus.counts, corpus.ids[head], corpus.sentence[head], head.stop)

    def fit_on(c: WordCorpus) -> Step:
        return lambda: (model.fit(c, progress=False, reports=1).last("loss"), len(c) * cfg.epochs)
    workload = (f"skip-gram D={cfg.dim} window {cfg.window} K={cfg.negatives} batch {cfg.batch_size}, Word2Vec.fit "
                f"on the first {words:,} words of Austen ({len(corpus):,} in vocabulary), epochs: {epochs} on "
                f"{device.type}")
    return workload, _time_job(_Job(fit_on(corpus), 1, warmup=fit_on(warm)), device)


def _time_cnn(device: torch.device, dry_run: bool) -> tuple[str, dict]:
    from nlpcourse.data import review_split
    from nlpcourse.models.cnn import CNNTrainSettings, KimCNN, KimCNNConfig, cnn_loss, labelled_batches, make_optimizer

    split = review_split(SEED)
    part = split.train
    ids = [row[:n].tolist() for row, n in zip(part.ids, part.lengths)]
    settings = CNNTrainSettings(seed=SEED)
    batches = [(b.to(device), y.to(device)) for b, y in labelled_batches(ids, part.labels, settings.batch_size)]
    size = {"embed_dim": 16, "maps": 8} if dry_run else {}
    model = KimCNN(KimCNNConfig(vocab_size=len(split.vocab), **size)).to(device).train()
    opt = make_optimizer(model, settings)
    take = _cycle(batches)

    def step() -> tuple[float, int]:
        example = take()
        loss = cnn_loss(model, example)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item(), int(example[0].lengths.sum())
    steps = _steps(dry_run, device, 4, 150, 800)
    c = model.config
    workload = (f"KimCNN rand, D={c.embed_dim} widths {c.widths} x {c.maps} maps, Adam, batches of "
                f"{settings.batch_size} rotten_tomatoes snippets; {steps} steps on {device.type}")
    return workload, _time_job(_Job(step, steps), device)


def _time_rnnlm(device: torch.device, dry_run: bool) -> tuple[str, dict]:
    from nlpcourse.data import lm_batches, lm_corpus
    from nlpcourse.models.rnnlm import LMTrainConfig, RNNLMConfig, _make_optimizer, _train_window, build_rnnlm

    corpus = lm_corpus("austen", max_chars=200_000 if dry_run else 2_000_000)
    hidden = 32 if dry_run else 256
    model = build_rnnlm(RNNLMConfig(corpus.vocab_size, "lstm", hidden, hidden, layers=2), seed=SEED, device=device)
    cfg = LMTrainConfig(seed=SEED)
    opt = _make_optimizer(model.train(), cfg)
    windows = [(x.to(device), y.to(device)) for x, y in lm_batches(corpus.train, cfg.batch_size, cfg.bptt)]
    windows = [w for w in windows if w[0].shape[1] == cfg.bptt]
    take, box = _cycle(windows), {"state": model.init_state(cfg.batch_size, device)}

    def step() -> tuple[float, int]:
        x, y = take()
        loss, box["state"] = _train_window(model, opt, x, y, box["state"], cfg.clip)
        return loss, x.numel()
    steps = _steps(dry_run, device, 4, 40, 600)
    workload = (f"LSTM LM 2x{hidden}, V={corpus.vocab_size:,} tied, Adam, windows of {cfg.batch_size} x {cfg.bptt} "
                f"Austen tokens; {steps} windows on {device.type}")
    return workload, _time_job(_Job(step, steps), device)


def _time_seq2seq(device: torch.device, dry_run: bool) -> tuple[str, dict]:
    from nlpcourse.data import bucket_batches
    from nlpcourse.models.seq2seq import Seq2SeqConfig, Seq2SeqTrainConfig, _train_step, build_seq2seq, pair_batch

    split = _translation()
    src, tgt = split.source_ids("train"), split.target_ids("train")
    size = {"embed_dim": 16, "hidden_dim": 16} if dry_run else {"embed_dim": 128, "hidden_dim": 256}
    cfg = Seq2SeqConfig(len(split.src_vocab), len(split.tgt_vocab), attention="general", **size)
    model = build_seq2seq(cfg, seed=SEED, device=device).train()
    tcfg = Seq2SeqTrainConfig(seed=SEED)
    opt = torch.optim.Adam(model.parameters(), lr=tcfg.lr)
    batches = [pair_batch(model, src, tgt, index)
               for index in bucket_batches([len(t) for t in tgt], tcfg.batch_size, seed=SEED)]
    take = _cycle(batches)

    def step() -> tuple[float, int]:
        s, t = take()
        return _train_step(model, opt, s, t, tcfg.clip), int((t[:, 1:] != cfg.pad_id).sum())
    steps = _steps(dry_run, device, 4, 40, 400)
    workload = (f"attention (general) encoder-decoder E={cfg.embed_dim} H={cfg.hidden_dim}, Adam, batches of "
                f"{tcfg.batch_size} KJV en-es verse pairs; {steps} steps on {device.type}")
    return workload, _time_job(_Job(step, steps), device)


def _time_transformer(device: torch.device, dry_run: bool) -> tuple[str, dict]:
    from nlpcourse.data import bucket_batches
    from nlpcourse.models.seq2seq import pair_batch
    from nlpcourse.models.transformer import (
        TransformerConfig,
        TransformerTrainConfig,
        _train_step,
        build_transformer,
        warmup_lr,
    )

    sub = _subwords(1000 if dry_run else 4000)
    src, tgt = sub.source_ids("train"), sub.target_ids("train")
    size = (dict(d_model=32, heads=2, enc_layers=1, dec_layers=1, d_ff=64) if dry_run
            else dict(d_model=128, heads=4, enc_layers=3, dec_layers=3, d_ff=512))
    cfg = TransformerConfig(sub.vocab_size, dropout=0.1, **size)
    model = build_transformer(cfg, seed=SEED, device=device).train()
    tcfg = TransformerTrainConfig(seed=SEED)
    opt = torch.optim.Adam(model.parameters(), lr=tcfg.lr, betas=(0.9, 0.98), eps=1e-9)
    batches = [pair_batch(model, src, tgt, index)
               for index in bucket_batches([len(t) for t in tgt], tcfg.batch_size, seed=SEED)]
    take, done = _cycle(batches), {"steps": 0}

    def step() -> tuple[float, int]:
        done["steps"] += 1
        for group in opt.param_groups:
            group["lr"] = warmup_lr(done["steps"], tcfg.lr, tcfg.warmup)
        s, t = take()
        return _train_step(model, opt, s, t, tcfg), int((t[:, 1:] != cfg.pad_id).sum())
    steps = _steps(dry_run, device, 4, 40, 200)
    workload = (f"pre-LN Transformer D={cfg.d_model} H={cfg.heads} {cfg.enc_layers}+{cfg.dec_layers} layers "
                f"F={cfg.d_ff}, BPE {sub.vocab_size}, batches of {tcfg.batch_size} verse pairs; {steps} steps "
                f"on {device.type}")
    return workload, _time_job(_Job(step, steps), device)


def _pretrain_settings(dry_run: bool, steps: int):
    pb = _pretrain_module()
    s = pb.PretrainSettings(**(pb.TINY if dry_run else {}) | {"steps": steps + 2, "seed": SEED})
    s.warmup = min(s.warmup, steps)  # the script wants warmup < steps: these runs are short
    return s


def _time_bert(device: torch.device, dry_run: bool) -> tuple[str, dict]:
    from nlpcourse.data.wordpiece import WordPieces
    from nlpcourse.models.bert import BertConfig, build_bert

    pb = _pretrain_module()
    steps = _steps(dry_run, device, 3, 30, 300)
    s = _pretrain_settings(dry_run, steps)
    wp = WordPieces.from_json(_wordpieces_json(s.vocab_size))
    data = pb.encode_snippets(wp, pb.training_snippets(), s.max_len)
    bert = build_bert(BertConfig(wp.vocab_size, s.d_model, s.heads, s.layers, s.d_ff, s.max_len, dropout=s.dropout),
                      seed=SEED, device=device).train()
    for p in [*bert.pool.parameters(), *bert.nsp.parameters()]:
        p.requires_grad_(False)  # masked-LM only, as the script
    opt = torch.optim.AdamW(bert.parameters(), lr=s.lr, weight_decay=s.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, pb.schedule(s))
    model, world, done = pb.MaskedLM(bert), pb.World(0, 1, device), {"steps": 0}

    def step() -> tuple[float, int]:
        done["steps"] += 1
        return pb.train_step(model, opt, sched, data, s, done["steps"], world, wp.vocab_size)
    workload = (f"mini-BERT masked-LM D={s.d_model} H={s.heads} L={s.layers} F={s.d_ff}, {s.batch} snippets of "
                f"<= {s.max_len} pieces, pretrain_bert.train_step in this process; {steps} steps on {device.type}")
    return workload, _time_job(_Job(step, steps), device)


def _torchrun_launch(device: torch.device) -> tuple[int, dict[str, str], str]:
    """Processes, environment and a description of the launch on ``device`` (the CPU's threads shared out)."""
    env = os.environ | {"NLPCOURSE_PROGRESS": "0", "PYTHONPATH": os.pathsep.join(filter(None, [
        str(ROOT), os.environ.get("PYTHONPATH")]))}
    if device.type != "cuda":
        threads = max(1, min(8, os.cpu_count() or 1) // 2)
        return 2, env | {"CUDA_VISIBLE_DEVICES": ""}, f"2 processes, gloo, CPU, {threads} threads/process"
    if torch.cuda.device_count() >= 2:
        return 2, env, "2 processes, nccl, 2 GPUs"
    return 1, env, "1 process (one GPU: a world of one), nccl"


def _time_torchrun(device: torch.device, dry_run: bool) -> tuple[str, dict]:
    steps = _steps(dry_run, device, 3, 20, 200)
    s = _pretrain_settings(dry_run, steps)
    nproc, env, how = _torchrun_launch(device)
    threads = max(1, min(8, os.cpu_count() or 1) // nproc)
    with tempfile.TemporaryDirectory() as tmp:
        vocab, log, out = (Path(tmp) / name for name in ("wordpiece.json", "loss.jsonl", "bert.pt"))
        vocab.write_text(_wordpieces_json(s.vocab_size))
        args = [*(["--tiny"] if dry_run else []), "--steps", str(s.steps), "--warmup", str(s.warmup),
                "--threads", str(threads), "--tokenizer", str(vocab), "--out", str(out), "--loss-log", str(log)]
        start = time.perf_counter()
        torchrun(PRETRAIN_SCRIPT, args, nproc, env=env, cwd=ROOT, timeout=300, fresh=[log, out])
        wall = time.perf_counter() - start
        rows = [json.loads(line) for line in log.read_text().splitlines()]
    timed = rows[1:]  # the first step is the warm-up
    seconds = rows[-1]["seconds"] - rows[0]["seconds"]
    result = {"seconds": seconds, "per_second": sum(r["pieces"] for r in timed) / seconds,
              "final_loss": float(rows[-1]["loss"]), "launch_seconds": wall}
    workload = (f"torchrun --standalone scripts/pretrain_bert.py{' --tiny' if dry_run else ''} "
                f"(D={s.d_model} L={s.layers}, global batch {s.batch}), {how}; "
                f"{len(timed)} steps timed from the script's loss log on {device.type} (launch wall {wall:.1f} s)")
    return workload, result


_TIMERS: dict[str, tuple[str, Callable[[torch.device, bool], tuple[str, dict]]]] = {
    "word2vec": ("words", _time_word2vec),
    "cnn": ("tokens", _time_cnn),
    "rnnlm": ("tokens", _time_rnnlm),
    "seq2seq": ("target tokens", _time_seq2seq),
    "transformer": ("target pieces", _time_transformer),
    "bert": ("pieces", _time_bert),
    "torchrun": ("pieces", _time_torchrun),
}


# ------------------------------------------------------------------ public


def _time_trainer(name: str, devices: list[str], dry_run: bool) -> dict:
    unit, timer = _TIMERS[name]
    row: dict = {"trainer": name, "unit": unit, "workload": "", "per_device": {}}
    workloads = []
    for dev in devices:
        device = torch.device(dev)
        seed_everything(SEED, deterministic=False)
        try:
            with _cpu_threads(device):
                workload, result = timer(device, dry_run)
            workloads.append(workload)
            row["per_device"][dev] = result
        except Exception as exc:  # noqa: BLE001 - one trainer's failure is recorded, the others still run
            row["per_device"][dev] = {"error": f"{type(exc).__name__}: {exc}"}
            row.setdefault("error", f"{dev}: {type(exc).__name__}: {exc}")
    row["workload"] = " | ".join(workloads)
    rates = {d: r.get("per_second") for d, r in row["per_device"].items()}
    cpu = rates.get("cpu")
    cuda = next((v for d, v in rates.items() if d.startswith("cuda")), None)
    if cpu and cuda:
        row["speedup"] = cuda / cpu
    return row


def time_trainers(devices: list[str], dry_run: bool) -> list[dict]:
    """Time every trainer of :data:`TRAINERS` on each of ``devices`` (``"cpu"``, ``"cuda"``...); ``dry_run``:
    tiny sizes. One dict per trainer: ``trainer``, ``unit``, ``workload``, ``per_device`` ({device: {seconds,
    per_second, final_loss}} or {device: {error}}), ``speedup`` (cuda / cpu) when both ran, ``error`` if any
    device failed."""
    return [_time_trainer(name, list(devices), dry_run) for name in TRAINERS]


def _cell(result: dict) -> str:
    if "error" in result:
        return "error"
    return f"{result['per_second']:>11,.0f}/s {result['seconds']:5.1f}s loss {result['final_loss']:.3f}"


def table(rows: list[dict]) -> str:
    """One line per trainer: units per second (seconds timed, last loss) on each device, the speedup."""
    lines = []
    for row in rows:
        cells = "  ".join(f"{dev}: {_cell(r)}" for dev, r in row["per_device"].items())
        speedup = f"  x{row['speedup']:.1f}" if "speedup" in row else ""
        error = f"  ERROR {row['error'][:200]}" if "error" in row else ""
        lines.append(f"{row['trainer']:<12} {row['unit']:<14} {cells}{speedup}{error}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dry-run", action="store_true", help="tiny sizes (seconds, any machine)")
    p.add_argument("--devices", nargs="+", help="default: cpu, and cuda where there is one")
    p.add_argument("--json", type=Path, help="write the rows here")
    args = p.parse_args(argv)
    devices = args.devices or ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]
    start = time.perf_counter()
    rows = time_trainers(devices, args.dry_run)
    print(table(rows))
    print(f"({time.perf_counter() - start:.1f} s in all)")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
