"""No student vanishes from the gradebook (issue 55), without a kernel: what ``grader collect`` could not
collect still gets a row (a 0-byte notebook, a renamed non-notebook, a ``.py``, a roster student without a
hand-in), and a regrade (``autograde --force``) stopped at any point leaves the results in force until new
ones replace them: ``export`` during the interruption lists every student, and the rerun writes the same CSV.
Then the hand grader's step: ``grader formgrade`` serves nbgrader's formgrader on that gradebook."""
from __future__ import annotations

import csv
import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

import grader.autograde as autograde_module
from grader.autograde import autograde
from grader.collect import collect
from grader.course import COURSE_ID, SOLUTIONS
from grader.export import PENDING, export

if not SOLUTIONS.is_dir():  # the public copy (`grader publish`) has no solutions/
    pytest.skip("needs solutions/ (private, not in the public copy)", allow_module_level=True)

A, NB = "word2vec", "word2vec.ipynb"
ROSTER = "lms_id,student_id\n11,empty\n12,pdf\n13,script\n14,absent\n"
EXPECTED = {  # student -> (status, a word of the reason)
    "empty": ("invalid", "not valid JSON"),
    "pdf": ("invalid", "not valid JSON"),
    "script": ("invalid", "no notebook in the archive (other files: word2vec.py)"),
    "absent": ("missing", "nothing handed in"),
}


class Killed(BaseException):
    """Stands for a SIGKILL at one point of the run (BaseException: nothing in the grader catches it)."""


def _canvas_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"empty_11_1_{NB}", b"")  # a 0-byte file
        zf.writestr(f"pdf_12_2_{NB}", b"%PDF-1.4 a report, renamed")  # a renamed non-notebook
        zf.writestr("script_13_3_word2vec.py", b"print('my answers')\n")  # a .py upload
    return path


def _csv(course: Path, out: Path) -> list[dict]:
    export(A, course, out)
    with open(out, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture
def graded(tmp_path, monkeypatch):
    """The class collected from a Canvas zip with a roster, then autograded and exported once."""
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])  # nbgrader's alembic
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER)
    course, subs = tmp_path / "course", tmp_path / "course" / "submitted"
    report = collect(A, _canvas_zip(tmp_path / "canvas.zip"), subs, roster)
    assert report.collected == [] and sorted(s for s, _, _ in report.noted) == sorted(EXPECTED)
    autograde(A, subs, course)
    return course, subs, _csv(course, tmp_path / "first.csv")


def test_every_roster_student_gets_a_row_with_the_status_and_why(graded):
    _, _, rows = graded
    assert sorted(r["student_id"] for r in rows) == sorted(EXPECTED)
    for row in rows:
        status, why = EXPECTED[row["student_id"]]
        assert row["status"] == status and row["message"].count(why) == 1, row  # the reason, once
        assert float(row["score"]) == 0.0 and float(row["max_score"]) > 0, row


def _renames(monkeypatch, kill_at: int) -> list[int]:
    """Make the ``kill_at``-th rename of the grader's own folders stop the run; return the count of renames."""
    calls, real = [0], os.rename

    def rename(src, dst):
        calls[0] += 1
        if calls[0] == kill_at:
            raise Killed(f"killed before rename {kill_at}: {src} -> {dst}")
        return real(src, dst)

    monkeypatch.setattr(autograde_module.os, "rename", rename)
    return calls


def test_a_regrade_killed_at_any_point_keeps_every_row_and_the_rerun_gives_the_same_csv(graded, tmp_path,
                                                                                       monkeypatch):
    course, subs, first = graded
    with monkeypatch.context() as m:
        calls = _renames(m, kill_at=0)
        autograde(A, subs, course, force=True)
        total = calls[0]
    assert total == 2 * len(EXPECTED)  # two renames a student: the old result aside, the new one in place
    for kill_at in range(1, total + 1):
        with monkeypatch.context() as m:
            _renames(m, kill_at)
            with pytest.raises(Killed):
                autograde(A, subs, course, force=True)
        assert _csv(course, tmp_path / "during.csv") == first, f"export after a kill before rename {kill_at}"
        autograde(A, subs, course)  # the rerun
        assert _csv(course, tmp_path / "again.csv") == first, f"rerun after a kill before rename {kill_at}"
        assert sorted(p.name for p in (course / "work" / A).iterdir()) == sorted(EXPECTED)


def test_a_student_the_gradebook_holds_without_a_result_is_pending(graded, tmp_path):
    """A grading stopped after nbgrader wrote the student into the gradebook, before any result was put in
    force: the row is there, ``pending``, never dropped."""
    course, _, _ = graded
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID) as gb:
        gb.add_student("late-joiner")
        gb.add_submission(A, "late-joiner")
    rows = {r["student_id"]: r for r in _csv(course, tmp_path / "out.csv")}
    assert rows["late-joiner"]["status"] == PENDING and "autograde" in rows["late-joiner"]["message"]
    assert len(rows) == len(EXPECTED) + 1


def test_the_collect_summary_names_who_gets_a_row_without_a_notebook(tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER)
    from grader.collect import summary

    report = collect(A, _canvas_zip(tmp_path / "canvas.zip"), tmp_path / "subs", roster)
    text = "\n".join(summary(report))
    assert "no notebook for 4" in text and "absent (missing)" in text and "script (invalid)" in text
    assert report.exit_status == 1
    again = collect(A, _canvas_zip(tmp_path / "canvas.zip"), tmp_path / "subs", roster)
    assert not [who for who, why in again.skipped if "collected before" in why], "the same notes are unchanged"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_formgrade_serves_the_formgrader_on_the_gradebook(graded):
    """``grader formgrade`` (grader/formgrade.py): one command, the configuration written into the course
    folder, a Jupyter server whose formgrader page answers and whose API lists the graded assignment."""
    from grader.formgrade import CONFIG_NAME, server_command, write_config

    course, _, _ = graded
    config = write_config(course)
    assert config == course / CONFIG_NAME and "c.CourseDirectory.root" in config.read_text()
    port, token = _free_port(), secrets.token_hex(8)
    server = subprocess.Popen(server_command(course, port, token=token), cwd=course, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        page = api = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and api is None:
            assert server.poll() is None, server.stderr.read()
            try:
                page = _get(f"http://127.0.0.1:{port}/formgrader?token={token}")
                api = json.loads(_get(f"http://127.0.0.1:{port}/formgrader/api/assignments?token={token}"))
            except OSError:
                time.sleep(0.5)
        assert page is not None and "formgrader" in page.lower(), page
        assert api is not None and A in {a["name"] for a in api}, api
    finally:
        server.terminate()
        server.wait(30)


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as reply:  # a server of this test, on 127.0.0.1
        return reply.read().decode()


def test_formgrade_without_a_gradebook_is_a_clear_error(tmp_path):
    from grader.course import GraderError
    from grader.formgrade import write_config

    with pytest.raises(GraderError, match="run `grader autograde` first"):
        write_config(tmp_path)
