#!/usr/bin/env python3
"""Grading throughput, every assignment: ``grader autograde --workers 2`` against nbgrader's own ``autograde``.

For each assignment, the same standard submissions (the solution, the blank release and the solution with
each planted bug: what the test suite grades) are graded in one run by

    nbgrader     nbgrader's own ``nbgrader autograde A``: one submission after another, verdicts inside the
                 kernel, no sandbox (the baseline); the hidden tests only record, so nbgrader runs the
                 notebook's cells as a student's Jupyter would, the notebook's own training run included
    grader       ``grader autograde A --workers 2``: sandboxed kernels, verdicts outside, the trained part
                 run once on the grader's seed

each in a fresh temporary course folder. The table gives, per assignment, the seconds of each for all the
submissions, their ratio nbgrader / grader (the goal: at least 2 on the 2-core machine), and the grader's
seconds per submission (the worker's time on it, kernel start included) for the solution and on average over
the planted bugs, with nbgrader's per submission (from the times its autograded notebooks were written).
``--suite`` also times the test suite's grading stage (``pytest -n 2 --dist loadfile -m grading``).

    .venv/bin/python benchmarks/grading.py [--assignments backprop cnn] [--suite] [--json FILE [--update]]

``--update`` keeps the rows of ``FILE`` for the assignments not measured this time. Every row says when and at
which commit it was measured (``measured``, ``commit``), so that rows of different runs are never mistaken for
one run (each row's two timings always come from the same run).

``--json FILE`` writes ``{"assignments": {NAME: {"submissions", "grader_s", "nbgrader_s", "ratio",
"grader_per_submission": {"solution", "bugs_mean"}, "nbgrader_per_submission": {"solution", "bugs_mean"}}},
"suite_grading_s", "setup"}``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nlpcourse  # noqa: F401 - first: the thread policy, before torch loads
from grader.course import assignments, load_assignment
from grader.submissions import standard_submissions, write

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _env() -> dict[str, str]:
    return dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")


def run(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=_env(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def _split(per_student: dict[str, float]) -> dict[str, float]:
    bugs = [s for k, s in per_student.items() if k.startswith("bug-")]
    return {"solution": round(per_student.get("solution", float("nan")), 2),
            "bugs_mean": round(statistics.mean(bugs), 2) if bugs else float("nan")}


def bench_nbgrader(name: str, subs: dict, tmp: Path) -> tuple[float, dict[str, float]]:
    """nbgrader's own autograde, sequential, on a course of its own built from the source folder."""
    a = load_assignment(name)
    course = tmp / "nbgrader"
    (course / "source").mkdir(parents=True)
    shutil.copytree(ROOT / "solutions" / name, course / "source" / name,
                    ignore=shutil.ignore_patterns("reference.py", "bugs.py", "test_*.py", "__pycache__"))
    (course / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.course_id = 'bench'\n"
                                               "c.ExecutePreprocessor.timeout = 600\n")
    run([str(BIN / "nbgrader"), "generate_assignment", name, "--force"], course)
    for student, nb in subs.items():
        write(nb, course / "submitted" / student / name, ".", a.notebook)
    start = time.time()
    seconds = run([str(BIN / "nbgrader"), "autograde", name], course)
    # nbgrader grades the students one after another, in sorted order, and writes each one's notebook when
    # it is done: the gaps between those times are its seconds per submission
    done = sorted((p.stat().st_mtime, p.parts[-3]) for p in (course / "autograded").glob(f"*/{name}/{a.notebook}"))
    per, last = {}, start
    for mtime, student in done:
        per[student], last = mtime - last, mtime
    return seconds, per


def bench_grader(name: str, subs: dict, tmp: Path, workers: int) -> tuple[float, dict[str, float]]:
    a = load_assignment(name)
    folder = tmp / "submissions"
    for student, nb in subs.items():
        write(nb, folder, student, a.notebook)
    course = tmp / "grading"
    seconds = run([str(BIN / "grader"), "--course-dir", str(course), "autograde", name, "--submissions", str(folder),
                   "--workers", str(workers)], ROOT)
    per = {p.parent.name: json.loads(p.read_text()).get("seconds", float("nan"))
           for p in (course / "work" / name).glob("*/result.json")}
    return seconds, per


def _commit() -> str:
    """The short hash of HEAD, with ``+`` when the tree has changes."""
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.strip()
    return head.stdout.strip() + ("+" if dirty else "")


def bench_suite() -> float:
    """The test suite's grading stage, as ``make test`` runs it."""
    return run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile", "-m", "grading", "tests",
                "solutions"], ROOT)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--assignments", nargs="*", default=None, help="default: every assignment")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--suite", action="store_true", help="also time the test suite's grading stage")
    ap.add_argument("--json", type=Path, help="also write the numbers to this file")
    ap.add_argument("--update", action="store_true", help="keep FILE's rows of the assignments not measured")
    args = ap.parse_args()
    names = args.assignments or assignments()
    kept = json.loads(args.json.read_text())["assignments"] if args.update and args.json.exists() else {}
    out: dict = {"assignments": {k: v for k, v in kept.items() if k not in names}, "suite_grading_s": None,
                 "setup": {"cpus": os.cpu_count(), "workers": args.workers, "python": platform.python_version(),
                           "machine": platform.machine(), "torch": __import__("torch").__version__}}
    print(f"{'assignment':<12} | {'subs':>4} | {'nbgrader s':>10} | {'grader s':>8} | {'ratio':>5} | "
          f"{'grader s/sub: solution, bugs':>28} | {'nbgrader s/sub: solution, bugs':>30}")
    for name in names:
        subs = standard_submissions(name)
        with tempfile.TemporaryDirectory() as tmp:
            t_nb, per_nb = bench_nbgrader(name, subs, Path(tmp))
            t_gr, per_gr = bench_grader(name, subs, Path(tmp), args.workers)
        row = {"submissions": len(subs), "grader_s": round(t_gr, 1), "nbgrader_s": round(t_nb, 1),
               "ratio": round(t_nb / t_gr, 2), "grader_per_submission": _split(per_gr),
               "nbgrader_per_submission": _split(per_nb), "measured": time.strftime("%Y-%m-%d"),
               "commit": _commit()}
        out["assignments"][name] = row
        g, n = row["grader_per_submission"], row["nbgrader_per_submission"]
        print(f"{name:<12} | {len(subs):>4} | {t_nb:>10.1f} | {t_gr:>8.1f} | {row['ratio']:>5.2f} | "
              f"{g['solution']:>13.1f}, {g['bugs_mean']:>12.1f} | {n['solution']:>14.1f}, {n['bugs_mean']:>13.1f}",
              flush=True)
    if args.suite:
        out["suite_grading_s"] = round(bench_suite(), 1)
        print(f"the test suite's grading stage: {out['suite_grading_s']:.0f} s")
    if args.json:
        out["assignments"] = dict(sorted(out["assignments"].items()))
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
