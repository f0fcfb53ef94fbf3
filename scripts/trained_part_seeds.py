#!/usr/bin/env python3
"""Run an assignment's trained part as the grader judges it, on many grader seeds: the solution, or the
solution with one planted bug. Prints one line per run (the check's numbers and verdict) and a summary.

    python scripts/trained_part_seeds.py cnn --seeds 20               # the solution on student seeds 0..19
    python scripts/trained_part_seeds.py cnn --bug 21 --seeds 20      # planted bug 21 of solutions/cnn/bugs.py
    python scripts/trained_part_seeds.py cnn --bug 21 --jobs 2 --json out.json
    python scripts/trained_part_seeds.py cnn --baseline --seeds 20     # the chapter's simple baseline

Each run has one thread, as in a grading kernel; ``--jobs`` runs that many seeds at once. The bar of a
trained part sits between the simple baseline's best seed and the solution's worst; a planted bug that
loses the part must fail on every seed, or be declared ``may_lose`` with the rate measured here
(``grader.trial``; the solution runs in this process, without the sandbox: the course's own code only).
"""
from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nlpcourse  # noqa: F401 - first: the thread policy, before torch loads
from grader.trial import baseline_seeds, judge_seeds, summary
from nlpcourse.threads import use_threads


def _run(args: tuple[str, int, int | None]) -> list[dict]:
    assignment, seed, bug = args
    use_threads("kernel")
    return judge_seeds(assignment, [seed], bug)


def _run_baseline(args: tuple[str, int, int | None]) -> list[dict]:
    assignment, seed, _ = args
    use_threads("kernel")
    return baseline_seeds(assignment, [seed])


def _print_baseline(assignment: str, rows: list[dict], out: Path | None) -> None:
    values = [r["value"] for r in rows]
    best = rows[values.index(min(values))], rows[values.index(max(values))]
    print(f"{assignment}, the baseline: {len(rows)} runs, {min(values):.4g} (seed {best[0]['seed']}) to "
          f"{max(values):.4g} (seed {best[1]['seed']})")
    if out:
        out.write_text(json.dumps({"assignment": assignment, "baseline": True, "rows": rows}, indent=1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("assignment")
    ap.add_argument("--bug", type=int, default=None, help="index of a planted bug in solutions/A/bugs.py")
    ap.add_argument("--seeds", type=int, default=20, help="student seeds 0..N-1 (default 20)")
    ap.add_argument("--first", type=int, default=0, help="first student seed (default 0)")
    ap.add_argument("--baseline", action="store_true",
                    help="measure the reference's baseline_outcome (the chapter's simple baseline) instead")
    ap.add_argument("--jobs", type=int, default=1, help="seeds run at once, one thread each (default 1)")
    ap.add_argument("--json", type=Path, help="also write the rows and the summary to this file")
    args = ap.parse_args(argv)
    seeds = list(range(args.first, args.first + args.seeds))
    rows: list[dict] = []
    if args.baseline:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            for got in pool.map(_run_baseline, [(args.assignment, s, None) for s in seeds]):
                for row in got:
                    rows.append(row)
                    print(f"seed {row['seed']:3d} {row['seconds']:6.1f} s  {row['value']:.4g}", flush=True)
        _print_baseline(args.assignment, rows, args.json)
        return 0
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for got in pool.map(_run, [(args.assignment, s, args.bug) for s in seeds]):
            for row in got:
                rows.append(row)
                numbers = " ".join(f"{k}={v:.4g}" for k, v in row["details"].items())
                print(f"seed {row['seed']:3d} {'pass' if row['ok'] else 'FAIL'} {row['seconds']:6.1f} s  {numbers}  "
                      f"{row['message'][:100]}", flush=True)
    s = summary(rows)
    what = f"bug {args.bug}" if args.bug is not None else "the solution"
    print(f"{args.assignment}, {what}: {s['passed']}/{s['runs']} runs pass; "
          + ", ".join(f"{k} {v[0]:.4g} to {v[1]:.4g}" for k, v in s.items() if isinstance(v, list)))
    if args.json:
        args.json.write_text(json.dumps({"assignment": args.assignment, "bug": args.bug, "rows": rows,
                                         "summary": s}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
