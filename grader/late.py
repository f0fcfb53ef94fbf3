"""A late policy: how late each hand-in was, and what it costs, from the course file.

The course file is TOML, ``<course-dir>/course.toml`` unless another is named (``grader export --course-file``);
``grader/course.example.toml`` shows every key::

    timezone = "Europe/London"        # how to read the LMS archive's times, which carry no time zone
    [late]
    per = "day"                        # or "hour": each started day (hour) late costs `penalty`
    penalty = 0.10                     # fraction of the maximum score per day (hour)
    cap = 0.50                         # at most this fraction is taken
    grace_minutes = 15                 # this late is on time
    [assignments.backprop]
    deadline = 2026-10-01T23:59:00+01:00
    canvas_id = 4321                   # optional: `grader export --format canvas`
    title = "Backprop"                 # optional: the Canvas column's title
    [extensions.backprop]
    s007 = 2026-10-04T23:59:00+01:00   # a student's own deadline

The rule, per student: the deadline is their extension's, or the assignment's. ``late_by`` is the hand-in time
(``submitted_at`` of ``handed_in.json``; a time without a time zone is read in ``timezone``) minus that
deadline, or zero. Less ``grace_minutes``, each started day (hour) is one unit; the penalty is
``min(cap, penalty * units)`` of the maximum score, and the final score never goes below 0.

Canvas marks a late upload ``LATE_`` against its own deadline (``late_flag``). When it says late, the time
says on time and the student has no extension here, one unit is counted: Canvas knew a deadline (an earlier
one, or a student's own due date) that the course file does not. With an extension here, the flag is
ignored. No time and no flag: not late.

Every deadline needs a time zone offset. Unknown keys, a penalty or cap outside [0, 1], an assignment the
course does not have, and an extension for a student with no graded result raise :class:`LateError`.
"""
from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, field
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .course import GraderError, load_assignment

COURSE_FILE = "course.toml"
HANDED_IN = "handed_in.json"
UNITS = {"day": timedelta(days=1), "hour": timedelta(hours=1)}
_TOP_KEYS = {"timezone", "late", "assignments", "extensions"}
_LATE_KEYS = {"per", "penalty", "cap", "grace_minutes"}
_ASSIGNMENT_KEYS = {"deadline", "canvas_id", "title"}


class LateError(GraderError):
    """The course file cannot be used."""


@dataclass(frozen=True)
class Policy:
    """What lateness costs (the ``[late]`` table); without one, lateness is shown but costs nothing."""

    per: str = "day"
    penalty: float = 0.0
    cap: float = 1.0
    grace_minutes: float = 0.0


@dataclass(frozen=True)
class AssignmentSettings:
    """One ``[assignments.NAME]`` table."""

    deadline: datetime | None = None
    canvas_id: str | None = None
    title: str | None = None


@dataclass
class CourseFile:
    """The course file, checked (see the module's docstring)."""

    path: Path
    timezone: tzinfo | None = None
    policy: Policy = field(default_factory=Policy)
    assignments: dict[str, AssignmentSettings] = field(default_factory=dict)
    extensions: dict[str, dict[str, datetime]] = field(default_factory=dict)


@dataclass(frozen=True)
class Lateness:
    """How late one student handed in, and the fraction of the maximum score that it costs."""

    submitted_at: datetime | None  # aware; None when the LMS gave no time
    deadline: datetime  # the student's own (an extension) or the assignment's
    late_by: timedelta  # after the deadline (grace not taken off); zero when on time
    units: int  # started days (hours) late after the grace, or 1 by Canvas's LATE_ flag alone
    penalty_fraction: float  # min(cap, penalty * units)
    extended: bool  # the deadline is an extension
    flagged: bool = False  # Canvas said late (counted only as the module's docstring says)

    def penalty_points(self, max_score: float) -> float:
        """The points taken off a score out of ``max_score``."""
        return round(self.penalty_fraction * max_score, 2)

    def final(self, score: float, max_score: float) -> float:
        """``score`` less the penalty, never below 0."""
        return round(max(0.0, score - self.penalty_points(max_score)), 2)


# ------------------------------------------------------------------ reading the course file


def load_course_file(path: Path) -> CourseFile:
    """Read and check the course file at ``path``."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise LateError(f"course file {path} cannot be read: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise LateError(f"course file {path} is not valid TOML: {exc}") from None
    _no_unknown(path, "", data, _TOP_KEYS)
    course = CourseFile(path, _timezone(path, data.get("timezone")), _policy(path, data.get("late", {})))
    for name, table in _table(path, "assignments", data.get("assignments", {})).items():
        course.assignments[_known_assignment(path, f"assignments.{name}", name)] = _settings(path, name, table)
    for name, table in _table(path, "extensions", data.get("extensions", {})).items():
        _known_assignment(path, f"extensions.{name}", name)
        table = _table(path, f"extensions.{name}", table)
        course.extensions[name] = {s: _deadline(path, f"extensions.{name}.{s}", d) for s, d in table.items()}
    return course


def _table(path: Path, key: str, value: object) -> dict:
    if not isinstance(value, dict):
        raise LateError(f"course file {path}: [{key}] should be a table")
    return value


def _no_unknown(path: Path, where: str, table: dict, known: set[str]) -> None:
    unknown = sorted(set(table) - known)
    if unknown:
        names = ", ".join(f"{where}.{k}" if where else k for k in unknown)
        raise LateError(f"course file {path}: unknown key {names} (known: {', '.join(sorted(known))})")


def _timezone(path: Path, name: object) -> tzinfo | None:
    if name is None:
        return None
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        raise LateError(f"course file {path}: timezone {name!r} is not a time zone name "
                        f"(e.g. Europe/London, America/New_York, UTC)") from None


def _policy(path: Path, table: object) -> Policy:
    table = _table(path, "late", table)
    _no_unknown(path, "late", table, _LATE_KEYS)
    per = table.get("per", "day")
    if per not in UNITS:
        raise LateError(f"course file {path}: late.per is {per!r}; it should be \"day\" or \"hour\"")
    numbers = {}
    for key, default, top in (("penalty", 0.0, 1.0), ("cap", 1.0, 1.0), ("grace_minutes", 0.0, math.inf)):
        value = table.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= top:
            bounds = "between 0 and 1" if top == 1.0 else "0 or more"
            raise LateError(f"course file {path}: late.{key} is {value!r}; it should be a number {bounds}")
        numbers[key] = float(value)
    return Policy(per, **numbers)


def _known_assignment(path: Path, key: str, name: str) -> str:
    try:
        return load_assignment(name).name
    except GraderError as exc:
        raise LateError(f"course file {path}: [{key}]: {exc}") from None


def _settings(path: Path, name: str, table: object) -> AssignmentSettings:
    table = _table(path, f"assignments.{name}", table)
    _no_unknown(path, f"assignments.{name}", table, _ASSIGNMENT_KEYS)
    deadline = table.get("deadline")
    canvas_id = table.get("canvas_id")
    if canvas_id is not None and not str(canvas_id).isdigit():
        raise LateError(f"course file {path}: assignments.{name}.canvas_id is {canvas_id!r}; it should be the "
                        f"number at the end of the assignment's Canvas address (.../assignments/4321)")
    title = table.get("title")
    return AssignmentSettings(None if deadline is None else _deadline(path, f"assignments.{name}.deadline", deadline),
                              None if canvas_id is None else str(canvas_id), None if title is None else str(title))


def _deadline(path: Path, key: str, value: object) -> datetime:
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            pass
    if not isinstance(value, datetime):
        raise LateError(f"course file {path}: {key} is {value!r}; it should be a date and time such as "
                        f"2026-10-01T23:59:00+01:00")
    if value.tzinfo is None:
        raise LateError(f"course file {path}: {key} = {value.isoformat()} has no time zone offset: "
                        f"write it as {value.isoformat()}+01:00 (or Z for UTC)")
    return value


def course_file_path(course_dir: Path, course_file: Path | None) -> Path | None:
    """The course file to read: ``course_file`` (which must exist), else ``course_dir/course.toml`` if there."""
    if course_file is not None:
        if not course_file.is_file():
            raise LateError(f"course file {course_file} does not exist")
        return course_file
    default = course_dir / COURSE_FILE
    return default if default.is_file() else None


# ------------------------------------------------------------------ assessing each student


def handed_in(work: Path) -> dict[str, dict]:
    """student -> their ``handed_in.json`` (``{}`` where there is none), for each work folder under ``work``
    (the one in force: :func:`grader.autograde.live_folder`)."""
    from .autograde import REPLACED, STAGED, live_folder

    if not work.is_dir():
        return {}
    students = {p.name.removesuffix(REPLACED) for p in work.iterdir() if p.is_dir() and not p.name.endswith(STAGED)}
    out = {}
    for student in sorted(students):
        path = live_folder(work, student) / HANDED_IN
        try:
            out[student] = json.loads(path.read_text()) if path.is_file() else {}
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise GraderError(f"{path} cannot be read: {exc}") from None
    return out


def assess(assignment: str, course_dir: Path, course_file: Path | None = None) -> dict[str, Lateness]:
    """student -> :class:`Lateness` for each student graded for ``assignment`` in ``course_dir``; ``{}`` when
    there is no course file or it gives the assignment no deadline."""
    path = course_file_path(course_dir, course_file)
    if path is None:
        return {}
    course = load_course_file(path)
    name = load_assignment(assignment).name
    settings = course.assignments.get(name)
    if settings is None or settings.deadline is None:
        return {}
    hand_ins = handed_in(course_dir / "work" / name)
    extensions = course.extensions.get(name, {})
    strangers = sorted(set(extensions) - set(hand_ins))
    if strangers:
        raise LateError(f"course file {path}: [extensions.{name}] names students with no graded result for "
                        f"{name} in {course_dir}: {', '.join(strangers)}")
    return {student: lateness(info, extensions.get(student, settings.deadline), student in extensions,
                              course, f"{student}'s {HANDED_IN}")
            for student, info in hand_ins.items()}


def lateness(info: dict, deadline: datetime, extended: bool, course: CourseFile, where: str) -> Lateness:
    """One student's :class:`Lateness`, from their ``handed_in.json`` (``info``) and their deadline."""
    submitted = _submitted_at(info.get("submitted_at"), course, where)
    flagged = bool(info.get("late_flag"))
    policy = course.policy
    late_by = max(timedelta(0), submitted - deadline) if submitted is not None else timedelta(0)
    counted = late_by - timedelta(minutes=policy.grace_minutes)
    units = math.ceil(counted / UNITS[policy.per]) if counted > timedelta(0) else 0
    if units == 0 and flagged and not extended:
        units = 1  # Canvas knew a deadline that the course file does not (see the module's docstring)
    return Lateness(submitted, deadline, late_by, units, round(min(policy.cap, policy.penalty * units), 4),
                    extended, flagged)


def _submitted_at(value: object, course: CourseFile, where: str) -> datetime | None:
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(str(value))
    except ValueError:
        raise LateError(f"{where}: submitted_at {value!r} is not a date and time") from None
    if when.tzinfo is None:
        if course.timezone is None:
            raise LateError(f"{where}: submitted_at {value} has no time zone (the LMS server's local time): "
                            f"set `timezone` in the course file {course.path} (e.g. timezone = \"Europe/London\")")
        when = when.replace(tzinfo=course.timezone)
    return when
