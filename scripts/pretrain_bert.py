"""Pretrain the pretraining chapter's small BERT (``nlpcourse.models.bert``) with the masked-LM objective, in
one process or in several under ``torchrun`` (DistributedDataParallel: gloo on CPU, nccl on CUDA).

The text (``--corpus``) is the movie-review snippets of the training part of the CNN chapter's split (by
movie, seed 0; ``reviews``, the default): unlabelled here, they are the task's own text, what task-adaptive
pretraining reads before the classifier is fine-tuned (Gururangan et al., 2020). Or it is all the English the
course ships (``english``: the Brown corpus, Austen, Shakespeare and the King James Bible, about 3.6 million
words), its consecutive sentences packed into segments of at most ``--max-len`` pieces, as BERT packed its
text. A WordPiece vocabulary is learnt on the text of the run (for ``english``, on it and the snippets
together, so that a later stage on the snippets shares it), or read back from the state being resumed or the
checkpoint a stage starts from (``--init``); each snippet or segment becomes ``[CLS] pieces [SEP]``.

Two stages, as in Gururangan et al.: pretrain on the English first, then go on with the snippets from its
checkpoint (``--init``: its weights and vocabulary, a new optimiser and schedule):

    python scripts/pretrain_bert.py --corpus english --steps 12000 --warmup 600 --threads 2 \
        --out data/checkpoints/bert_english.pt                   # 6,234 s on 2 cores
    python scripts/pretrain_bert.py --init data/checkpoints/bert_english.pt --steps 2000 --lr 5e-4 \
        --threads 2 --out data/checkpoints/bert_english_tapt.pt  # 874 s

Every step reads one **global** batch of ``--batch`` snippets, drawn from ``(seed, step)`` alone, and masks
it with a generator seeded the same way, so the data do not depend on how many processes share the work:
the global batch is cut into ``world_size x accumulate`` equal micro-batches, each process runs its share,
and each micro-batch's loss is its masked pieces' summed cross-entropy divided by the masked pieces of the
whole global batch (times the world size, as DDP averages the gradients). The gradient of a step is then
the one-process gradient of the global batch, up to the order of the floating-point sums; with dropout 0
the loss curves of 1 and 2 processes agree to about 1e-5 (``tests/test_bert.py``).

Every ``--save-every`` steps and at the end, process 0 writes, atomically, the resumable state (weights,
AdamW's moments, the schedule, the step, the vocabulary, the losses) to ``OUT.state``; at the end also
the model alone (weights, config, vocabulary, losses) to ``OUT``, which ``load_checkpoint(OUT,
build=bert_from_config)`` reads.

    python scripts/pretrain_bert.py --steps 4000 --out data/checkpoints/bert.pt
    torchrun --standalone --nproc_per_node 2 scripts/pretrain_bert.py --steps 4000 --threads 1 --out ...
    python scripts/pretrain_bert.py --steps 4000 --stop-at 1000 --out ...   # then --resume OUT.state
    python scripts/pretrain_bert.py --resume data/checkpoints/bert.pt.state --steps 4000 --out ...
    python scripts/pretrain_bert.py --tiny --steps 8 --dropout 0 --loss-log /tmp/a.jsonl --out /tmp/b.pt

Going from one machine to several changes only the launch: ``torchrun --nnodes 2 --nproc_per_node 8
--rdzv-backend c10d --rdzv-endpoint HOST:PORT`` on every machine (the rendezvous tells each process its
rank and the world size); the script reads them from the environment.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import nlpcourse
from nlpcourse.data import load_brown, load_lines, load_reviews, load_text, sentences, split_indices
from nlpcourse.data.batching import pad_batch
from nlpcourse.data.wordpiece import CLS_ID, PAD_ID, SEP_ID, WordPieces, train_wordpiece
from nlpcourse.errors import ConfigError, CourseError, FormatError
from nlpcourse.models.bert import IGNORE, Bert, BertConfig, build_bert, mlm_corrupt


@dataclass
class PretrainSettings:
    """What a run does; saved in its state and its checkpoint."""

    vocab_size: int = 4000  # WordPiece pieces learnt on the training snippets
    d_model: int = 128  # D
    heads: int = 4  # H
    layers: int = 4  # L
    d_ff: int = 512  # F
    max_len: int = 64  # pieces per snippet, [CLS] and [SEP] included (longer ones are cut)
    dropout: float = 0.1  # BERT's; 0 makes runs on different numbers of processes agree
    batch: int = 64  # snippets per optimiser step, over all processes and accumulation steps
    accumulate: int = 1  # micro-batches per process and step (gradient accumulation)
    steps: int = 4000  # optimiser steps in all (a resumed run goes on to this many)
    lr: float = 1e-3  # AdamW's peak rate
    warmup: int = 200  # steps of linear warm-up; then linear decay to 0 at ``steps``
    weight_decay: float = 0.01
    clip: float = 1.0  # global gradient-norm bound
    seed: int = 0  # the initial weights, and with the step number every batch and its masking
    corpus: str = "reviews"  # "reviews": the training snippets; "english": the course's English, packed


CORPORA = ("reviews", "english")
#: The English the course ships, in the order a segment never crosses: Brown, Austen, Shakespeare, the KJV.
ENGLISH = ("brown", "austen", "shakespeare", "kjv")
#: The settings a stage started with ``--init`` must share with the checkpoint it starts from.
ARCHITECTURE = ("vocab_size", "d_model", "heads", "layers", "d_ff", "max_len")

TINY = dict(vocab_size=600, d_model=32, heads=2, layers=2, d_ff=64, max_len=32, batch=16, warmup=2, lr=2e-3)


# ------------------------------------------------------------------ processes


@dataclass
class World:
    rank: int  # this process's number
    size: int  # processes in all
    device: torch.device

    @property
    def main(self) -> bool:
        return self.rank == 0


def join_world() -> World:
    """The process group torchrun describes in the environment (``RANK``, ``WORLD_SIZE``...), or a world of
    one. nccl on CUDA (one GPU per process, ``LOCAL_RANK``), gloo on CPU."""
    if "RANK" not in os.environ:
        return World(0, 1, torch.device("cuda" if torch.cuda.is_available() else "cpu"))
    cuda = torch.cuda.is_available()
    dist.init_process_group("nccl" if cuda else "gloo")
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    return World(dist.get_rank(), dist.get_world_size(), device)


def all_sum(x: torch.Tensor, world: World) -> torch.Tensor:
    if world.size > 1:
        dist.all_reduce(x, op=dist.ReduceOp.SUM)
    return x


# ------------------------------------------------------------------ data


def training_snippets() -> list[str]:
    """The review snippets of the training part of the CNN chapter's split (by movie, seed 0)."""
    reviews = load_reviews()
    train = split_indices(len(reviews), (0.8, 0.1, 0.1), seed=0, groups=[r.movie for r in reviews])[0]
    return [reviews[i].text for i in train]


def encode_snippets(wp: WordPieces, texts: list[str], max_len: int) -> list[list[int]]:
    return [wp.pair(t, max_len=max_len).ids for t in texts]


@lru_cache(maxsize=1)
def english_texts(max_sentences: int | None = None) -> list[list[str]]:
    """The sentences of each corpus of ENGLISH, as text (Brown's words joined by spaces; a verse a sentence
    for the KJV); at most ``max_sentences`` of each (None: all). Read once: the vocabulary and the segments
    both need them."""
    def of(name: str) -> list[str]:
        if name == "brown":
            text = (" ".join(word for word, _ in sent) for sent in load_brown())
            return [t.replace("``", '"').replace("''", '"') for t in text]  # Brown's quotes as text's
        return load_lines(name) if name == "kjv" else sentences(load_text(name))

    return [of(name)[:max_sentences] for name in ENGLISH]


def pack_segments(wp: WordPieces, corpora: list[list[str]], max_len: int) -> list[list[int]]:
    """``[CLS] pieces [SEP]`` segments of at most ``max_len`` ids: consecutive sentences of one corpus, as many
    as fit; a sentence longer than a segment is cut into segments of its own."""
    room, out = max_len - 2, []
    for texts in corpora:
        current: list[int] = []
        for enc in wp.tokenizer.encode_batch(texts):
            ids = enc.ids
            if current and len(current) + len(ids) > room:
                out.append(current)
                current = []
            while len(ids) > room:
                out.append(ids[:room])
                ids = ids[room:]
            current += ids
        if current:
            out.append(current)
    return [[CLS_ID, *seg, SEP_ID] for seg in out]


def training_data(wp: WordPieces, s: PretrainSettings, max_sentences: int | None = None) -> list[list[int]]:
    """The id lists a run draws its batches from."""
    if s.corpus == "english":
        return pack_segments(wp, english_texts(max_sentences), s.max_len)
    return encode_snippets(wp, training_snippets(), s.max_len)


def global_batch(data: list[list[int]], s: PretrainSettings, step: int, vocab: int):
    """(inputs, labels) (batch, T) of ``step``: the same on every process, whatever their number."""
    g = torch.Generator().manual_seed(s.seed * 1_000_003 + step)
    index = torch.randint(len(data), (s.batch,), generator=g).tolist()
    ids = pad_batch([data[i] for i in index]).tokens
    return mlm_corrupt(ids, g, vocab=vocab)


def my_micro_batches(inputs, labels, s: PretrainSettings, world: World):
    """This process's ``accumulate`` slices of the global batch."""
    size = s.batch // (world.size * s.accumulate)
    starts = [(world.rank * s.accumulate + a) * size for a in range(s.accumulate)]
    return [(inputs[i:i + size], labels[i:i + size]) for i in starts]


# ------------------------------------------------------------------ one step


def train_step(model, opt, sched, data, s: PretrainSettings, step: int, world: World,
               vocab: int) -> tuple[float, int]:
    """One optimiser step on the global batch of ``step``: its mean masked-LM loss (nats per masked piece)
    and its pieces (padding not counted)."""
    inputs, labels = global_batch(data, s, step, vocab)
    masked = max(int((labels != IGNORE).sum()), 1)  # of the whole global batch
    total = torch.zeros((), device=world.device)
    micro = my_micro_batches(inputs, labels, s, world)
    for a, (x, y) in enumerate(micro):
        x, y = x.to(world.device), y.to(world.device)
        sync = a == len(micro) - 1 or not isinstance(model, DistributedDataParallel)
        with model.no_sync() if not sync else contextlib.nullcontext():
            loss_sum = model(x, y)
            (loss_sum * world.size / masked).backward()  # DDP averages over processes: the world's sum
        total += loss_sum.detach()
    torch.nn.utils.clip_grad_norm_(model.parameters(), s.clip)
    opt.step()
    sched.step()
    opt.zero_grad(set_to_none=True)
    return float(all_sum(total, world)) / masked, int((inputs != PAD_ID).sum())


class MaskedLM(torch.nn.Module):
    """The masked-LM loss as one forward pass, so that DistributedDataParallel sees every weight it must
    synchronise used inside ``forward``. The head runs at the masked positions only: the (B,T,V) logits of
    every position cost more than the whole encoder and the loss never reads 85% of them."""

    def __init__(self, bert: Bert):
        super().__init__()
        self.bert = bert

    def forward(self, ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        """(b,T) inputs and labels -> the summed cross-entropy of the masked pieces."""
        chosen = labels != IGNORE  # (b,T)
        logits = self.bert.mlm_logits(self.bert(ids)[chosen])  # (b,T,D)[chosen] -> (N,D) -> (N,V)
        return F.cross_entropy(logits, labels[chosen], reduction="sum")


def schedule(s: PretrainSettings):
    def factor(step: int) -> float:  # step counts from 0 in LambdaLR: the rate of step + 1
        step += 1
        return step / s.warmup if step <= s.warmup else max(0.0, (s.steps - step) / max(1, s.steps - s.warmup))
    return factor


# ------------------------------------------------------------------ the run


@dataclass
class RunOptions:
    """Where a run writes, and how it starts and stops (not part of what it computes)."""

    out: Path  # the model checkpoint; the resumable state goes to OUT.state
    resume: Path | None = None  # an OUT.state to go on from
    log: Path | None = None  # one JSON line per step (seconds: since the run's first step, resumed parts added)
    save_every: int = 0  # write OUT.state every so many steps (0: at the end only)
    stop_at: int | None = None  # stop after this step (the schedule still runs to ``steps``): resume later
    progress: bool = False
    tokenizer: str | None = None  # a saved vocabulary instead of learning one
    init: Path | None = None  # a checkpoint of an earlier stage: its weights and vocabulary start this run
    max_sentences: int | None = None  # of each English corpus (tests); None: all

    @property
    def state(self) -> Path:
        return self.out.with_name(self.out.name + ".state")


@dataclass
class Run:
    """A model, its optimiser and schedule, and the losses of the steps done."""

    settings: PretrainSettings
    model: Bert
    opt: torch.optim.Optimizer
    sched: torch.optim.lr_scheduler.LambdaLR
    wp: WordPieces
    losses: list[float]
    seconds: float = 0.0  # wall time of the steps done, over every resumed part of the run
    stages: list = dataclasses.field(default_factory=list)  # the earlier stages: settings, losses, seconds

    def save_state(self, path: Path) -> None:
        """The resumable state, written atomically."""
        payload = {"model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
                   "schedule": self.sched.state_dict(), "step": len(self.losses),
                   "settings": dataclasses.asdict(self.settings), "tokenizer": self.wp.to_json(),
                   "losses": self.losses, "seconds": self.seconds, "stages": self.stages}
        tmp = path.with_name(path.name + ".tmp")
        torch.save(payload, tmp)
        tmp.replace(path)

    def save_model(self, path: Path) -> None:
        nlpcourse.save_checkpoint(path, self.model, self.model.config, extra={
            "tokenizer": self.wp.to_json(), "losses": self.losses, "seconds": self.seconds,
            "settings": dataclasses.asdict(self.settings), "stages": self.stages})


def start(s: PretrainSettings, o: RunOptions, world: World) -> Run:
    """A fresh run, or the one saved in ``o.resume`` (its settings, with ``s.steps``)."""
    state = load_state(o.resume) if o.resume else None
    if state is not None:
        s = dataclasses.replace(PretrainSettings(**state["settings"]), steps=s.steps)
    earlier = initial_stage(o.init, s) if o.init and state is None else None
    _check(s, world)
    saved = state["tokenizer"] if state else earlier.extra["tokenizer"] if earlier else o.tokenizer
    wp = vocabulary(saved, s, world, o.max_sentences)
    config = BertConfig(wp.vocab_size, s.d_model, s.heads, s.layers, s.d_ff, s.max_len, dropout=s.dropout)
    model = build_bert(config, seed=s.seed, device=world.device).train()
    opt = torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=s.weight_decay)
    run = Run(s, model, opt, torch.optim.lr_scheduler.LambdaLR(opt, schedule(s)), wp, [])
    if earlier is not None:
        model.load_state_dict(earlier.state_dict)
        run.stages = [*earlier.extra.get("stages", []), {k: earlier.extra[k] for k in ("settings", "losses",
                                                                                        "seconds")}]
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        run.sched.load_state_dict(state["schedule"])
        run.losses, run.seconds = list(state["losses"]), float(state.get("seconds", 0.0))
        run.stages = list(state.get("stages", []))
    for p in [*model.pool.parameters(), *model.nsp.parameters()]:
        p.requires_grad_(False)  # masked-LM only (next-sentence prediction dropped, as RoBERTa did)
    return run


def initial_stage(path: Path, s: PretrainSettings):
    """The checkpoint an ``--init`` run starts from; refused unless its architecture is ``s``'s."""
    earlier = nlpcourse.load_checkpoint(path)  # a DataError naming the path if there is none
    theirs = earlier.extra.get("settings") or {}
    differ = [f"--{k.replace('_', '-')} {getattr(s, k)} (the checkpoint: {theirs.get(k)})"
              for k in ARCHITECTURE if theirs.get(k) != getattr(s, k)]
    if differ:
        raise ConfigError(f"pretrain_bert: --init {path} has another architecture: {', '.join(differ)}")
    return earlier


def load_state(path: Path) -> dict:
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError as exc:
        raise ConfigError(f"pretrain_bert: no state to resume at {path}") from exc
    except Exception as exc:  # torch raises several types for a damaged or foreign file
        raise FormatError(f"pretrain_bert: {path} is not a state written by this script: {exc}") from exc


def vocabulary(saved: str | None, s: PretrainSettings, world: World, max_sentences: int | None = None) -> WordPieces:
    """The saved vocabulary, or one learnt on the training snippets (and the English, for ``english``); every
    process gets process 0's (learning is not exactly reproducible, see ``nlpcourse.data.wordpiece``)."""
    if saved:
        wp = WordPieces.from_json(saved)
    else:
        english = [t for c in english_texts(max_sentences) for t in c] if s.corpus == "english" else []
        texts = training_snippets() + english
        wp = WordPieces(train_wordpiece(texts, s.vocab_size))
    if world.size > 1:
        shared = [wp.to_json()]
        dist.broadcast_object_list(shared, src=0)
        wp = WordPieces.from_json(shared[0])
    return wp


def pretrain(s: PretrainSettings, o: RunOptions, world: World) -> list[float]:
    """Run the steps after the last one done, up to ``s.steps`` (or ``o.stop_at``); save; the losses."""
    run = start(s, o, world)
    data = training_data(run.wp, run.settings, o.max_sentences)
    wrapped = DistributedDataParallel(MaskedLM(run.model)) if world.size > 1 else MaskedLM(run.model)
    steps = range(len(run.losses) + 1, min(run.settings.steps, o.stop_at or run.settings.steps) + 1)
    if o.progress and world.main:
        from tqdm import tqdm
        steps = tqdm(steps, desc="pretraining", unit="step")
    if world.main and o.log is not None and o.resume is not None:
        trim_log(o.log, len(run.losses))
    begin = time.perf_counter()
    for step in steps:
        loss, pieces = train_step(wrapped, run.opt, run.sched, data, run.settings, step, world, run.wp.vocab_size)
        run.losses.append(loss)
        if world.main and o.log is not None:
            with open(o.log, "a") as fh:
                fh.write(json.dumps({"step": step, "loss": loss, "pieces": pieces,
                                     "seconds": run.seconds + time.perf_counter() - begin}) + "\n")
        if world.main and o.save_every and step % o.save_every == 0:
            dataclasses.replace(run, seconds=run.seconds + time.perf_counter() - begin).save_state(o.state)
    run.seconds += time.perf_counter() - begin
    if world.main:
        run.save_state(o.state)
        run.save_model(o.out)
    return run.losses


def trim_log(path: Path, steps: int) -> None:
    """Keep the loss log's lines of the first ``steps`` steps: a run killed after its last save logged steps that
    the resumed run takes again. Rewritten atomically."""
    if path.exists():
        kept = [line for line in path.read_text().splitlines() if json.loads(line)["step"] <= steps]
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("".join(line + "\n" for line in kept))
        tmp.replace(path)


def _check(s: PretrainSettings, world: World) -> None:
    share = world.size * s.accumulate
    if s.batch % share:
        raise ConfigError(f"pretrain_bert: --batch {s.batch} must be a multiple of processes x --accumulate "
                          f"= {world.size} x {s.accumulate}")
    if not 1 <= s.warmup < s.steps:
        raise ConfigError(f"pretrain_bert: --warmup must be in [1, --steps), got {s.warmup} and {s.steps}")
    if s.corpus not in CORPORA:
        raise ConfigError(f"pretrain_bert: --corpus must be one of {', '.join(CORPORA)}, got {s.corpus!r}")
    if not 0.0 <= s.dropout < 1.0 or s.lr <= 0 or not math.isfinite(s.lr):
        raise ConfigError("pretrain_bert: --dropout must be in [0, 1) and --lr positive")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for f in dataclasses.fields(PretrainSettings):
        p.add_argument("--" + f.name.replace("_", "-"), type=type(f.default), default=None)
    p.add_argument("--tiny", action="store_true", help="a model of seconds, for tests")
    p.add_argument("--out", type=Path, default=Path("data/checkpoints/bert.pt"))
    p.add_argument("--resume", type=Path, help="the OUT.state of an earlier run: go on to --steps")
    p.add_argument("--loss-log", type=Path, help="append one JSON line per step (process 0); --resume drops the "
                   "lines of steps after the state's")
    p.add_argument("--tokenizer", type=Path, help="a saved WordPiece vocabulary (JSON) instead of learning one")
    p.add_argument("--init", type=Path, help="a checkpoint of an earlier stage: start from its weights and "
                   "vocabulary, with a new optimiser and schedule")
    p.add_argument("--max-sentences", type=int, help="of each English corpus (tests); default all")
    p.add_argument("--save-every", type=int, default=0, help="write OUT.state every so many steps")
    p.add_argument("--stop-at", type=int, help="stop after this step, the schedule unchanged (resume later)")
    p.add_argument("--threads", type=int, help="torch threads per process")
    p.add_argument("--progress", action="store_true", help="a progress bar (process 0)")
    args = p.parse_args(argv)
    given = {f.name: getattr(args, f.name) for f in dataclasses.fields(PretrainSettings)
             if getattr(args, f.name) is not None}
    s = PretrainSettings(**((TINY if args.tiny else {}) | given))
    if args.threads:
        torch.set_num_threads(args.threads)
    world = join_world()
    try:
        options = RunOptions(args.out, args.resume, args.loss_log, args.save_every, args.stop_at, args.progress,
                             args.tokenizer.read_text() if args.tokenizer else None, args.init, args.max_sentences)
        losses = pretrain(s, options, world)
        if world.size > 1:  # leave together: none closes its gloo connections while process 0 still saves
            dist.barrier()
        if world.main:
            print(f"{len(losses)} steps, last loss {losses[-1]:.3f}; wrote {args.out}")
    except CourseError as exc:  # a bad setting: its message, not a traceback
        raise SystemExit(f"{exc}") from None
    finally:
        if world.size > 1:
            dist.destroy_process_group()


if __name__ == "__main__":
    main()
