"""A class graded as a cluster grades it, on one machine (issue 61's "done when"): a Canvas archive of 12
students is collected, graded once on one machine, and graded again as 3 shards run as separate processes by
the block of grader/cluster/README.md marked as tested, exactly as written; ``grader merge`` puts the shards
together. Both give the same score to every student, and the Canvas and Moodle exports, with a late penalty
and one extension from the course file, are the same files. Sandboxed kernels: ``pytest -m grading``."""
from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import zipfile
from pathlib import Path

import nbformat
import pytest
from grading_support import grader_cli, grader_env, need_sandbox

from grader.course import REPO, SOLUTIONS, load_assignment
from grader.submissions import standard_submissions

pytestmark = pytest.mark.grading

if not SOLUTIONS.is_dir():  # the public copy (`grader publish`) has no solutions/
    pytest.skip("needs solutions/ (private, not in the public copy)", allow_module_level=True)

A = "backprop"
GUIDE = REPO / "grader" / "cluster" / "README.md"
TESTED = "<!-- tested: tests/test_cluster_local.py -->"
ON_TIME, TWO_DAYS_LATE = (2026, 10, 1, 20, 0, 0), (2026, 10, 3, 10, 0, 0)
COURSE_FILE = """\
timezone = "Europe/London"
[late]
per = "day"
penalty = 0.10
cap = 0.50
[assignments.backprop]
deadline = 2026-10-01T23:59:00+01:00
canvas_id = 4321
title = "Backprop"
[extensions.backprop]
s12 = 2026-10-04T23:59:00+01:00
"""


def guide_block() -> str:
    """The bash block that follows the marker in the guide: what an instructor copies."""
    text = GUIDE.read_text()
    assert TESTED in text, f"{GUIDE} lost its tested block"
    found = re.search(r"```bash\n(.*?)```", text[text.index(TESTED):], re.S)
    assert found, "no bash block after the marker"
    return found.group(1)


#: (student, what they hand in, handed in two days after the deadline): s12 has an extension past that.
CLASS = [(f"s{i:02d}", kind, late) for i, (kind, late) in enumerate(
    [("solution", False)] * 3 + [("blank", False)] * 3 + [(f"bug-{b:02d}", False) for b in range(4)]
    + [("solution", True), ("solution", True)], start=1)]


def class_of_12() -> tuple[list[tuple], str]:
    """The Canvas archive's members (``<name>_[LATE_]<user id>_<upload id>_<file>``) and the roster."""
    nbs, notebook = standard_submissions(A), load_assignment(A).notebook
    members, roster = [], ["lms_id,student_id,name,sis_user_id,sis_login_id,section,email"]
    for i, (student, kind, late) in enumerate(CLASS, start=1):
        lms_id = str(1000 + i)
        data = nbformat.writes(nbs[kind]).encode()
        members.append((f"student{i:02d}_{'LATE_' if late else ''}{lms_id}_{5000 + i}_{notebook}", data,
                        TWO_DAYS_LATE if late else ON_TIME))
        roster.append(f"{lms_id},{student},Student {i:02d},SIS{i:03d},login{i:02d},Section {1 + i % 2},"
                      f"{student}@uni.example")
    return members, "\n".join(roster) + "\n"


def canvas_zip(path: Path, members: list[tuple]) -> Path:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data, when in members:
            zf.writestr(zipfile.ZipInfo(name, date_time=when), data, compress_type=zipfile.ZIP_DEFLATED)
    path.write_bytes(buf.getvalue())
    return path


def read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The class collected into ``W/_grading``, graded on one machine into ``W/one`` and as the guide's shards
    into ``W/_grading`` (merged), each exported as Canvas and Moodle CSV."""
    need_sandbox()
    w = tmp_path_factory.mktemp("class")
    (w / ".venv").symlink_to(REPO / ".venv")
    members, roster = class_of_12()
    (w / "roster.csv").write_text(roster)
    course = w / "_grading"
    grader_cli("collect", A, "--zip", str(canvas_zip(w / "submissions.zip", members)), "--roster",
               str(w / "roster.csv"), course_dir=course)
    (course / "course.toml").write_text(COURSE_FILE)
    (course / ".grading_secret").write_text("a-class-secret")
    one = w / "one"
    grader_cli("autograde", A, "--submissions", str(course / "submitted"), "--secret", str(course / ".grading_secret"),
               "--workers", "2", course_dir=one, timeout=1800)
    guide = subprocess.run(["bash", "-euo", "pipefail", "-c", guide_block()], cwd=w, env=grader_env(),
                           capture_output=True, text=True, timeout=1800)
    assert guide.returncode == 0, f"the guide's block failed:\n{guide.stdout}\n{guide.stderr}"
    out = {"w": w, "course": course, "one": one, "guide": guide.stdout}
    for where, folder in (("one", one), ("merged", course)):
        for fmt in ("canvas", "moodle"):
            dest = w / f"{where}-{fmt}.csv"
            grader_cli("export", A, "--format", fmt, "--csv", str(dest), "--course-file", str(course / "course.toml"),
                       course_dir=folder)
            out[where, fmt] = dest
    return out


def scores(course: Path) -> dict[str, tuple[str, float, dict]]:
    found = {}
    for wd in sorted((course / "work" / A).iterdir()):
        r = json.loads((wd / "result.json").read_text())
        found[wd.name] = (r["status"], r["score"], {c: s["score"] for c, s in r["cells"].items()})
    return found


def test_three_shards_merged_give_every_student_the_one_machine_score(graded):
    one, merged = scores(graded["one"]), scores(graded["course"])
    assert sorted(one) == [f"s{i:02d}" for i in range(1, 13)] and one == merged
    claims = [json.loads((graded["course"] / "shards" / str(i) / "shard.json").read_text()) for i in range(3)]
    assert sorted(s for c in claims for s in c["students"]) == sorted(one)
    assert {len(c["students"]) for c in claims} == {4}


def test_the_exports_are_the_same_files(graded):
    for fmt in ("canvas", "moodle"):
        assert graded["one", fmt].read_text() == graded["merged", fmt].read_text(), fmt


def test_the_late_penalty_and_the_extension(graded):
    rows = {r["ID"]: r for r in read_csv(graded["merged", "canvas"])}
    column = next(c for c in next(iter(rows.values())) if c.startswith("Backprop (4321)"))
    one = scores(graded["one"])
    full = one["s01"][1]
    assert one["s11"][1] == one["s12"][1] == full > 0
    max_score = float(rows[""][column])  # the "Points Possible" row: the gradebook's, written answers included
    assert float(rows["1011"][column]) == pytest.approx(full - 0.2 * max_score)  # s11: two days late
    assert float(rows["1012"][column]) == pytest.approx(full)  # s12: late, within the extension
    assert float(rows["1001"][column]) == pytest.approx(full)
    assert len(rows) == 13  # and the "Points Possible" row


def test_the_report_over_the_merged_class_counts_the_late_and_the_time(graded):
    """``grader report`` on the merged folder: every student, one late hand-in by the policy (s11; s12's
    extension covers it), and the time per submission that sizes a cluster."""
    out = grader_cli("report", A, course_dir=graded["course"]).stdout
    assert "12 submissions" in out and "; 1 handed in late" in out, out
    assert re.search(r"grading time per submission \(\d+ timed\): mean .*95th percentile", out), out
    page = (graded["course"] / "reports" / A / "report.html").read_text()
    students = page[page.index('<table id="students">'):]
    assert students.count("<tr><td>s") == 12 and students.count("late (\u221220%)") == 1
