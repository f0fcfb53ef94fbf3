#!/usr/bin/env python3
"""How long each cell of an assignment takes as a student runs it: the released notebook with the solution's
answers, executed top to bottom in a fresh Jupyter kernel of this machine (no grader, no sandbox), one notebook
at a time. The times the notebooks state ("about 9 seconds on one CPU thread") are these, measured on the
course's 2-core machine with nothing else running; the grader's time limit of every graded cell is at least
three times them (tests/test_assignment_sources.py checks both against the JSON this writes).

    python scripts/notebook_times.py --json benchmarks/results/notebook_times.json          # every assignment
    python scripts/notebook_times.py rnnlm transformer --json /tmp/t.json

The JSON: ``{"machine": ..., "assignments": {name: {"cells": {grade_id: seconds}, "total": seconds}}}``,
each cell's wall-clock seconds (a cell without a ``grade_id`` is left out).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.course import assignments, load_assignment  # noqa: E402
from grader.submissions import submission  # noqa: E402

#: What the written questions ask a student to run, timed after the notebook in the same kernel (the questions
#: state these times too): assignment -> {name: code}.
QUESTION_RUNS = {
    "cnn": {"question: two epochs on the reviews": 'train_cnn(0, task="reviews")',
            "question: six epochs on the reviews": 'train_cnn(0, task="reviews", epochs=6)'},
    "transformer": {"question: one short epoch": "train_language_model(0, batch=32, lr=0.01, warmup=50, epochs=1)"},
}


class _Timed(NotebookClient):
    """nbclient, keeping each cell's wall-clock seconds."""

    seconds: dict[int, float]

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        start = time.monotonic()
        try:
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        finally:
            self.seconds[cell_index] = time.monotonic() - start


def measure(name: str) -> dict:
    """Run the solved release of ``name`` in a fresh kernel; each named cell's seconds."""
    a = load_assignment(name)
    nb = submission(name)
    for key, code in QUESTION_RUNS.get(name, {}).items():
        nb.cells.append(nbformat.v4.new_code_cell(code, metadata={"nbgrader": {"grade_id": key}}))
    folder = a.release.parent
    client = _Timed(nb, timeout=1800, kernel_name="python3", resources={"metadata": {"path": str(folder)}})
    client.seconds = {}
    start = time.monotonic()
    client.execute()
    total = time.monotonic() - start
    errors = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells if c.cell_type == "code"
              and any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    if errors:
        raise SystemExit(f"{name}: the solved notebook failed in {errors}")
    cells = {c.metadata["nbgrader"]["grade_id"]: round(client.seconds[i], 2) for i, c in enumerate(nb.cells)
             if i in client.seconds and c.metadata.get("nbgrader", {}).get("grade_id")}
    return {"cells": cells, "total": round(total, 1)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("names", nargs="*", help="assignments (default: all)")
    p.add_argument("--json", type=Path, required=True, help="where to write the times")
    args = p.parse_args(argv)
    os.environ.setdefault("NLPCOURSE_PROGRESS", "0")
    out = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, {platform.python_version()}",
           "command": "python scripts/notebook_times.py " + " ".join(args.names or []), "assignments": {}}
    for name in args.names or assignments():
        out["assignments"][name] = measure(name)
        print(name, json.dumps(out["assignments"][name]), flush=True)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
