"""Shared helpers of test_lms_export.py and test_late.py: a course folder as ``grader autograde`` leaves it for
``backprop``, written by hand (no kernel runs): ``work/backprop/<student>/{result.json,recorded.json,
handed_in.json}`` and a gradebook built through nbgrader's own API, as tests/test_report.py builds its own.

No tests here.
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import warnings
from pathlib import Path

import pytest
from grading_support import points

from grader.course import load_assignment, load_reference

A = "backprop"
PARTS = load_reference(load_assignment(A)).PARTS
PTS = points(A)
MAX = PTS.max_auto + sum(PTS.manual.values())  # the gradebook's maximum: 17 autograded + 8 by hand = 25
#: The course file of test_late.py and test_lms_export.py: 10% a started day, at most 50%, 15 minutes' grace.
COURSE = f"""
timezone = "Europe/London"
[late]
per = "day"
penalty = 0.10
cap = 0.50
grace_minutes = 15
[assignments.{A}]
deadline = 2026-10-01T23:59:00+01:00
canvas_id = 4321
title = "Backprop"
[extensions.{A}]
s003 = 2026-10-04T23:59:00+01:00
"""


def cell_scores(fractions: dict[str, float]) -> dict[str, float]:
    """Each test cell's points when each part passes ``fractions[part]`` of its cases (1 when not named), as
    ``grader.worker`` weighs them."""
    out = {}
    for cell, pts in PTS.auto.items():
        mine = [(p.weight, fractions.get(name, 1.0)) for name, p in PARTS.items() if p.test_cell == cell]
        out[cell] = round(pts * sum(w * f for w, f in mine) / sum(w for w, _ in mine), 2)
    return out


def result_json(student: str, fractions: dict[str, float]) -> dict:
    """A ``result.json`` as ``grader.worker.write_result`` writes it, with each cell's parts."""
    scores = cell_scores(fractions)
    cells = {cell: {"score": scores[cell], "max_score": pts, "message": "",
                    "parts": {name: {"fraction": fractions.get(name, 1.0), "failure": ""}
                              for name, p in PARTS.items() if p.test_cell == cell}}
             for cell, pts in PTS.auto.items()}
    return {"student": student, "assignment": A, "status": "graded", "cells": cells, "executed": True,
            "message": "", "score": round(sum(scores.values()), 2), "max_score": PTS.max_auto}


@contextlib.contextmanager
def backprop_gradebook(folder: Path):
    """nbgrader's gradebook in ``folder`` holding backprop's notebook and its grade cells (autograded and by
    hand), no student yet: what ``grader autograde`` records into, opened with nbgrader's alembic on PATH."""
    from nbgrader.api import Gradebook

    a = load_assignment(A)
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        mp.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])  # nbgrader's alembic
        warnings.simplefilter("ignore")  # SQLAlchemy's notes from inside nbgrader
        with Gradebook(f"sqlite:///{folder / 'gradebook.db'}", "neural-nlp") as gb:
            gb.add_assignment(A)
            gb.add_notebook(a.notebook_id, A)
            for cell, pts in PTS.auto.items():
                gb.add_grade_cell(cell, a.notebook_id, A, max_score=pts, cell_type="code")
            for cell, pts in PTS.manual.items():
                gb.add_grade_cell(cell, a.notebook_id, A, max_score=pts, cell_type="markdown")
                gb.add_solution_cell(cell, a.notebook_id, A)
            yield gb


def make_course(folder: Path, graded: dict[str, dict[str, float]], handed: dict[str, dict]) -> Path:
    """``folder`` as ``grader autograde`` leaves it: each student of ``graded`` (student -> {part: fraction})
    with a result and a gradebook submission, and the ``handed_in.json`` of each student of ``handed``."""
    a = load_assignment(A)
    for student, fractions in graded.items():
        wd = folder / "work" / A / student
        wd.mkdir(parents=True)
        (wd / "result.json").write_text(json.dumps(result_json(student, fractions), indent=1))
        (wd / "recorded.json").write_text(json.dumps({"sha256": "0" * 64}))
        if student in handed:
            (wd / "handed_in.json").write_text(json.dumps(handed[student], indent=1))
    with backprop_gradebook(folder) as gb:
        for student, fractions in graded.items():
            gb.add_student(student)
            gb.add_submission(A, student)
            for cell, score in cell_scores(fractions).items():
                g = gb.find_grade(cell, a.notebook_id, A, student)
                g.auto_score, g.needs_manual_grade = score, False
        gb.db.commit()
    return folder


def hand_in(lms: str, lms_id: str | None, name: str | None = None, submitted_at: str | None = None,
            late_flag: bool | None = None, roster: dict | None = None) -> dict:
    """A ``handed_in.json`` as ``grader autograde`` copies it from ``lms.json`` (the shared interface)."""
    return {"source": lms, "lms_id": lms_id, "name": name, "late_flag": late_flag, "submitted_at": submitted_at,
            "file": None, "roster": roster or {}}
