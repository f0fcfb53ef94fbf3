"""The late policy (grader/late.py): the course file's checks, the rule (grace, started days or hours, the cap,
extensions, Canvas's LATE_ flag, naive LMS times read in the course's time zone), and ``assess`` on a course
folder written by hand (tests/lms_support.py). No kernel runs."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from grader.course import SOLUTIONS

if not SOLUTIONS.is_dir():  # the public copy (`grader publish`) has no solutions/
    pytest.skip("needs solutions/ (private, not in the public copy)", allow_module_level=True)

from lms_support import COURSE, A, hand_in, make_course

from grader.late import LateError, assess, lateness, load_course_file

DEADLINE = datetime(2026, 10, 1, 23, 59, tzinfo=timezone(timedelta(hours=1)))


def course_file(tmp_path: Path, text: str = COURSE) -> Path:
    path = tmp_path / "course.toml"
    path.write_text(text)
    return path


@pytest.fixture
def course(tmp_path):
    return load_course_file(course_file(tmp_path))


@pytest.mark.parametrize("submitted, units, fraction", [
    ("2026-10-01T23:00:00+01:00", 0, 0.0),  # on time
    ("2026-10-02T00:10:00+01:00", 0, 0.0),  # 11 minutes late: within the 15 minutes' grace
    ("2026-10-02T00:15:00+01:00", 1, 0.1),  # 16 minutes: one day started after the grace
    ("2026-10-03T00:14:00+01:00", 1, 0.1),  # a day and 15 minutes: still the first day after the grace
    ("2026-10-03T00:15:00+01:00", 2, 0.2),
    ("2026-10-20T12:00:00+01:00", 19, 0.5),  # capped
    ("2026-10-01T23:59:00Z", 1, 0.1),  # UTC: 00:59 in London, an hour late
])
def test_started_days_after_the_grace_cost_the_penalty_up_to_the_cap(course, submitted, units, fraction):
    got = lateness({"submitted_at": submitted}, DEADLINE, False, course, "x")
    assert (got.units, got.penalty_fraction) == (units, fraction)
    assert got.late_by == max(timedelta(0), got.submitted_at - DEADLINE)


def test_a_naive_time_is_read_in_the_course_time_zone(course):
    got = lateness({"submitted_at": "2026-10-02T00:30:00"}, DEADLINE, False, course, "x")
    assert got.submitted_at.utcoffset() == timedelta(hours=1) and got.late_by == timedelta(minutes=31)
    winter = lateness({"submitted_at": "2026-12-01T12:00:00"}, DEADLINE, False, course, "x")
    assert winter.submitted_at.utcoffset() == timedelta(0)  # GMT in December


def test_hours_and_the_penalty_in_points(tmp_path):
    course = load_course_file(course_file(tmp_path, COURSE.replace('per = "day"', 'per = "hour"')))
    got = lateness({"submitted_at": "2026-10-02T02:30:00+01:00"}, DEADLINE, False, course, "x")
    assert got.units == 3 and got.penalty_fraction == 0.3  # 2 h 31 min less 15 min: 3 hours started
    assert got.penalty_points(25) == 7.5 and got.final(17, 25) == 9.5 and got.final(5, 25) == 0


def test_canvas_late_flag_counts_one_unit_when_the_time_says_on_time(course):
    on_time = "2026-10-01T20:00:00+01:00"
    assert lateness({"submitted_at": on_time, "late_flag": True}, DEADLINE, False, course, "x").units == 1
    assert lateness({"submitted_at": None, "late_flag": True}, DEADLINE, False, course, "x").units == 1
    assert lateness({"submitted_at": on_time, "late_flag": True}, DEADLINE, True, course, "x").units == 0  # extended
    assert lateness({}, DEADLINE, False, course, "x").units == 0  # no time, no flag: not late
    late = lateness({"submitted_at": "2026-10-03T12:00:00+01:00", "late_flag": True}, DEADLINE, False, course, "x")
    assert late.units == 2  # the time says late: the flag adds nothing


def test_a_naive_time_without_a_time_zone_is_refused(tmp_path):
    course = load_course_file(course_file(tmp_path, COURSE.replace('timezone = "Europe/London"', "")))
    with pytest.raises(LateError, match="s001's handed_in.json: submitted_at 2026-10-02T00:30:00 has no time zone"):
        lateness({"submitted_at": "2026-10-02T00:30:00"}, DEADLINE, False, course, "s001's handed_in.json")


@pytest.mark.parametrize("change, message", [
    (("[late]", "colour = 1\n[late]"), "unknown key colour"),
    (("cap = 0.50", "cap = 0.50\ncaps = 1"), "unknown key late.caps"),
    (("canvas_id = 4321", "canvas_id = 4321\ndue = 1"), f"unknown key assignments.{A}.due"),
    (("penalty = 0.10", "penalty = 1.5"), "late.penalty is 1.5; it should be a number between 0 and 1"),
    (("penalty = 0.10", "penalty = -0.1"), "late.penalty is -0.1"),
    (('per = "day"', 'per = "week"'), "late.per is 'week'"),
    (("deadline = 2026-10-01T23:59:00+01:00", "deadline = 2026-10-01T23:59:00"),
     f"assignments.{A}.deadline = 2026-10-01T23:59:00 has no time zone offset"),
    (("s003 = 2026-10-04T23:59:00+01:00", "s003 = 2026-10-04T23:59:00"), f"extensions.{A}.s003 = .* no time zone"),
    ((f"[extensions.{A}]", "[extensions.nosuch]"), r"\[extensions.nosuch\]: unknown assignment 'nosuch'"),
    ((f"[assignments.{A}]", "[assignments.nosuch]"), r"\[assignments.nosuch\]: unknown assignment"),
    (('timezone = "Europe/London"', 'timezone = "Mars/Olympus"'), "timezone 'Mars/Olympus' is not a time zone"),
    (("canvas_id = 4321", 'canvas_id = "abc"'), "canvas_id is 'abc'"),
    (("[late]", "[late"), "is not valid TOML"),
])
def test_a_bad_course_file_is_refused_naming_the_key(tmp_path, change, message):
    path = course_file(tmp_path, COURSE.replace(*change))
    with pytest.raises(LateError, match=message):
        load_course_file(path)


# ------------------------------------------------------------------ assess on a course folder


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return make_course(tmp_path_factory.mktemp("late") / "course", {s: {} for s in ("s001", "s002", "s003", "s004")}, {
        "s001": hand_in("canvas", "101", submitted_at="2026-10-01T22:00:00"),  # naive, London: on time
        "s002": hand_in("canvas", "102", submitted_at="2026-10-03T01:00:00"),  # 25 h 1 min late: 2 days
        "s003": hand_in("canvas", "103", submitted_at="2026-10-03T01:00:00"),  # extended to 4 October
        # s004: no handed_in.json (graded from a plain folder): not late
    })


def test_assess_gives_each_graded_student_their_lateness(folder, tmp_path):
    got = assess(A, folder, course_file(tmp_path))
    assert sorted(got) == ["s001", "s002", "s003", "s004"]
    assert [got[s].units for s in sorted(got)] == [0, 2, 0, 0]
    assert got["s002"].penalty_fraction == 0.2 and got["s002"].late_by == timedelta(hours=25, minutes=1)
    assert got["s003"].extended and got["s003"].deadline == DEADLINE + timedelta(days=3)
    assert got["s004"].submitted_at is None and not got["s004"].extended


def test_assess_without_a_course_file_or_a_deadline_is_empty(folder, tmp_path):
    assert assess(A, folder) == {}  # no course.toml in the course folder
    no_deadline = course_file(tmp_path, COURSE.replace("deadline = 2026-10-01T23:59:00+01:00\n", ""))
    assert assess(A, folder, no_deadline) == {}
    with pytest.raises(LateError, match="course file .*nope.toml does not exist"):
        assess(A, folder, tmp_path / "nope.toml")


def test_an_extension_for_a_student_not_graded_is_refused(folder, tmp_path):
    path = course_file(tmp_path, COURSE + "s999 = 2026-10-04T23:59:00+01:00\nzed = 2026-10-04T23:59:00Z\n")
    with pytest.raises(LateError, match=rf"\[extensions.{A}\] names students with no graded result .*: s999, zed"):
        assess(A, folder, path)


def test_the_shipped_example_course_file_is_valid():
    example = load_course_file(Path(__file__).resolve().parents[1] / "grader" / "course.example.toml")
    assert example.policy.penalty == 0.10 and example.assignments[A].canvas_id == "4321"
    assert example.extensions[A]["s007"].utcoffset() == timedelta(hours=1)
