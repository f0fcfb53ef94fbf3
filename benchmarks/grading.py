#!/usr/bin/env python3
"""Grading throughput: ``grader autograde --workers 2`` against plain sequential ``nbgrader autograde``.

Both grade the same 40 mixed submissions of the assignment ``backprop`` (15 solved, 10 blank,
15 with one planted bug each) in one run, each in a fresh temporary course folder:

    nbgrader     nbgrader's own ``nbgrader autograde backprop`` (sequential, in-kernel verdicts,
                 no sandbox): the baseline
    grader       ``grader autograde backprop --workers 2`` (sandboxed kernels, verdicts outside)

and prints ``grader | seconds | submissions/min`` with the throughput ratio grader/nbgrader.

    .venv/bin/python benchmarks/grading.py [--n 40] [--workers 2] [--json FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from grader.course import load_assignment, load_bugs
from grader.submissions import release_notebook, submission, with_bug, write

ROOT = Path(__file__).resolve().parents[1]
BUGS = load_bugs(load_assignment("backprop"))

BIN = Path(sys.executable).parent


def mixed_submissions(n: int) -> list[tuple[str, object]]:
    """n submissions: 3/8 solved, 1/4 blank, 3/8 with one planted bug (cycling through BUGS)."""
    subs = []
    for i in range(n):
        kind = i % 8
        if kind in (0, 3, 6):
            subs.append((f"solved{i:02d}", submission("backprop")))
        elif kind in (1, 5):
            subs.append((f"blank{i:02d}", release_notebook("backprop")))
        else:
            bug = BUGS[i % len(BUGS)]
            subs.append((f"bug{i:02d}", with_bug("backprop", bug)))
    return subs


def run(cmd: list[str], cwd: Path) -> float:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def bench_nbgrader(subs, tmp: Path) -> float:
    course = tmp / "nbgrader"
    (course / "source").mkdir(parents=True)
    shutil.copytree(ROOT / "solutions" / "backprop", course / "source" / "backprop",
                    ignore=shutil.ignore_patterns("reference.py", "bugs.py", "test_*.py", "__pycache__"))
    (course / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.course_id = 'bench'\n")
    run([str(BIN / "nbgrader"), "generate_assignment", "backprop", "--force"], course)
    for student, nb in subs:
        write(nb, course / "submitted" / student / "backprop", ".", "backprop.ipynb")
    return run([str(BIN / "nbgrader"), "autograde", "backprop"], course)


def bench_grader(subs, tmp: Path, workers: int) -> float:
    folder = tmp / "submissions"
    for student, nb in subs:
        write(nb, folder, student, "backprop.ipynb")
    return run([str(BIN / "grader"), "--course-dir", str(tmp / "grading"), "autograde", "backprop",
                "--submissions", str(folder), "--workers", str(workers)], ROOT)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=40, help="number of submissions (default 40)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    args = ap.parse_args()
    subs = mixed_submissions(args.n)
    with tempfile.TemporaryDirectory() as tmp:
        t_nb = bench_nbgrader(subs, Path(tmp))
        t_gr = bench_grader(subs, Path(tmp), args.workers)
    rate = {"nbgrader": args.n / t_nb * 60, "grader": args.n / t_gr * 60}
    print(f"{args.n} mixed submissions of backprop, {os.cpu_count()} CPUs")
    print(f"{'grader':<38} | {'seconds':>8} | {'submissions/min':>15}")
    print(f"{'-' * 38}-+-{'-' * 8}-+-{'-' * 15}")
    print(f"{'nbgrader autograde (sequential)':<38} | {t_nb:8.1f} | {rate['nbgrader']:15.1f}")
    print(f"{f'grader autograde --workers {args.workers}':<38} | {t_gr:8.1f} | {rate['grader']:15.1f}")
    print(f"throughput ratio grader/nbgrader: {rate['grader'] / rate['nbgrader']:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"n": args.n, "workers": args.workers, "nbgrader_s": t_nb,
                                         "grader_s": t_gr, "ratio": rate["grader"] / rate["nbgrader"]}, indent=1))


if __name__ == "__main__":
    main()
