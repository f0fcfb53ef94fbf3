"""``grader export``: one CSV row per submission found, with the gradebook's score (manual grades
entered in the formgrader included) and the grading status."""
from __future__ import annotations

import csv
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry

from .course import COURSE_ID, GraderError, load_assignment, read_json_object

COLUMNS = ["student_id", "score", "max_score", "autograded_score", "needs_manual_grade", "status", "message", "flags"]
STATUSES = ("graded", "timeout", "crashed", "invalid", "missing")
#: A row whose grading did not finish: the gradebook holds the student, no recorded result does (export only).
PENDING = "pending"


def rows(assignment: str, course_dir: Path) -> list[dict]:
    """One row per student: each work folder with a recorded result (the one in force while a regrade runs:
    :func:`~grader.autograde.live_folder`), and every student the gradebook holds a submission of who has none,
    as ``pending`` (a grading that did not finish), so that an interrupted run never drops a row."""
    from .autograde import REPLACED, STAGED, live_folder

    a = load_assignment(assignment)
    work = course_dir / "work" / a.name
    if not work.exists():
        raise GraderError(f"nothing graded for {a.name} in {course_dir}: run `grader autograde` first")
    students = {p.name.removesuffix(REPLACED) for p in work.iterdir() if p.is_dir() and not p.name.endswith(STAGED)}
    out = []
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", COURSE_ID) as gb:
        assignment_row = gb.find_assignment(a.name)
        max_score = assignment_row.max_score
        in_gradebook = {sub.student.id for sub in assignment_row.submissions}
        for student in sorted(students | in_gradebook):
            wd = live_folder(work, student)
            if (wd / "recorded.json").exists() and (wd / "result.json").exists():
                r = read_json_object(wd / "result.json")
                row = _row(r["student"], max_score, r["score"], r["status"], r["message"], r.get("flags", []))
            elif student in in_gradebook:
                row = _row(student, max_score, 0.0, PENDING, "grading did not finish for this student (the run "
                           "stopped): run `grader autograde` again; the score is the gradebook's")
            else:
                continue  # graded for the first time by a run that has not finished: not in any gradebook yet
            try:
                sub = gb.find_submission(a.name, student)
                row["score"] = round(sub.score, 2)
                row["needs_manual_grade"] = bool(sub.needs_manual_grade)
            except MissingEntry:
                pass
            out.append(row)
    return out


def _row(student: str, max_score: float, auto: float, status: str, message: str, flags=()) -> dict:
    """A row; ``flags``: what the submission changed that the grader ignored (locked cells, points, a forged
    record), joined by "; ", empty when nothing: worth a look, though none of it changed the score."""
    return {"student_id": student, "score": auto, "max_score": max_score, "autograded_score": auto,
            "needs_manual_grade": False, "status": status, "message": message, "flags": "; ".join(flags)}


def export(assignment: str, course_dir: Path, csv_path: Path) -> list[dict]:
    data = rows(assignment, course_dir)
    tmp = csv_path.with_name(csv_path.name + ".tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(data)
    tmp.replace(csv_path)
    return data
