#!/usr/bin/env python3
"""Check the course on a GPU in one command: every assignment graded on CUDA, and the CUDA tests.

    python scripts/gpu_check.py --json benchmarks/results/gpu.json     # what `make gpu-check` runs
    python scripts/gpu_check.py --dry-run                              # no GPU: the same steps, small, on CPU

On a machine with CUDA it
1. grades every assignment's solution through the grader's own judges (``grader.judging``): the hidden
   cases of every part drawn from one grader seed on the CPU and on CUDA, the solution's functions called on
   each (``nlpcourse.checking.run_case``, as ``record`` does in a kernel), every case judged against the
   reference. The verdicts must agree: every case passes on both devices;
2. plants a sample of each assignment's bugs (``--bugs`` per assignment, those that do not touch the
   trained part, spread over the list) and checks that each still loses, on its CUDA cases alone, every
   test cell it is declared to lose;
3. runs every ``gpu``-marked test (``pytest -m gpu``);
4. runs ``grader autograde`` end to end on a batch (each assignment's solution and one planted bug) twice,
   with the kernels' CUDA visible and hidden: the solutions must get full marks and the bugs less in both,
   and with CUDA visible each submission must be judged on more cases (its CUDA cases) than without;
5. times each chapter's main trainer on CUDA and on the CPU (``scripts/gpu_timing.py``);
6. writes the environment (device, driver, CUDA, PyTorch) and each result to ``--json`` and prints a table.
Steps 1 and 2 run the answer cells in this process, without the sandbox: the course's own solutions only.
``--steps autograde,timings`` (say) reruns some steps and keeps the others' results from ``--json``'s file,
each with the time it was measured: a lent GPU's minutes are few.

Without CUDA it says so and runs a dry run of the same steps on the CPU: the parts but the trained one,
one bug per assignment, the CUDA tests collected, not run, one solution autograded, the trainers tiny.
``tests/test_gpu_check.py`` runs that, so that the command works the day a GPU is lent. Exit status 0 when
everything passed (and after a dry run).
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ET
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import nlpcourse  # noqa: E402, F401, I001 - first: the thread policy, before torch loads
import torch  # noqa: E402

from grader.course import assignments, load_assignment, load_bugs, load_reference  # noqa: E402
from grader.judging import judge_case, make_cases  # noqa: E402
from grader.trial import solved_namespace, trained_part  # noqa: E402
from nlpcourse.checking import run_case  # noqa: E402
from nlpcourse.threads import use_threads  # noqa: E402
from scripts.gpu_timing import table as timing_table  # noqa: E402
from scripts.gpu_timing import time_trainers  # noqa: E402

GPU_MARK = "pytest.mark.gpu"  # the test modules that hold it are the ones pytest is given (the others may import
# what the GPU machine lacks: nbgrader, a browser)
GRADER_SEED = 12345  # the student seed whose cases are drawn (any seed: the verdicts must not depend on it)


def environment() -> dict:
    """What the check ran on."""
    env = {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
           "device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu only",
           "cpu_cores": os.cpu_count()}
    try:
        env["driver"] = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                       capture_output=True, text=True, timeout=30).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        env["driver"] = None
    return env


def _judge_parts(reference, recorded: dict, cases: dict, names: list[str]) -> dict:
    """Per part and device: [passed, total] cases, the first failure's message, and the seconds spent."""
    out = {}
    for name in names:
        part, fn = reference.PARTS[name], recorded.get(name)
        tally: dict[str, list[int]] = {}
        first, start = "", time.monotonic()
        for case in cases[name]:
            verdict = judge_case(part, case, run_case(fn, case)) if fn else None
            ok = bool(verdict and verdict.ok)
            counts = tally.setdefault(case.device, [0, 0])
            counts[0] += ok
            counts[1] += 1
            if not ok and not first:
                first = f"{case.name} ({case.device}): " + (verdict.message if verdict else "nothing recorded")
        out[name] = {"cases": tally, "failure": first[:300], "seconds": round(time.monotonic() - start, 2)}
    return out


def _sample_bugs(bugs: list, trained_cell: str, n: int) -> list[int]:
    """``n`` bugs spread over the list, among those whose declared losses leave the trained part alone."""
    cheap = [i for i, b in enumerate(bugs) if trained_cell not in b.loses and trained_cell not in b.may_lose]
    if n >= len(cheap):
        return cheap
    return [cheap[round(k * (len(cheap) - 1) / max(n - 1, 1))] for k in range(n)]


def check_assignment(job: tuple[str, int, bool, int]) -> dict:
    """Steps 1 and 2 for one assignment (in its own process); an error is reported, not raised, so that the
    other assignments are still checked."""
    start = time.monotonic()
    try:
        return _check_assignment(*job)
    except Exception:  # noqa: BLE001 - reported in the table and the JSON
        return {"assignment": job[0], "ok": False, "parts": {}, "bugs": [], "error": traceback.format_exc()[-2000:],
                "seconds": round(time.monotonic() - start, 1)}


def _check_assignment(assignment: str, threads: int, dry_run: bool, n_bugs: int) -> dict:
    use_threads(threads)
    start = time.monotonic()
    reference = load_reference(load_assignment(assignment))
    trained = trained_part(assignment)
    names = [n for n in reference.PARTS if not (dry_run and n == trained)]
    cases = make_cases(reference, GRADER_SEED)
    parts = _judge_parts(reference, solved_namespace(assignment)["recorded"], cases, names)
    bugs = load_bugs(load_assignment(assignment))
    device = "cuda" if torch.cuda.is_available() else "cpu"
    rows = []
    for i in _sample_bugs(bugs, reference.PARTS[trained].test_cell, n_bugs):
        lost = [n for n in names if reference.PARTS[n].test_cell in bugs[i].loses]
        on_device = {n: [c for c in cases[n] if c.device == device] for n in lost}
        judged = _judge_parts(reference, solved_namespace(assignment, i)["recorded"], on_device, lost)
        cells = {reference.PARTS[n].test_cell: [] for n in lost}
        for n, r in judged.items():
            cells[reference.PARTS[n].test_cell].append(r["cases"][device][0] < r["cases"][device][1])
        rows.append({"bug": i, "name": bugs[i].name, "device": device,
                     "caught_in": sorted(c for c, fails in cells.items() if any(fails)),
                     "declared": sorted(cells), "caught": bool(cells) and all(any(f) for f in cells.values())})
    ok = all(c[0] == c[1] for p in parts.values() for c in p["cases"].values()) and all(r["caught"] for r in rows)
    return {"assignment": assignment, "ok": ok, "parts": parts, "bugs": rows,
            "seconds": round(time.monotonic() - start, 1)}


def _batch(names: list[str], folder: Path, dry_run: bool) -> dict[str, str]:
    """Hand in, in nbgrader's layout, each assignment's solution and one planted bug (the solution alone in a dry
    run); returns student -> what the student must get: "full" marks or "less"."""
    from grader.submissions import submission, with_bug, write  # the Jupyter stack: only this step needs it

    expect = {}
    for name in names:
        a = load_assignment(name)
        write(submission(name), folder / f"solution-{name}", name, a.notebook)
        expect[f"solution-{name}"] = "full"
        bugs, reference = load_bugs(a), load_reference(a)
        for i in ([] if dry_run else _sample_bugs(bugs, reference.PARTS[trained_part(name)].test_cell, 1)):
            write(with_bug(name, bugs[i]), folder / f"bug-{name}", name, a.notebook)
            expect[f"bug-{name}"] = "less"
    return expect


def _autograde(names: list[str], folder: Path, course: Path, workers: int, cuda: bool) -> dict:
    """One ``grader autograde`` of the batch, with the kernels' CUDA visible or hidden: its wall seconds and each
    submission's status, score and worker seconds."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    if not cuda:
        env["CUDA_VISIBLE_DEVICES"] = ""  # kept in the kernels' environment: cases on the CPU alone
    cmd = [sys.executable, "-m", "grader.cli", "--course-dir", str(course), "autograde", *names, "--submissions",
           str(folder), "--workers", str(workers)]
    start = time.monotonic()
    run = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - start
    graded = {}
    for path in sorted(course.glob("work/*/*/result.json")):
        r = json.loads(path.read_text())
        graded[r["student"]] = {**{k: r.get(k) for k in ("status", "score", "max_score", "seconds")},
                                "cases": _cases_judged(r)}
    out = {"exit": run.returncode, "seconds": round(seconds, 1), "graded": graded,
           "per_minute": round(60 * len(graded) / seconds, 2)}
    return out if run.returncode == 0 else {**out, "error": (run.stdout + run.stderr)[-2000:]}


def _cases_judged(result: dict) -> int:
    """How many hidden cases the judges ran on a submission ("name: 7/9 cases passed" in each cell's message):
    with CUDA visible, more than with it hidden, since every case is drawn on the CPU and again on CUDA."""
    messages = " ".join(c.get("message", "") for c in result.get("cells", {}).values())
    return sum(int(n) for n in re.findall(r"\d+/(\d+) cases", messages))


def _marks(graded: dict) -> str:
    score, top = graded.get("score") or 0, graded.get("max_score") or 0
    return "full" if graded.get("status") == "graded" and top > 0 and score == top else "less"


def autograde_throughput(names: list[str], dry_run: bool, workers: int) -> dict:
    """Step 4: ``grader autograde`` end to end (kernels, hidden cells, the judges) on one batch, with the kernels'
    CUDA visible and then hidden; every solution must get full marks and every bug less, in both."""
    start = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "submitted"
            expect = _batch(names, folder, dry_run)
            modes = ["cpu"] if dry_run else ["cuda", "cpu"]
            runs = {m: _autograde(names, folder, Path(tmp) / f"course-{m}", workers, m == "cuda") for m in modes}
    except Exception:  # noqa: BLE001 - reported in the table and the JSON
        return {"ok": False, "error": traceback.format_exc()[-2000:], "seconds": round(time.monotonic() - start, 1)}
    wrong = [f"{m}: {s} got {g['score']}/{g['max_score']} ({g['status']}), expected {expect.get(s)} marks"
             for m, r in runs.items() for s, g in r["graded"].items() if _marks(g) != expect.get(s)]
    wrong += [f"{m}: {s} not graded" for m, r in runs.items() for s in expect if s not in r["graded"]]
    if len(runs) == 2:  # the CUDA cases were judged: more cases than with CUDA hidden
        both = set(runs["cuda"]["graded"]) & set(runs["cpu"]["graded"])
        wrong += [f"cuda: {s} judged {runs['cuda']['graded'][s]['cases']} cases, no more than with CUDA hidden "
                  f"({runs['cpu']['graded'][s]['cases']}): its CUDA cases were not drawn" for s in sorted(both)
                  if runs["cuda"]["graded"][s]["cases"] <= runs["cpu"]["graded"][s]["cases"]]
    return {"ok": not wrong and all(r["exit"] == 0 for r in runs.values()), "submissions": len(expect),
            "workers": workers, "runs": runs, "wrong": wrong, "seconds": round(time.monotonic() - start, 1)}


def gpu_test_files() -> list[str]:
    """The test modules that hold a gpu-marked test."""
    files = sorted([*ROOT.glob("tests/test_*.py"), *ROOT.glob("solutions/*/test_*.py")])
    return [str(f.relative_to(ROOT)) for f in files if GPU_MARK in f.read_text()]


def gpu_tests(dry_run: bool) -> dict:
    """Step 3: ``pytest -m gpu`` (collected only in a dry run), one line per test that did not pass."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider",
               f"--junitxml={report}", *gpu_test_files()] + (["--collect-only"] if dry_run else [])
        start = time.monotonic()
        run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        out = {"command": " ".join(["pytest", *cmd[3:]]).replace(str(report), "junit.xml"),
               "exit": run.returncode, "seconds": round(time.monotonic() - start, 1)}
        if dry_run:
            out["collected"] = sum(1 for line in run.stdout.splitlines() if "::" in line)
            return out
        if not report.exists():
            return {**out, "error": (run.stdout + run.stderr)[-2000:]}
        suite = ET.parse(report).getroot()
        tests = suite.iter("testcase")
        out.update({k: 0 for k in ("passed", "failed", "skipped")})
        out["not_passed"] = []
        for case in tests:
            name = f"{case.get('classname')}::{case.get('name')}"
            bad = case.find("failure") if case.find("failure") is not None else case.find("error")
            if bad is not None:
                out["failed"] += 1
                out["not_passed"].append({"test": name, "message": (bad.get("message") or "")[:400]})
            elif case.find("skipped") is not None:
                out["skipped"] += 1
                out["not_passed"].append({"test": name, "skipped": case.find("skipped").get("message", "")[:200]})
            else:
                out["passed"] += 1
    return out


def table(result: dict) -> str:
    """The summary: one line per assignment, then the CUDA tests."""
    lines = [f"{'assignment':<12} {'parts':>5} {'cpu cases':>10} {'cuda cases':>11} {'bugs caught':>12} {'s':>6}"]
    for r in result["assignments"]:
        cases = {d: [0, 0] for d in ("cpu", "cuda")}
        for p in r["parts"].values():
            for d, (ok, n) in p["cases"].items():
                cases[d][0] += ok
                cases[d][1] += n
        caught = f"{sum(b['caught'] for b in r['bugs'])}/{len(r['bugs'])}"
        lines.append(f"{r['assignment']:<12} {len(r['parts']):>5} {'/'.join(map(str, cases['cpu'])):>10} "
                     f"{'/'.join(map(str, cases['cuda'])):>11} {caught:>12} {r['seconds']:>6.0f}")
        lines += [f"  {n}: {p['failure']}" for n, p in r["parts"].items() if p["failure"]]
        lines += [f"  error: {r['error']}"] if r.get("error") else []
        lines += [f"  bug {b['bug']} ({b['name']}): caught in {b['caught_in']} of {b['declared']}"
                  for b in r["bugs"] if not b["caught"]]
    t = result["gpu_tests"]
    if "passed" in t:
        lines.append(f"pytest -m gpu: {t['passed']} passed, {t['failed']} failed, {t['skipped']} skipped "
                     f"({t['seconds']:.0f} s)")
        lines += [f"  {x['test']}: {x.get('message') or 'skipped: ' + x.get('skipped', '')}"
                  for x in t["not_passed"]]
    else:
        lines.append(f"pytest -m gpu: exit {t['exit']}, {t.get('collected', '?')} collected "
                     f"{t.get('error', '')[-500:]}")
    return "\n".join(lines + _autograde_lines(result["autograde"]))


def _autograde_lines(a: dict) -> list[str]:
    if "runs" not in a:
        return [f"grader autograde: error {a.get('error', '')[-800:]}"]
    lines = [f"grader autograde, {a['submissions']} submissions, {a['workers']} workers: " + ", ".join(
        f"kernels on {m}: {r['seconds']:.0f} s ({r['per_minute']:.1f} a minute)" for m, r in a["runs"].items())]
    lines += [f"  {w}" for w in a["wrong"]]
    return lines + [f"  {m}: {r['error'][-800:]}" for m, r in a["runs"].items() if r.get("error")]


STEPS = ("assignments", "gpu_tests", "autograde", "timings")


def run_steps(steps: list[str], names: list[str], dry_run: bool, args: argparse.Namespace) -> dict:
    """The steps asked for: each one's result under its name, and when it was measured."""
    out: dict = {}
    if "assignments" in steps:
        jobs = args.jobs or max(1, min(len(names), (os.cpu_count() or 2) // 2))
        threads = max(1, (os.cpu_count() or 2) // jobs) if not dry_run else 1
        work = [(n, threads, dry_run, 1 if dry_run else args.bugs) for n in names]
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            out["assignments"] = list(pool.map(check_assignment, work))
    if "gpu_tests" in steps:
        out["gpu_tests"] = gpu_tests(dry_run)
    if "autograde" in steps:
        workers = 1 if dry_run else args.workers or max(1, min(8, (os.cpu_count() or 2) // 2))
        out["autograde"] = autograde_throughput(names[:1] if dry_run else names, dry_run, workers)
    if "timings" in steps:
        out["timings"] = time_trainers(["cpu"] if dry_run else ["cpu", "cuda"], dry_run)
    out["measured"] = {step: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()) for step in steps}
    return out


def passed(result: dict) -> bool:
    return (all(r["ok"] for r in result["assignments"]) and result["gpu_tests"]["exit"] == 0
            and result["autograde"]["ok"] and not any("error" in r for r in result["timings"]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--dry-run", action="store_true", help="the small CPU version, even where CUDA is present")
    ap.add_argument("--assignments", default=",".join(assignments()), help="comma-separated (default: all)")
    ap.add_argument("--bugs", type=int, default=3, help="planted bugs checked per assignment (default 3)")
    ap.add_argument("--jobs", type=int, default=None, help="assignments checked at once (default: cores // 2)")
    ap.add_argument("--workers", type=int, default=None, help="grader autograde's workers (default: cores // 2, <= 8)")
    ap.add_argument("--steps", default=",".join(STEPS),
                    help="comma-separated, of " + ", ".join(STEPS) + " (default: all); the others' results are "
                    "kept from --json's file, each step with the time it was measured")
    args = ap.parse_args(argv)
    steps = [s for s in args.steps.split(",") if s]
    if set(steps) - set(STEPS):
        ap.error(f"--steps: unknown {sorted(set(steps) - set(STEPS))}; the steps are {', '.join(STEPS)}")
    dry_run = args.dry_run or not torch.cuda.is_available()
    if not torch.cuda.is_available():
        print("gpu_check: no CUDA device here; a dry run of the same steps on the CPU follows", flush=True)
    keep = args.json and not dry_run and set(steps) != set(STEPS) and args.json.exists()
    result = json.loads(args.json.read_text()) if keep else {}
    start = time.monotonic()
    new = run_steps(steps if keep else list(STEPS), [n for n in args.assignments.split(",") if n], dry_run, args)
    result.update({"dry_run": dry_run, "environment": environment(), "grader_seed": GRADER_SEED, **new,
                   "measured": {**result.get("measured", {}), **new["measured"]}})
    result["ok"] = passed(result)
    result["seconds"] = {**(result.get("seconds") if isinstance(result.get("seconds"), dict) else {}),
                         "+".join(new["measured"]): round(time.monotonic() - start, 1)}
    print(table(result))
    print(timing_table(result["timings"]))
    print(f"{'dry run' if dry_run else 'gpu check'}: {'everything passed' if result['ok'] else 'FAILURES above'}"
          f" in {time.monotonic() - start:.0f} s")
    if args.json and dry_run and not args.dry_run:
        print(f"{args.json} is left as it is: it holds the last GPU machine's results, not a dry run's")
    elif args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
