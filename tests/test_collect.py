"""``grader collect`` (grader/collect.py): Canvas and Moodle archives, built here with zipfile, turned into
the ``<student>/<assignment>/<notebook>`` folders that ``grader autograde`` reads. No kernel runs."""
from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import nbformat
import pytest

from grader.autograde import find_submissions
from grader.cli import main
from grader.collect import COLLECT_NOTE, LMS_NOTE, ArchiveLimits, CollectError, collect, summary
from grader.course import SOLUTIONS, load_assignment

if not SOLUTIONS.is_dir():  # the public copy (`grader publish`) has no solutions/
    pytest.skip("needs solutions/ (private, not in the public copy)", allow_module_level=True)

A = "word2vec"
NB = load_assignment(A).notebook  # word2vec.ipynb
DAY1, DAY2 = (2024, 3, 1, 9, 0, 0), (2024, 3, 2, 9, 0, 0)


def notebook(source: str = "x = 1") -> bytes:
    return nbformat.writes(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source, id="cell-1")])).encode()


def zip_bytes(members: list[tuple]) -> bytes:
    """A zip of ``(name, data)`` or ``(name, data, date_time)`` members, compressed."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, *when in members:
            zf.writestr(zipfile.ZipInfo(name, date_time=when[0] if when else DAY1), data,
                        compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def archive(tmp_path: Path, members: list[tuple], name: str = "submissions.zip") -> Path:
    path = tmp_path / name
    path.write_bytes(zip_bytes(members))
    return path


def collected(dest: Path, student: str) -> bytes:
    return (dest / student / A / NB).read_bytes()


def noted(dest: Path, student: str) -> dict:
    """The note of a student who gets no notebook (grader.collect.COLLECT_NOTE): with LMS_NOTE, the only files
    of their folder."""
    folder = dest / student / A
    assert sorted(p.name for p in folder.iterdir()) == sorted([COLLECT_NOTE, LMS_NOTE]), sorted(folder.iterdir())
    return json.loads((folder / COLLECT_NOTE).read_text())


def lms(dest: Path, student: str) -> dict:
    return json.loads((dest / student / A / LMS_NOTE).read_text())


def untouched(tmp_path: Path, dest: Path) -> None:
    """Nothing half-written: no destination, no temporary folder left beside it."""
    assert not dest.exists()
    assert not list(dest.parent.glob(".collect-*"))


@pytest.fixture
def dest(tmp_path: Path) -> Path:
    return tmp_path / "course" / "submitted"


# ------------------------------------------------------------------ the two LMSs' layouts


def test_canvas_archive_becomes_the_folders_autograde_reads(tmp_path, dest):
    jane, john = notebook("jane = 1"), notebook("john = 2")
    zf = archive(tmp_path, [(f"smithjane_12345_67890_{NB}", jane), (f"doejohn_LATE_23456_67891_{NB}", john)])
    report = collect(A, zf, dest)
    assert collected(dest, "12345") == jane and collected(dest, "23456") == john  # the bytes as handed in
    assert dict(report.collected) == {"12345": "", "23456": "late (Canvas)"}
    assert report.exit_status == 0 and not report.skipped
    subs = find_submissions(load_assignment(A), dest)
    assert [(s.student, s.notebook.name, s.note) for s in subs] == [("12345", NB, ""), ("23456", NB, "")]
    assert not list(dest.parent.glob(".collect-*"))  # no temporary folder left beside dest


def test_canvas_lower_case_late_marker(tmp_path, dest):
    report = collect(A, archive(tmp_path, [(f"smithjane_late_12345_67890_{NB}", notebook())]), dest)
    assert report.collected == [("12345", "late (Canvas)")]


def test_moodle_archive_in_each_of_its_layouts(tmp_path, dest):
    members = [
        (f"Jane Smith_4242_assignsubmission_file/{NB}", notebook("a = 1")),  # Moodle 4.1 and later
        (f"John Doe_4243_assignsubmission_file_/{NB}", notebook("b = 1")),  # 3.1 to 4.0
        (f"Ann Lee_4244_assignsubmission_file_{NB}", notebook("c = 1")),  # "download as folders" off
        ("Jane Smith_4242_assignsubmission_onlinetext_/onlinetext.html", b"<p>hi</p>"),  # another plugin
        ("Participant_4245_assignsubmission_file/sub/folder/" + NB, notebook("d = 1")),  # blind marking, a subfolder
    ]
    report = collect(A, archive(tmp_path, members), dest)
    assert sorted(s for s, _ in report.collected) == ["4242", "4243", "4244", "4245"]
    assert collected(dest, "4243") == notebook("b = 1")
    assert report.exit_status == 0, summary(report)


def test_files_no_lms_named_are_reported_not_dropped(tmp_path, dest):
    zf = archive(tmp_path, [(f"smithjane_12345_67890_{NB}", notebook()), ("notes.txt", b"x"),
                            ("__MACOSX/._notes.txt", b"x"), (".DS_Store", b"x")])
    report = collect(A, zf, dest)
    assert report.unrecognised == ["notes.txt"]  # zip tools' own files are not reported
    assert report.exit_status == 1
    assert any("notes.txt" in line for line in summary(report))


# ------------------------------------------------------------------ the roster


def roster(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_roster_maps_lms_ids_and_reports_the_unknown_and_the_absent(tmp_path, dest):
    zf = archive(tmp_path, [(f"smithjane_12345_1_{NB}", notebook()), (f"doejohn_23456_2_{NB}", notebook()),
                            (f"leeann_99999_3_{NB}", notebook())])
    ids = roster(tmp_path, "\ufefflms_id, student_id\n12345,s001\n23456, s002\n\n55555,s005\n")  # Excel's BOM
    report = collect(A, zf, dest, ids)
    assert sorted(report.collected) == [("s001", ""), ("s002", "")]
    assert sorted(p.name for p in dest.iterdir()) == ["s001", "s002", "s005"]  # s005: a row, missing
    assert report.skipped == [("99999, leeann", f"LMS id 99999 is not in the roster {ids}")]
    assert report.absent == ["s005"]
    assert noted(dest, "s005") == {"status": "missing", "why": "nothing handed in (not in the LMS archive)"}
    assert report.exit_status == 1


@pytest.mark.parametrize("text, message", [
    ("id,student\n1,s1\n", "needs the columns lms_id,student_id"),
    ("lms_id,student_id\n1,s1\n1,s2\n", "lms_id 1 is mapped twice"),
    ("lms_id,student_id\n1,s1\n2,s1\n", "student_id s1 is given to two LMS ids"),
    ("lms_id,student_id\n1,../s1\n", "line 2: student id '../s1' is not a valid id"),
    ("lms_id,student_id\n1,\n", "line 2: both lms_id and student_id are needed"),
    ("lms_id,student_id\n", "maps no student"),
])
def test_a_bad_roster_stops_before_anything_is_written(tmp_path, dest, text, message):
    zf = archive(tmp_path, [(f"smithjane_1_1_{NB}", notebook())])
    with pytest.raises(CollectError, match=message):
        collect(A, zf, dest, roster(tmp_path, text))
    untouched(tmp_path, dest)


def test_a_missing_roster_is_named(tmp_path, dest):
    with pytest.raises(CollectError, match="roster .*nope.csv cannot be read"):
        collect(A, archive(tmp_path, [(f"smithjane_1_1_{NB}", notebook())]), dest, tmp_path / "nope.csv")


# ------------------------------------------------------------------ which notebook


@pytest.mark.parametrize("members, winner", [
    # Canvas: the larger upload id is the later upload, whatever the -N suffix says
    ([(f"smithjane_12345_100_{NB}", notebook("old")), ("smithjane_12345_200_word2vec-1.ipynb", notebook("new"))],
     "new"),
    ([(f"smithjane_12345_300_{NB}", notebook("new")), ("smithjane_12345_200_word2vec-1.ipynb", notebook("old"))],
     "new"),
    # Moodle: the later modification time, whatever the copy number says
    ([(f"Jane Smith_4242_assignsubmission_file/{NB}", notebook("new"), DAY2),
      ("Jane Smith_4242_assignsubmission_file/word2vec (1).ipynb", notebook("old"), DAY1)], "new"),
    # the same time: the larger copy number
    ([(f"Jane Smith_4242_assignsubmission_file/{NB}", notebook("old"), DAY1),
      ("Jane Smith_4242_assignsubmission_file/word2vec (1).ipynb", notebook("new"), DAY1)], "new"),
])
def test_of_several_uploads_the_latest_wins(tmp_path, dest, members, winner):
    report = collect(A, archive(tmp_path, members), dest)
    student = report.collected[0][0]
    assert collected(dest, student) == notebook(winner)
    assert "the latest of 2 uploads" in report.collected[0][1]


def test_two_uploads_nothing_orders_are_not_guessed(tmp_path, dest):
    members = [(f"Jane Smith_4242_assignsubmission_file/a/{NB}", notebook("a")),
               (f"Jane Smith_4242_assignsubmission_file/b/{NB}", notebook("b"))]
    report = collect(A, archive(tmp_path, members), dest)
    assert not report.collected and "nothing tells which is the latest" in report.skipped[0][1]
    assert noted(dest, "4242")["status"] == "invalid" and "nothing tells" in noted(dest, "4242")["why"]


@pytest.mark.parametrize("name", ["Untitled.ipynb", "word2vec (1).ipynb", "Word2Vec-3.ipynb"])
def test_a_renamed_notebook_is_found_when_it_is_the_only_one(tmp_path, dest, name):
    report = collect(A, archive(tmp_path, [(f"smithjane_12345_67890_{name}", notebook("mine")),
                                           ("smithjane_12345_67891_report.pdf", b"%PDF")]), dest)
    assert collected(dest, "12345") == notebook("mine")
    assert report.collected == [("12345", f"{name} collected as {NB}")]


def test_the_assignments_notebook_wins_over_other_notebooks(tmp_path, dest):
    members = [(f"smithjane_12345_1_{NB}", notebook("mine")), ("smithjane_12345_2_scratch.ipynb", notebook())]
    collect(A, archive(tmp_path, members), dest)
    assert collected(dest, "12345") == notebook("mine")


def test_a_notebook_zipped_inside_the_upload_is_found(tmp_path, dest):
    inner = zip_bytes([("hw/Untitled.ipynb", notebook("zipped")), ("__MACOSX/hw/._Untitled.ipynb", b"junk"),
                       ("hw/.ipynb_checkpoints/Untitled-checkpoint.ipynb", notebook("checkpoint")),
                       ("hw/data.csv", b"1,2")])
    report = collect(A, archive(tmp_path, [("smithjane_12345_67890_submission.zip", inner)]), dest)
    assert collected(dest, "12345") == notebook("zipped")
    assert report.collected == [("12345", f"hw/Untitled.ipynb (in submission.zip) collected as {NB}")]


def test_several_notebooks_or_none_are_reported_per_student(tmp_path, dest):
    members = [("smithjane_1_1_a.ipynb", notebook()), ("smithjane_1_2_b.ipynb", notebook()),
               ("doejohn_2_3_report.pdf", b"%PDF"), (f"leeann_3_4_{NB}", notebook())]
    report = collect(A, archive(tmp_path, members), dest)
    assert report.collected == [("3", "")]
    reasons = dict(report.skipped)
    assert reasons["1, smithjane"] == f"2 notebooks and none named {NB}: a.ipynb, b.ipynb (not guessed)"
    assert reasons["2, doejohn"] == "no notebook in the archive (other files: report.pdf)"
    assert report.exit_status == 1


# ------------------------------------------------------------------ one student's bad file


@pytest.mark.parametrize("data, message", [(b"{not json", "not valid JSON"), (b'{"cells": 3}', "no list of cells"),
                                           (b"\xff\xfe", "not valid JSON")])
def test_a_notebook_autograde_would_refuse_skips_that_student_only(tmp_path, dest, data, message):
    zf = archive(tmp_path, [(f"smithjane_1_1_{NB}", data), (f"doejohn_2_2_{NB}", notebook())])
    report = collect(A, zf, dest)
    assert report.collected == [("2", "")]
    assert report.skipped[0][0] == "1, smithjane" and message in report.skipped[0][1]
    assert noted(dest, "1")["status"] == "invalid" and message in noted(dest, "1")["why"]


@pytest.mark.parametrize("inner, message", [
    (b"this is no zip", "submission.zip is not a readable zip"),
    (zip_bytes([(f"../{NB}", notebook())]), "holds a path outside itself"),
])
def test_a_damaged_zip_of_a_students_skips_that_student_only(tmp_path, dest, inner, message):
    zf = archive(tmp_path, [("smithjane_1_1_submission.zip", inner), (f"doejohn_2_2_{NB}", notebook())])
    report = collect(A, zf, dest)
    assert report.collected == [("2", "")]
    assert message in dict(report.skipped)["1, smithjane"]


# ------------------------------------------------------------------ bad archives: nothing written


def _raw(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "submissions.zip"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("make, message", [
    (lambda t: _raw(t, b"PK but not really a zip"), "is not a zip archive"),
    (lambda t: _raw(t, b""), "is not a zip archive"),
    (lambda t: archive(t, []), "is empty"),
    (lambda t: archive(t, [("folder/", b""), ("__MACOSX/._x", b"")]), "is empty"),
    (lambda t: archive(t, [(f"smithjane_1_1_{NB}", notebook()), (f"../smithjane_2_2_{NB}", notebook())]),
     "member path outside the archive: '../smithjane_2_2_"),
    (lambda t: archive(t, [(f"/tmp/smithjane_1_1_{NB}", notebook())]), "member path outside the archive: '/tmp"),
    (lambda t: archive(t, [(f"C:\\smithjane_1_1_{NB}", notebook())]), "member path outside the archive"),
    (lambda t: archive(t, [("readme.txt", b"hello")]), "holds no file named the way Canvas or Moodle"),
    (lambda t: archive(t, [(f"smithjane_1_1_{NB}", notebook()), (f"Jane Smith_2_assignsubmission_file/{NB}",
                                                                 notebook())]), "mixes Canvas and Moodle"),
])
def test_a_bad_archive_is_refused_and_nothing_is_written(tmp_path, dest, make, message):
    with pytest.raises(CollectError, match=message):
        collect(A, make(tmp_path), dest)
    untouched(tmp_path, dest)


def test_a_missing_archive_is_named(tmp_path, dest):
    with pytest.raises(CollectError, match="nope.zip does not exist"):
        collect(A, tmp_path / "nope.zip", dest)


def test_a_member_too_large_is_refused_before_it_is_read(tmp_path, dest):
    bomb = b'{"cells": [], "pad": "' + b" " * (2 * 2**20) + b'"}'  # 2 MiB that deflate to about 2 KiB
    zf = archive(tmp_path, [(f"smithjane_1_1_{NB}", notebook()), (f"doejohn_2_2_{NB}", bomb)])
    assert zf.stat().st_size < 10_000
    with pytest.raises(CollectError, match=r"doejohn_2_2_word2vec.ipynb is 2.0 MiB uncompressed.*--max-file-mib"):
        collect(A, zf, dest, limits=ArchiveLimits(max_file_bytes=2**20))
    untouched(tmp_path, dest)


def test_a_member_that_lies_about_its_size_is_refused(tmp_path, dest):
    big = notebook("x = '" + "a" * 5000 + "'")
    data = bytearray(zip_bytes([(f"smithjane_1_1_{NB}", big)]))
    # declare 100 bytes in both headers (zipfile checks the local header against the central directory)
    for sig, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.index(sig)
        data[at + offset:at + offset + 4] = (100).to_bytes(4, "little")
    with pytest.raises(CollectError, match="is damaged|uncompressed"):
        collect(A, _raw(tmp_path, bytes(data)), dest, limits=ArchiveLimits(max_file_bytes=1000))
    untouched(tmp_path, dest)


def test_the_total_expansion_is_limited_and_earlier_students_are_not_left_written(tmp_path, dest):
    members = [(f"student{i}_{i}_{i}_{NB}", notebook("x = '" + "a" * 3000 + f"{i}'")) for i in range(1, 4)]
    zf = archive(tmp_path, members)
    with pytest.raises(CollectError, match="expands to more than .*--max-total-mib"):
        collect(A, zf, dest, limits=ArchiveLimits(max_file_bytes=5000, max_total_bytes=8000))
    untouched(tmp_path, dest)


def test_a_damaged_member_of_the_lms_archive_is_refused(tmp_path, dest):
    data = bytearray(zip_bytes([(f"smithjane_1_1_{NB}", notebook("x = 'some text to deflate'"))]))
    at = data.index(b"PK\x03\x04") + 30 + len(f"smithjane_1_1_{NB}")
    data[at + 5] ^= 0xFF  # a byte of the compressed data
    with pytest.raises(CollectError, match="is damaged"):
        collect(A, _raw(tmp_path, bytes(data)), dest)
    untouched(tmp_path, dest)


@pytest.mark.parametrize("limits", [ArchiveLimits(max_file_bytes=0), ArchiveLimits(max_total_bytes=-1)])
def test_limits_must_be_positive(tmp_path, dest, limits):
    with pytest.raises(CollectError, match="must be positive"):
        collect(A, archive(tmp_path, [(f"smithjane_1_1_{NB}", notebook())]), dest, limits=limits)


# ------------------------------------------------------------------ lms.json: what the LMS said of each hand-in


def test_each_collected_folder_records_what_canvas_said(tmp_path, dest):
    zf = archive(tmp_path, [(f"smithjane_12345_67890_{NB}", notebook(), DAY1),
                            (f"doejohn_LATE_23456_67891_{NB}", notebook("a"), DAY1),
                            (f"doejohn_LATE_23456_67899_{NB[:-6]}-1.ipynb", notebook("b"), DAY2),  # the latest
                            ("leeann_34567_1_x.zip", zip_bytes([("x.ipynb", notebook(), DAY1)]), DAY2)])
    collect(A, zf, dest)
    assert lms(dest, "12345") == {"lms": "canvas", "lms_id": "12345", "name": "smithjane", "late_flag": False,
                                  "submitted_at": "2024-03-01T09:00:00", "file": f"smithjane_12345_67890_{NB}",
                                  "roster": {}}
    john = lms(dest, "23456")
    assert (john["late_flag"], john["submitted_at"], john["file"]) == (True, "2024-03-02T09:00:00",
                                                                      f"doejohn_LATE_23456_67899_{NB[:-6]}-1.ipynb")
    ann = lms(dest, "34567")  # a notebook inside the student's zip: the zip's (the outer member's) time
    assert (ann["submitted_at"], ann["file"]) == ("2024-03-02T09:00:00", "leeann_34567_1_x.zip")
    subs = find_submissions(load_assignment(A), dest)  # lms.json is not taken for a notebook
    assert [(s.student, s.notebook.name) for s in subs] == [("12345", NB), ("23456", NB), ("34567", NB)]


def test_moodle_and_the_rosters_extra_columns_and_the_students_without_a_notebook(tmp_path, dest):
    zf = archive(tmp_path, [(f"Jane Smith_4242_assignsubmission_file/{NB}", notebook(), DAY2),
                            ("John Doe_4243_assignsubmission_file/notes.txt", b"x")])
    ids = roster(tmp_path, "lms_id,student_id,name,email,section,tutor\n4242,s001,\"Smith, Jane\",j@x.org,A,Bo\n"
                           "4243,s002,,,,\n4244,s003,Ann Lee,a@x.org,B,Cy\n")
    report = collect(A, zf, dest, ids)
    assert report.collected == [("s001", "")]
    assert lms(dest, "s001") == {"lms": "moodle", "lms_id": "4242", "name": "Jane Smith", "late_flag": None,
                                 "submitted_at": "2024-03-02T09:00:00",
                                 "file": f"Jane Smith_4242_assignsubmission_file/{NB}",
                                 "roster": {"name": "Smith, Jane", "email": "j@x.org", "section": "A", "tutor": "Bo"}}
    assert noted(dest, "s002")["status"] == "invalid"  # no notebook: the note and lms.json, no time, no file
    assert lms(dest, "s002") == {"lms": "moodle", "lms_id": "4243", "name": "John Doe", "late_flag": None,
                                 "submitted_at": None, "file": None,
                                 "roster": {"name": "", "email": "", "section": "", "tutor": ""}}
    assert noted(dest, "s003")["status"] == "missing"  # nothing in the archive: the roster's name
    assert lms(dest, "s003")["name"] == "Ann Lee" and lms(dest, "s003")["lms_id"] == "4244"
    assert [s.status_hint for s in find_submissions(load_assignment(A), dest)] == ["", "invalid", "missing"]


def test_collecting_the_same_notebook_again_is_unchanged_whatever_lms_json_says(tmp_path, dest):
    collect(A, archive(tmp_path, [(f"smithjane_1_1_{NB}", notebook("first"), DAY1)], "one.zip"), dest)
    before = lms(dest, "1")
    report = collect(A, archive(tmp_path, [(f"smithjane_LATE_1_2_{NB}", notebook("first"), DAY2)], "two.zip"), dest)
    assert report.unchanged == ["1"] and not report.skipped and lms(dest, "1") == before


# ------------------------------------------------------------------ collecting again


def test_a_folder_collected_before_is_kept_unless_forced(tmp_path, dest):
    collect(A, archive(tmp_path, [(f"smithjane_1_1_{NB}", notebook("first"))], "one.zip"), dest)
    again = archive(tmp_path, [(f"smithjane_1_1_{NB}", notebook("first")), (f"doejohn_2_2_{NB}", notebook())],
                    "two.zip")
    report = collect(A, again, dest)
    assert report.unchanged == ["1"] and report.collected == [("2", "")] and report.exit_status == 0

    changed = archive(tmp_path, [(f"smithjane_1_5_{NB}", notebook("second"))], "three.zip")
    report = collect(A, changed, dest)
    assert "collected before and differs: kept (--force replaces it)" in report.skipped[0][1]
    assert collected(dest, "1") == notebook("first")

    report = collect(A, changed, dest, force=True)
    assert report.collected == [("1", "")] and collected(dest, "1") == notebook("second")
    assert sorted(p.name for p in dest.parent.iterdir()) == ["submitted"]  # no temporary folder left


def test_several_assignments_share_the_student_folders(tmp_path, dest):
    """nbgrader's layout: collecting another assignment later does not touch this one (nor need --force)."""
    (dest / "1" / "backprop").mkdir(parents=True)
    (dest / "1" / "backprop" / "backprop.ipynb").write_bytes(notebook("backprop"))
    report = collect(A, archive(tmp_path, [(f"smithjane_1_1_{NB}", notebook())]), dest)
    assert report.collected == [("1", "")]
    assert (dest / "1" / "backprop" / "backprop.ipynb").read_bytes() == notebook("backprop")


def test_a_failed_move_puts_everything_back(tmp_path, dest, monkeypatch):
    collect(A, archive(tmp_path, [(f"smithjane_1_1_{NB}", notebook("first"))], "one.zip"), dest)
    before = sorted(str(p.relative_to(dest)) for p in dest.rglob("*"))
    import grader.collect as module

    real_rename, calls = module.os.rename, []

    def failing_rename(src, dst):
        calls.append(dst)
        if len(calls) == 3:  # student 1 moved aside and replaced; student 2's move fails
            raise OSError(28, "No space left on device")
        real_rename(src, dst)

    monkeypatch.setattr(module.os, "rename", failing_rename)
    two = archive(tmp_path, [(f"smithjane_1_2_{NB}", notebook("second")), (f"doejohn_2_3_{NB}", notebook())],
                  "two.zip")
    with pytest.raises(CollectError, match="No space left on device.*left as it was"):
        collect(A, two, dest, force=True)
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*")) == before
    assert collected(dest, "1") == notebook("first")
    assert not list(dest.parent.glob(".collect-*"))


# ------------------------------------------------------------------ through the command line


def test_the_command_line_collects_into_the_course_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", os.environ["PATH"])  # main() puts this Python's bin/ first; put it back after
    course = tmp_path / "course"
    zf = archive(tmp_path, [(f"smithjane_12345_67890_{NB}", notebook()), ("doejohn_23456_1_a.ipynb", notebook()),
                            ("doejohn_23456_2_b.ipynb", notebook())])
    ids = roster(tmp_path, "lms_id,student_id\n12345,s001\n23456,s002\n")
    status = main(["--course-dir", str(course), "collect", A, "--zip", str(zf), "--roster", str(ids)])
    out = capsys.readouterr().out
    assert status == 1  # a student was skipped
    assert collected(course / "submitted", "s001") == notebook()
    assert f"collected 1 student for {A} into {course / 'submitted'}/<student>/{A}/" in out
    assert "s002 (LMS id 23456), doejohn: 2 notebooks and none named" in out

    status = main(["collect", A, "--zip", str(zf), "--submissions", str(tmp_path / "elsewhere"),
                   "--course-dir", str(course), "--max-file-mib", "0"])
    assert status == 2 and "grader: --max-file-mib must be positive" in capsys.readouterr().err
    assert not (tmp_path / "elsewhere").exists()


def test_the_command_line_reports_a_bad_archive(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", os.environ["PATH"])
    bad = _raw(tmp_path, b"not a zip")
    status = main(["collect", A, "--zip", str(bad), "--submissions", str(tmp_path / "out")])
    assert status == 2
    assert f"grader: {bad} is not a zip archive" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
