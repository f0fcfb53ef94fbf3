"""``grader export --format canvas|moodle|csv`` (grader/lms.py) on course folders written by hand
(tests/lms_support.py; no kernel runs): Canvas's gradebook import CSV and Moodle's offline grading worksheet,
written out here as their documentation shows them, the late penalty and an extension, per-part columns, and
students the LMS ids do not cover."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from grader.course import SOLUTIONS

if not SOLUTIONS.is_dir():  # the public copy (`grader publish`) has no solutions/
    pytest.skip("needs solutions/ (private, not in the public copy)", allow_module_level=True)

from lms_support import COURSE, A, hand_in, make_course

from grader.cli import main
from grader.course import GraderError
from grader.export import COLUMNS
from grader.lms import LmsError, build, part_points, write

GRADED = {"s001": {}, "s002": {"linear_forward": 0.5}, "s003": {}}  # 17, 16.5 and 17 points of 25
ON_TIME, TWO_DAYS = "2026-10-01T22:00:00", "2026-10-03T01:00:00"  # London time, as the LMS archive gives it


def canvas_hand_ins() -> dict[str, dict]:
    return {
        "s001": hand_in("canvas", "101", "smithjane", ON_TIME, False,
                        {"name": "Smith, Jane", "sis_user_id": "S001", "sis_login_id": "jsmith", "section": "A"}),
        "s002": hand_in("canvas", "102", "doejohn", TWO_DAYS, True, {}),
        "s003": hand_in("canvas", "103", "leeann", TWO_DAYS, True, {}),  # late, but extended to 4 October
    }


@pytest.fixture(scope="module")
def canvas(tmp_path_factory) -> Path:
    folder = make_course(tmp_path_factory.mktemp("canvas") / "course", GRADED, canvas_hand_ins())
    (folder / "course.toml").write_text(COURSE)
    return folder


@pytest.fixture(scope="module")
def moodle(tmp_path_factory) -> Path:
    return make_course(tmp_path_factory.mktemp("moodle") / "course", GRADED, {
        "s001": hand_in("moodle", "4242", "Jane Smith", ON_TIME, None, {"email": "jane@uni.example"}),
        "s002": hand_in("moodle", "4243", "John Doe", TWO_DAYS, None, {"email": "john@uni.example"}),
        "s003": hand_in("moodle", "4244", "Ann Lee", TWO_DAYS, None, {}),
    })


def text(path: Path) -> str:
    return path.read_bytes().decode()


# ------------------------------------------------------------------ Canvas


def test_canvas_gradebook_import_csv_with_the_late_penalty_and_an_extension(canvas, tmp_path):
    """Canvas's documented import layout: Student, ID, SIS User ID, SIS Login ID, Section, then
    "<assignment> (<id>)"; its own export's "Points Possible" row second. s002 is two days late (-5 of 25);
    s003 as late but with an extension; s001 on time."""
    out = tmp_path / "canvas.csv"
    write(A, canvas, out, "canvas")
    assert text(out) == (
        "Student,ID,SIS User ID,SIS Login ID,Section,Backprop (4321)\r\n"
        "    Points Possible,,,,,25\r\n"
        '"Smith, Jane",101,S001,jsmith,A,17\r\n'
        "doejohn,102,,,,11.5\r\n"
        "leeann,103,,,,17\r\n")
    assert not list(tmp_path.glob(".*.tmp"))


def test_canvas_without_a_course_file_needs_the_assignment_id(canvas, tmp_path):
    other = tmp_path / "empty.toml"
    other.write_text("")
    with pytest.raises(LmsError, match=r"Canvas needs the id of backprop's Canvas assignment: the number at the end "
                                       r"of its address .*--lms-assignment-id"):
        build(A, canvas, "canvas", course_file=other)
    table = build(A, canvas, "canvas", course_file=other, lms_assignment_id="99")
    assert table.header[-1] == "backprop (99)"
    assert [r[-1] for r in table.rows[1:]] == ["17", "16.5", "17"]  # no late policy: the gradebook's scores
    with pytest.raises(LmsError, match="--lms-assignment-id 'abc' is not a Canvas id"):
        build(A, canvas, "canvas", course_file=other, lms_assignment_id="abc")


def test_part_columns_hold_each_parts_points_and_no_canvas_id(canvas):
    table = build(A, canvas, "canvas", part_columns=True)
    parts = table.header[6:]
    assert "Part linear_forward of Backprop" in parts and not any(c.endswith(")") for c in parts)
    s002 = dict(zip(table.header, table.rows[2]))
    assert s002["Part linear_forward of Backprop"] == "0.5" and s002["Part linear_backward of Backprop"] == "1"
    assert s002["Part mlp_loss_and_grads of Backprop"] == "2"  # weight 2 of 3 in a 3-point cell
    assert sum(part_points(A, canvas, "s001").values()) == pytest.approx(17)


# ------------------------------------------------------------------ Moodle


def test_moodle_offline_grading_worksheet(moodle, tmp_path):
    """Moodle's worksheet: "Participant <id>" (the id in the archive's names), the final grade out of the
    maximum. Without a course file, no penalty."""
    out = tmp_path / "moodle.csv"
    write(A, moodle, out, "moodle")
    assert text(out) == (
        "Identifier,Full name,Email address,Status,Grade,Maximum Grade,Grade can be changed,"
        "Last modified (submission),Last modified (grade),Feedback comments\r\n"
        "Participant 4242,Jane Smith,jane@uni.example,graded,17,25,Yes,-,-,\r\n"
        "Participant 4243,John Doe,john@uni.example,graded,16.5,25,Yes,-,-,\r\n"
        "Participant 4244,Ann Lee,,graded,17,25,Yes,-,-,\r\n")


def test_moodle_with_the_late_policy(moodle, tmp_path):
    course = tmp_path / "course.toml"
    course.write_text(COURSE)
    grades = [row[4] for row in build(A, moodle, "moodle", course_file=course).rows]
    assert grades == ["17", "11.5", "17"]


def test_an_archive_of_the_other_lms_is_refused(moodle, tmp_path):
    with pytest.raises(LmsError, match="s001, s002, s003 handed in through another LMS than Canvas"):
        build(A, moodle, "canvas", lms_assignment_id="1")


def test_moodle_for_a_class_that_handed_in_elsewhere_is_its_gradebook_import_by_email(canvas, tmp_path):
    """Canvas's hand-ins carry no Moodle participant id: Moodle's gradebook import CSV, matched by the roster's
    email, with the late policy's final grade; a student without an email stops it, naming them."""
    with pytest.raises(LmsError, match=r"no Moodle participant id nor email for 3 graded student\(s\): s001, s002, "
                                       r"s003.*email column in the roster"):
        build(A, canvas, "moodle")
    roster = tmp_path / "roster.csv"
    roster.write_text("lms_id,student_id,email\n101,s001,jane@uni.example\n102,s002,john@uni.example\n"
                      "103,s003,ann@uni.example\n")
    out = tmp_path / "moodle.csv"
    write(A, canvas, out, "moodle", roster=roster)
    assert text(out) == ("Email address,Full name,Backprop\r\n"
                         'jane@uni.example,"Smith, Jane",17\r\n'
                         "john@uni.example,doejohn,11.5\r\n"
                         "ann@uni.example,leeann,17\r\n")


# ------------------------------------------------------------------ csv


def test_csv_stays_the_grader_columns_and_adds_the_late_figures(canvas, moodle, tmp_path):
    assert build(A, moodle).header == COLUMNS  # no course file: today's columns
    table = build(A, canvas)
    assert table.header == COLUMNS + ["late_by_hours", "late_units", "late_penalty", "final_score"]
    rows = {r[0]: dict(zip(table.header, r)) for r in table.rows}
    assert (rows["s002"]["score"], rows["s002"]["late_by_hours"], rows["s002"]["late_units"]) == (16.5, 25.02, 2)
    assert (rows["s002"]["late_penalty"], rows["s002"]["final_score"]) == ("5", "11.5")
    assert (rows["s003"]["late_units"], rows["s003"]["final_score"]) == (0, "17")  # extended


# ------------------------------------------------------------------ unmatched students


def test_a_student_with_no_lms_id_stops_the_export_naming_all_of_them(tmp_path):
    hand_ins = canvas_hand_ins()
    del hand_ins["s002"]  # graded from a plain folder: no handed_in.json
    hand_ins["s003"]["lms_id"] = None
    course = make_course(tmp_path / "course", GRADED, hand_ins)
    out = tmp_path / "grades.csv"
    with pytest.raises(LmsError, match=r"no Canvas id for 2 graded student\(s\): s002, s003 .*nothing was written"):
        write(A, course, out, "canvas", lms_assignment_id="4321")
    assert not out.exists() and not list(tmp_path.glob(".*.tmp"))

    roster = tmp_path / "roster.csv"
    roster.write_text("lms_id,student_id,name,section\n102,s002,\"Doe, John\",B\n")
    with pytest.raises(LmsError, match=r"1 graded student\(s\): s003 .*nor in the roster"):
        write(A, course, out, "canvas", roster, lms_assignment_id="4321")
    roster.write_text("lms_id,student_id,name,section\n102,s002,\"Doe, John\",B\n103,s003,Ann Lee,B\n")
    write(A, course, out, "canvas", roster, lms_assignment_id="4321")
    assert '"Doe, John",102,,,B,16.5\r\n' in text(out) and "Ann Lee,103,,,B,17\r\n" in text(out)


@pytest.mark.parametrize("broken", ["{\"student\": \"s002\", \"sco", "[1, 2]"])
def test_a_result_that_cannot_be_read_stops_the_export_naming_its_file(tmp_path, capsys, monkeypatch, broken):
    """A student's result.json cut short or replaced by hand: no raw JSON error and no file written, but the
    path of the result and what to do, in each format and from the command line."""
    monkeypatch.setenv("PATH", os.environ["PATH"])
    course = make_course(tmp_path / "course", GRADED, canvas_hand_ins())
    (course / "course.toml").write_text(COURSE)
    result = course / "work" / A / "s002" / "result.json"
    result.write_text(broken)
    out = tmp_path / "grades.csv"
    for fmt in ("csv", "canvas", "moodle"):
        with pytest.raises(GraderError, match=r"s002/result\.json (is not valid JSON|holds a list).*grade the "):
            write(A, course, out, fmt)
        assert not out.exists() and not list(tmp_path.glob(".*.tmp"))
    assert main(["export", A, "--course-dir", str(course), "--format", "canvas", "--out", str(out)]) == 2
    assert "s002/result.json" in capsys.readouterr().err and not out.exists()


# ------------------------------------------------------------------ the command line


def test_the_command_line_writes_each_format(canvas, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", os.environ["PATH"])  # main() puts this Python's bin/ first; put it back after
    out = tmp_path / "canvas.csv"
    assert main(["export", A, "--course-dir", str(canvas), "--format", "canvas", "--out", str(out)]) == 0
    assert "wrote 3 rows to" in capsys.readouterr().out and "Backprop (4321)" in text(out)
    assert main(["export", A, "--course-dir", str(canvas), "--csv", str(tmp_path / "g.csv"), "--part-columns"]) == 0
    assert "part:sgd_step" in text(tmp_path / "g.csv").splitlines()[0]
    status = main(["export", A, "--course-dir", str(canvas), "--format", "canvas", "--out", str(out),
                   "--course-file", str(tmp_path / "missing.toml")])
    assert status == 2 and "missing.toml does not exist" in capsys.readouterr().err
