"""``make gpu-check`` (scripts/gpu_check.py) where there is no GPU: its dry run, so that the command works the day
a GPU machine is lent; and the results the last GPU machine wrote (benchmarks/results/gpu.json)."""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from grader.course import SOLUTIONS, assignments

if not SOLUTIONS.is_dir():  # the public copy (`grader publish`) has no solutions/
    pytest.skip("needs solutions/ (private, not in the public copy)", allow_module_level=True)

from scripts.gpu_check import STEPS  # after the skip: it loads the solutions' references
from scripts.gpu_timing import TRAINERS

ROOT = Path(__file__).resolve().parents[1]


def test_dry_run_grades_every_assignment_catches_its_bugs_and_collects_the_cuda_tests(tmp_path):
    out = tmp_path / "gpu.json"
    proc = subprocess.run([sys.executable, "scripts/gpu_check.py", "--dry-run", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["dry_run"] and result["ok"]
    assert [r["assignment"] for r in result["assignments"]] == assignments()
    for r in result["assignments"]:
        assert len(r["parts"]) >= 6, r["assignment"]  # every part but the trained one
        for name, part in r["parts"].items():
            passed, total = part["cases"]["cpu"]
            assert total > 0 and passed == total, (r["assignment"], name, part["failure"])
        assert len(r["bugs"]) == 1 and r["bugs"][0]["caught"], (r["assignment"], r["bugs"])
    tests = result["gpu_tests"]
    assert tests["exit"] == 0 and tests["collected"] >= 10, tests
    graded = result["autograde"]["runs"]["cpu"]["graded"]  # grader autograde end to end, one solution
    assert result["autograde"]["ok"] and graded[f"solution-{assignments()[0]}"]["status"] == "graded", graded
    timed = {r["trainer"]: r for r in result["timings"]}  # every chapter's trainer, tiny, on the CPU
    assert list(timed) == list(TRAINERS), list(timed)
    for name, row in timed.items():
        cpu = row["per_device"]["cpu"]
        assert "error" not in row and cpu["per_second"] > 0 and math.isfinite(cpu["final_loss"]), row
        assert f"\n{name} " in "\n" + proc.stdout, f"the summary table has no line for {name}"
    assert "dry run: everything passed" in proc.stdout


def test_the_committed_results_come_from_a_gpu_and_cover_every_assignment():
    result = json.loads((ROOT / "benchmarks" / "results" / "gpu.json").read_text())
    assert not result["dry_run"] and "NVIDIA" in result["environment"]["device"]
    assert result["environment"]["cuda"] and result["environment"]["driver"]
    assert sorted(r["assignment"] for r in result["assignments"]) == sorted(assignments())
    for r in result["assignments"]:
        cuda = [p["cases"].get("cuda", [0, 0]) for p in r["parts"].values()]
        assert sum(n for _, n in cuda) > 0, f"{r['assignment']}: no CUDA case was graded"
        assert len(r["bugs"]) >= 3 and all(b["device"] == "cuda" for b in r["bugs"])
    assert result["gpu_tests"]["passed"] + result["gpu_tests"]["failed"] > 0
    runs = result["autograde"]["runs"]  # grader autograde, kernels with CUDA visible and hidden
    assert set(runs) == {"cuda", "cpu"} and all(len(r["graded"]) == result["autograde"]["submissions"]
                                                for r in runs.values())
    timed = {r["trainer"]: r for r in result["timings"]}
    assert sorted(timed) == sorted(TRAINERS) and all(r["per_device"]["cuda"]["per_second"] > 0 for r in timed.values())
    assert set(result["measured"]) == set(STEPS)
