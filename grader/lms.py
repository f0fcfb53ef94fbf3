"""``grader export A --format canvas|moodle|csv``: the grades as a file that Canvas or Moodle imports.

Every format starts from :func:`grader.export.rows` (the gradebook's score, manual grades included) and, with a
late policy in the course file (:mod:`grader.late`), takes the late penalty off.

- **csv** (the default): ``grader export``'s own columns (:data:`grader.export.COLUMNS`). With a late policy
  four more: ``late_by_hours``, ``late_units``, ``late_penalty`` (points) and ``final_score``; ``score`` stays
  the score before the penalty.
- **canvas**: Canvas's gradebook import CSV (Grades > Import): the columns ``Student, ID, SIS User ID, SIS Login
  ID, Section`` and ``<title> (<Canvas assignment id>)``, then a ``Points Possible`` row, as Canvas's own export
  writes it. Canvas matches a row by ``ID``, its user id, which is the id in the archive's file names (the
  ``lms_id``). The grade is the final score. The assignment id is the number at the end of the assignment's
  Canvas address; ``--lms-assignment-id`` or ``canvas_id`` in the course file gives it.
- **moodle**: the assignment's offline grading worksheet (Assignment > Submissions > Upload grading worksheet),
  not the gradebook's import CSV: the worksheet's ``Identifier`` is ``Participant <id>``, and that id is the one
  in the names of Moodle's "Download all submissions" archive, which ``grader collect`` read. The gradebook
  import needs an email, a username or an id number that the archive does not hold. The grade is the final
  score. Moodle keeps a grade changed in Moodle after the worksheet's "Last modified (grade)" (written ``-``)
  unless "Allow updating records that have been modified more recently in Moodle" is ticked on upload.
  A class whose hand-ins did not come through Moodle (a Canvas archive, plain folders) has no participant ids:
  it gets Moodle's gradebook import CSV instead (Grades > Import > CSV file): ``Email address``, ``Full name`` and
  ``<title>``, the email from the roster's ``email`` column; on import, map ``Email address`` to the user's email
  and ``<title>`` to the assignment's grade item. A student without a participant id nor an email stops the export.

The LMS id of each student comes from their ``handed_in.json`` (written by ``grader autograde`` from
``lms.json``), else from ``--roster`` (the ``collect`` roster: ``lms_id, student_id`` and optional ``name,
sis_user_id, sis_login_id, section, email``). A student with neither stops the export (:class:`LmsError`, every
such student named) and nothing is written: no row is dropped.

``--part-columns`` adds one column per part (``reference.PARTS``): the points that part earned. Their names
(``Part <part> of <title>``) carry no ``(id)``, so Canvas never takes one for the assignment's column; its import
preview offers each as a new assignment: choose to ignore them there. Moodle ignores columns it does not know.
"""
from __future__ import annotations

import csv
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .collect import read_roster_rows
from .course import GraderError, load_assignment, load_reference, read_json_object
from .export import COLUMNS, rows
from .late import HANDED_IN, Lateness, assess, course_file_path, handed_in, load_course_file

FORMATS = ("csv", "canvas", "moodle")
LATE_COLUMNS = ["late_by_hours", "late_units", "late_penalty", "final_score"]
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
CANVAS_POINTS = "    Points Possible"  # the second row of Canvas's own export; its import skips it
MOODLE_COLUMNS = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                  "Grade can be changed", "Last modified (submission)", "Last modified (grade)", "Feedback comments"]
MOODLE_IMPORT_COLUMNS = ["Email address", "Full name"]  # then the grade item's column (Grades > Import > CSV file)


class LmsError(GraderError):
    """The grades cannot be written for the LMS: nothing was written."""


@dataclass
class Table:
    """What :func:`write` writes: a header, the rows, and :func:`grader.export.rows`'s data they come from."""

    header: list[str]
    rows: list[list]
    data: list[dict]


@dataclass(frozen=True)
class Student:
    """What is known of one student on the LMS side."""

    lms_id: str | None
    name: str
    roster: dict[str, str]
    source: str | None  # "canvas", "moodle", "file", or None without a handed_in.json


def number(value: float) -> str:
    """A score as the LMSs read it: ``7``, ``7.5``, ``7.25``."""
    return format(round(float(value), 2), "g")


# ------------------------------------------------------------------ who is who


def students(assignment: str, course_dir: Path, graded: list[str], roster: Path | None) -> dict[str, Student]:
    """student id -> :class:`Student`, from each ``handed_in.json`` and the roster (the roster wins)."""
    by_student = {}
    if roster is not None:
        by_student = {row["student_id"]: row for row in read_roster_rows(roster).values()}
    known = handed_in(course_dir / "work" / load_assignment(assignment).name)
    out = {}
    for student in graded:
        info, row = known.get(student, {}), by_student.get(student, {})
        extras = {**(info.get("roster") or {}), **{k: v for k, v in row.items() if k not in ("lms_id", "student_id")}}
        out[student] = Student(row.get("lms_id") or info.get("lms_id"), extras.get("name") or info.get("name") or "",
                               extras, info.get("source"))
    return out


def moodle_by_email(who: dict[str, Student]) -> bool:
    """Whether the Moodle export is the gradebook import by email: some hand-in did not come through Moodle."""
    return any(st.source != "moodle" for st in who.values())


def _check_matched(fmt: str, who: dict[str, Student], roster: Path | None) -> None:
    """Every student has an LMS id of this LMS (for Moodle's gradebook import, an email), or :class:`LmsError`
    naming all who do not."""
    if fmt == "moodle" and moodle_by_email(who):
        unmatched = sorted(s for s, st in who.items() if not st.roster.get("email"))
        if unmatched:
            raise LmsError(f"no Moodle participant id nor email for {len(unmatched)} graded student(s): "
                           f"{', '.join(unmatched)}: their hand-ins did not come through Moodle, so Moodle's "
                           "gradebook import needs an email column in the roster (--roster FILE, or the one "
                           "`grader collect --roster` read); nothing was written")
        return
    unmatched = sorted(s for s, st in who.items() if not st.lms_id)
    if unmatched:
        hint = f"nor in the roster {roster}" if roster else "and no --roster FILE (lms_id,student_id) was given"
        raise LmsError(f"no {fmt.capitalize()} id for {len(unmatched)} graded student(s): {', '.join(unmatched)} "
                       f"(no lms_id in their {HANDED_IN}, {hint}); nothing was written")
    other = sorted(s for s, st in who.items() if st.source in ("canvas", "moodle") and st.source != fmt)
    if other:
        raise LmsError(f"{', '.join(other)} handed in through another LMS than {fmt.capitalize()} (see their "
                       f"{HANDED_IN}): their ids would not match; nothing was written")


# ------------------------------------------------------------------ the columns


def part_points(assignment: str, course_dir: Path, student: str) -> dict[str, float]:
    """part -> the points it earned (its share of its test cell's points), from the student's ``result.json``;
    ``{}`` when the result holds no parts (invalid, missing, or written before parts were stored)."""
    from .autograde import live_folder

    a = load_assignment(assignment)
    path = live_folder(course_dir / "work" / a.name, student) / "result.json"
    cells = read_json_object(path).get("cells", {})
    parts = load_reference(a).PARTS
    out = {}
    for name, part in parts.items():
        cell = cells.get(part.test_cell, {})
        got = (cell.get("parts") or {}).get(name)
        if got is None:
            continue
        weight = sum(p.weight for p in parts.values() if p.test_cell == part.test_cell)
        out[name] = round(cell["max_score"] * part.weight * got["fraction"] / weight, 2)
    return out


def _late_values(row: dict, late: Lateness | None) -> list:
    if late is None:
        return [0, 0, 0, number(row["score"])]
    return [round(late.late_by.total_seconds() / 3600, 2), late.units, number(late.penalty_points(row["max_score"])),
            number(late.final(row["score"], row["max_score"]))]


def _final(row: dict, late: Lateness | None) -> str:
    return number(row["score"] if late is None else late.final(row["score"], row["max_score"]))


def _settings(assignment: str, course_dir: Path, course_file: Path | None):
    path = course_file_path(course_dir, course_file)
    return load_course_file(path).assignments.get(assignment) if path else None


def _title(assignment: str, course_dir: Path, course_file: Path | None) -> str:
    settings = _settings(assignment, course_dir, course_file)
    return (settings.title if settings else None) or assignment


def _canvas_column(assignment: str, course_dir: Path, course_file: Path | None, lms_assignment_id: str | None) -> str:
    """``<title> (<id>)``: the id from ``--lms-assignment-id`` or the course file's ``canvas_id``."""
    settings = _settings(assignment, course_dir, course_file)
    title = _title(assignment, course_dir, course_file)
    canvas_id = lms_assignment_id or (settings.canvas_id if settings else None)
    if not canvas_id:
        raise LmsError(f"Canvas needs the id of {assignment}'s Canvas assignment: the number at the end of its "
                       f"address (https://<school>.instructure.com/courses/123/assignments/4321 -> 4321); give "
                       f"--lms-assignment-id 4321, or canvas_id = 4321 under [assignments.{assignment}] in the "
                       f"course file")
    if not str(canvas_id).isdigit():
        raise LmsError(f"--lms-assignment-id {canvas_id!r} is not a Canvas id: the number at the end of the "
                       f"assignment's Canvas address")
    return f"{title} ({canvas_id})"


# ------------------------------------------------------------------ the table


def build(assignment: str, course_dir: Path, fmt: str = "csv", roster: Path | None = None,
          course_file: Path | None = None, lms_assignment_id: str | None = None,
          part_columns: bool = False) -> Table:
    """The table :func:`write` writes (see the module's docstring for each format)."""
    if fmt not in FORMATS:
        raise LmsError(f"unknown format {fmt!r}: one of {', '.join(FORMATS)}")
    a = load_assignment(assignment)
    data = rows(a.name, course_dir)
    lateness = assess(a.name, course_dir, course_file)
    parts = list(load_reference(a).PARTS) if part_columns else []
    points = {r["student_id"]: part_points(a.name, course_dir, r["student_id"]) for r in data} if parts else {}
    if fmt == "csv":
        header = COLUMNS + (LATE_COLUMNS if lateness else []) + [f"part:{p}" for p in parts]
        body = [[r[c] for c in COLUMNS] + (_late_values(r, lateness.get(r["student_id"])) if lateness else [])
                for r in data]
    else:
        who = students(a.name, course_dir, [r["student_id"] for r in data], roster)
        _check_matched(fmt, who, roster)
        if fmt == "canvas":
            column = _canvas_column(a.name, course_dir, course_file, lms_assignment_id)
            title = column.rsplit(" (", 1)[0]
            header = CANVAS_COLUMNS + [column]
            body = [_canvas_row(who[r["student_id"]], r["student_id"], _final(r, lateness.get(r["student_id"])))
                    for r in data]
        elif moodle_by_email(who):
            title = _title(a.name, course_dir, course_file)
            header = MOODLE_IMPORT_COLUMNS + [title]
            body = [[who[r["student_id"]].roster["email"], who[r["student_id"]].name or r["student_id"],
                     _final(r, lateness.get(r["student_id"]))] for r in data]
        else:
            title = a.name
            header = list(MOODLE_COLUMNS)
            body = [_moodle_row(who[r["student_id"]], r, _final(r, lateness.get(r["student_id"]))) for r in data]
    for row, r in zip(body, data):
        row += [_part_value(points.get(r["student_id"], {}), p) for p in parts]
    if fmt != "csv" and parts:
        header += [f"Part {p} of {title}" for p in parts]
    if fmt == "canvas":
        max_score = data[0]["max_score"] if data else 0
        body.insert(0, [CANVAS_POINTS, "", "", "", "", number(max_score)] + ["" for _ in parts])
    return Table(header, body, data)


def _part_value(points: dict[str, float], part: str) -> str:
    return number(points[part]) if part in points else ""


def _canvas_row(st: Student, student: str, grade: str) -> list:
    r = st.roster
    return [st.name or student, st.lms_id, r.get("sis_user_id", ""), r.get("sis_login_id", ""), r.get("section", ""),
            grade]


def _moodle_row(st: Student, row: dict, grade: str) -> list:
    return [f"Participant {st.lms_id}", st.name or row["student_id"], st.roster.get("email", ""), row["status"],
            grade, number(row["max_score"]), "Yes", "-", "-", ""]


def write(assignment: str, course_dir: Path, out: Path, fmt: str = "csv", roster: Path | None = None,
          course_file: Path | None = None, lms_assignment_id: str | None = None,
          part_columns: bool = False) -> list[dict]:
    """Write the grades of ``assignment`` to ``out`` in ``fmt`` (all or nothing: a temporary file replaces
    ``out``); return :func:`grader.export.rows`'s data."""
    table = build(assignment, course_dir, fmt, roster, course_file, lms_assignment_id, part_columns)
    out = Path(out)
    if not out.parent.is_dir():
        raise LmsError(f"cannot write {out}: the folder {out.parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(table.header)
            w.writerows(table.rows)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return table.data
