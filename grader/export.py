"""``grader export``: one CSV row per submission found, with the gradebook's score (manual grades
entered in the formgrader included) and the grading status."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from .course import COURSE_ID, GraderError, load_assignment

COLUMNS = ["student_id", "score", "max_score", "autograded_score", "needs_manual_grade", "status", "message"]
STATUSES = ("graded", "timeout", "crashed", "invalid", "missing")


def rows(assignment: str, course_dir: Path) -> list[dict]:
    a = load_assignment(assignment)
    work = course_dir / "work" / a.name
    if not work.exists():
        raise GraderError(f"nothing graded for {a.name} in {course_dir}: run `grader autograde` first")
    out = []
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", COURSE_ID) as gb:
        max_score = gb.find_assignment(a.name).max_score
        for wd in sorted(p for p in work.iterdir() if p.is_dir()):
            result_path = wd / "result.json"
            if not (wd / "recorded.json").exists() or not result_path.exists():
                continue  # not finished: a later run of `grader autograde` completes it
            r = json.loads(result_path.read_text())
            row = {"student_id": r["student"], "score": 0.0, "max_score": max_score,
                   "autograded_score": r["score"], "needs_manual_grade": False, "status": r["status"],
                   "message": r["message"]}
            try:
                sub = gb.find_submission(a.name, r["student"])
                row["score"] = round(sub.score, 2)
                row["needs_manual_grade"] = bool(sub.needs_manual_grade)
            except MissingEntry:
                row["score"] = r["score"]
            out.append(row)
    return out


def export(assignment: str, course_dir: Path, csv_path: Path) -> list[dict]:
    data = rows(assignment, course_dir)
    tmp = csv_path.with_name(csv_path.name + ".tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(data)
    tmp.replace(csv_path)
    return data
