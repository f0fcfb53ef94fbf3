#!/usr/bin/env python3
"""The thread policy measured (nlpcourse/threads.py): OpenMP's default wait policy against PASSIVE, on a quiet
machine and with one busy single-threaded process beside the work, the way a browser tab or the grader's
other kernel would be.

The workload, in a fresh process, ``--runs`` times per setting (the median is reported): the course's word2vec
trainer on two threads (``torch.set_num_threads(2)``), the first 500,000 words of the bundled corpus, two epochs,
skip-gram then CBOW: seconds of each ``fit``. (The grader's kernels get the policy whatever their parent's
environment says, so a grading batch cannot be timed without it here; benchmarks/grading.py times grading, and
grader/README.md has the profile before and after.)

"default" leaves ``OMP_WAIT_POLICY`` empty, which OpenMP ignores (its default: spin a while, then sleep);
"passive" is the course's policy.

    .venv/bin/python benchmarks/threads.py [--runs 3] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

WORD2VEC = """
import json, time
import nlpcourse
import torch
from nlpcourse.data.word_corpus import build_word_corpus, bundled_sentences
from nlpcourse.models.word2vec import Word2Vec, Word2VecConfig
torch.set_num_threads(2)
sentences, n = [], 0
for s in bundled_sentences():
    sentences.append(s)
    n += len(s)
    if n >= 500_000:
        break
corpus = build_word_corpus(sentences, min_count=5)
out = {}
for arch in ("skipgram", "cbow"):
    model = Word2Vec(Word2VecConfig(architecture=arch, epochs=2), corpus)
    start = time.perf_counter()
    model.fit(corpus, progress=False)
    out[arch] = time.perf_counter() - start
print(json.dumps(out))
"""

POLICIES = {"default": "", "passive": "PASSIVE"}


def _env(policy: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_", "MKL_"))}
    return {**env, "OMP_WAIT_POLICY": POLICIES[policy], "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}"}


class Busy:
    """One busy single-threaded process for the duration of a ``with`` block (or none)."""

    def __init__(self, busy: bool):
        self.busy, self.proc = busy, None

    def __enter__(self):
        if self.busy:
            self.proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        return self

    def __exit__(self, *exc):
        if self.proc:
            self.proc.kill()
            self.proc.wait()


def word2vec(policy: str, busy: bool) -> dict[str, float]:
    with Busy(busy):
        out = subprocess.run([sys.executable, "-c", WORD2VEC], capture_output=True, text=True, check=True,
                             env=_env(policy), cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    workloads = {"word2vec": word2vec}
    out: dict = {"runs": args.runs, "cpus": os.cpu_count()}
    for name, fn in workloads.items():
        for busy in (False, True):
            for policy in POLICIES:
                runs = [fn(policy, busy) for _ in range(args.runs)]
                med = {k: round(statistics.median(r[k] for r in runs), 2) for k in runs[0]}
                out[f"{name}/{'busy' if busy else 'quiet'}/{policy}"] = med
                print(f"{name:<9} {'busy' if busy else 'quiet':<6} {policy:<8} "
                      + "  ".join(f"{k} {v:.2f} s" for k, v in med.items()), flush=True)
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
