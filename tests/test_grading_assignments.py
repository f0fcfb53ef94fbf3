"""The grading suite, run on every assignment that ``grader`` finds (each ``solutions/<name>/`` with a
``reference.py``): adding an assignment adds files under ``solutions/<name>/`` and no test code.

One ``grader autograde`` run grades the standard submissions of every assignment
(:func:`grader.submissions.standard_submissions`) as one queue, two at a time in sandboxed kernels:

========================  ===================================================================
student                   must get
========================  ===================================================================
``solution``              full marks in every autograded cell, no error in any cell; the trained
                          part run once, on the grader's seed (the notebook's own run skipped)
``blank``                 the release as handed out: 0, and every test cell says why
``bug-NN``                the solution with ``BUGS[NN]`` of ``solutions/<name>/bugs.py``: points
                          lost in exactly the test cells the bug lists (and perhaps in its
                          ``may_lose`` cells), full marks elsewhere
========================  ===================================================================

then ``grader feedback`` and ``grader export`` of each. Every part is caught by a bug, and the feedback leaks
nothing. The checks that need no kernel (bugs, parts, case generators, the reference, the release, the site)
are in test_assignment_sources.py, hostile submissions in test_grading_hostile.py, and checks that only make
sense for one assignment beside its reference, in ``solutions/<name>/test_<name>_reference.py``. Run with
``pytest -m grading``.
"""
from __future__ import annotations

import csv
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from grading_support import (
    ASSIGNMENTS,
    COURSE_ID,
    cell_scores,
    executed,
    feedback_files,
    grader_cli,
    leaks,
    part_cases,
    part_failures,
    points,
    result,
    secret_lines,
)

from grader.course import load_assignment, load_bugs, load_reference
from grader.notebook import nbgrader_meta, skip_reason
from grader.submissions import standard_submissions, write
from grader.trial import trained_part

pytestmark = pytest.mark.grading

GRADE_OPTIONS = ["--workers", "2", "--cell-timeout", "60", "--notebook-timeout", "200", "--memory-gib", "3"]
GRADING_TIMEOUT = 3600  # seconds for the whole queue: far more than it takes, so that a hang fails, not CI
BUG_IDS = [(a, i) for a in ASSIGNMENTS for i in range(len(load_bugs(load_assignment(a))))]
HIDDEN_LINES, SOLUTION_LINES = secret_lines()


@pytest.fixture(scope="module")
def batches(tmp_path_factory):
    """``batches(name)``: where the standard submissions of ``name`` were graded, with the feedback and the
    exported grades. Every assignment's submissions are graded on first use, by one ``grader autograde``
    of all the assignments at once: one queue on two workers, busy to the last submission."""
    done: dict[str, dict | BaseException] = {}

    def get(name: str) -> dict:
        if not done:
            try:
                done.update(_grade(ASSIGNMENTS, tmp_path_factory.mktemp("grading")))
            except (AssertionError, subprocess.TimeoutExpired) as exc:
                done.update(dict.fromkeys(ASSIGNMENTS, exc))  # the next tests fail at once, not after another run
                raise
        if isinstance(done[name], BaseException):
            pytest.fail(f"grading the batches failed in an earlier test: {done[name]}")
        return done[name]
    return get


def _grade(names: list[str], tmp: Path) -> dict[str, dict]:
    """Grade the standard submissions of every assignment of ``names`` in one run (nbgrader's layout,
    ``submissions/<student>/<assignment>/<notebook>``, one course folder), then write each assignment's
    feedback and grades, two assignments at a time."""
    subs, course = tmp / "submissions", tmp / "course"
    students = {}
    for name in names:
        a = load_assignment(name)
        notebooks = standard_submissions(name)
        for student, nb in notebooks.items():
            write(nb, subs / student, name, a.notebook)
        students[name] = sorted(notebooks)
    start = time.monotonic()
    proc = grader_cli("autograde", *names, "--submissions", str(subs), *GRADE_OPTIONS, course_dir=course,
                      timeout=GRADING_TIMEOUT)
    print(f"graded {sum(map(len, students.values()))} submissions of {len(names)} assignments in "
          f"{time.monotonic() - start:.0f} s")

    def hand_back(name: str) -> dict:
        fb = grader_cli("feedback", name, course_dir=course)
        grader_cli("export", name, "--csv", str(tmp / f"{name}.csv"), course_dir=course)
        with open(tmp / f"{name}.csv", newline="") as fh:
            rows = list(csv.DictReader(fh))
        return {"course": course, "students": students[name], "stdout": proc.stdout, "feedback": fb, "rows": rows}

    with ThreadPoolExecutor(max_workers=2) as pool:
        return dict(zip(names, pool.map(hand_back, names)))


# ------------------------------------------------------------------ solution and blank


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_solution_gets_full_marks_and_runs_without_error(batches, name):
    course, pts = batches(name)["course"], points(name)
    r = result(course, name, "solution")
    assert r["status"] == "graded", r["message"]
    assert cell_scores(course, name, "solution") == pts.auto
    assert r["score"] == r["max_score"] == pts.max_auto > 0
    for cell, s in r["cells"].items():
        assert "cases passed" in s["message"] and "failure" not in s["message"], (cell, s["message"])
    for cell in executed(course, name, "solution").cells:
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, (nbgrader_meta(cell).get("grade_id"), errors)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_a_submission_trains_once_on_the_graders_seed(batches, name):
    """The notebook's own run of its trained part (seed 0, which a student could tune for) is not run by the
    grader, and its output says so; the hidden test trains once, on a seed drawn from the student's (where
    the part also checks the recipe, ``RECIPE_SETTINGS``, a run of a few steps beside it)."""
    cells = executed(batches(name)["course"], name, "solution").cells
    skipped = [c for c in cells if skip_reason(c)]
    assert "train-run" in [nbgrader_meta(c).get("grade_id") for c in skipped], "the own run is not marked grader.skip"
    for cell in skipped:
        assert cell.get("execution_count") is None, cell.source[:80]
        assert [o.get("text", "") for o in cell.outputs] == [f"Not run by the grader: {skip_reason(cell)}\n"]
    recipe = getattr(load_reference(load_assignment(name)), "RECIPE_SETTINGS", None)
    assert len([c for c in part_cases(name, 1)[trained_part(name)] if tuple(c.args[1:]) != recipe]) == 1


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_blank_release_gets_zero_and_says_why(batches, name):
    course = batches(name)["course"]
    r = result(course, name, "blank")
    assert r["status"] == "graded", r["message"]
    assert r["score"] == 0 and set(cell_scores(course, name, "blank").values()) == {0.0}
    for cell, s in r["cells"].items():
        assert "NotImplementedError" in s["message"], (cell, s["message"])


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_gradebook_holds_every_score_and_waits_for_the_written_answers(batches, name):
    from nbgrader.api import Gradebook

    batch, pts, a = batches(name), points(name), load_assignment(name)
    with Gradebook(f"sqlite:///{batch['course'] / 'gradebook.db'}", COURSE_ID) as gb:
        assert gb.find_assignment(name).max_score == pytest.approx(pts.max_auto + sum(pts.manual.values()))
        for student in batch["students"]:
            nb = gb.find_submission_notebook(a.notebook_id, name, student)
            auto = {g.name: g.auto_score for g in nb.grades if g.name in pts.auto}
            assert auto == pytest.approx(cell_scores(batch["course"], name, student)), student
        good = gb.find_submission(name, "solution")
        assert good.code_score == pytest.approx(pts.max_auto)
        assert good.needs_manual_grade is bool(pts.manual)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_export_has_a_row_per_student(batches, name):
    batch, pts = batches(name), points(name)
    rows = {r["student_id"]: r for r in batch["rows"]}
    assert sorted(rows) == batch["students"]
    for student, row in rows.items():
        assert row["status"] == "graded", row
        assert float(row["score"]) == pytest.approx(result(batch["course"], name, student)["score"])
        assert float(row["max_score"]) == pytest.approx(pts.max_auto + sum(pts.manual.values()))


# ------------------------------------------------------------------ planted bugs


@pytest.mark.parametrize("name, index", BUG_IDS, ids=[f"{a}-{i:02d}" for a, i in BUG_IDS])
def test_bug_loses_points_exactly_where_expected(batches, name, index):
    bug = load_bugs(load_assignment(name))[index]
    course, pts = batches(name)["course"], points(name)
    r = result(course, name, f"bug-{index:02d}")
    assert r["status"] == "graded", r["message"]
    lost = {cell for cell, s in cell_scores(course, name, f"bug-{index:02d}").items() if s < pts.auto[cell]}
    expected = f"expected {sorted(bug.loses)}" + (f", and perhaps {sorted(bug.may_lose)}" if bug.may_lose else "")
    assert bug.loses <= lost <= bug.loses | bug.may_lose, f"{bug.name}: lost points in {sorted(lost)}, {expected}"
    for cell in bug.loses:
        assert "first failure" in r["cells"][cell]["message"], r["cells"][cell]["message"]
    for cell, s in r["cells"].items():
        assert "does not allow" not in s["message"], f"{cell}: {s['message']}"


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_every_part_is_caught_by_a_planted_bug(batches, name):
    """Each recorded part fails a case under at least one planted bug: none is graded by nothing."""
    course = batches(name)["course"]
    parts = set(load_reference(load_assignment(name)).PARTS)
    caught = set()
    for student in batches(name)["students"]:
        if student.startswith("bug-"):
            caught |= part_failures(result(course, name, student))
    assert parts <= caught, f"no planted bug makes these parts fail: {sorted(parts - caught)}"
    assert not part_failures(result(course, name, "solution"))


# ------------------------------------------------------------------ release, feedback: no leak


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_feedback_for_every_student_leaks_nothing(batches, name):
    batch = batches(name)
    files = feedback_files(batch["course"], name)
    assert sorted(files) == batch["students"]
    for student, path in files.items():
        assert not leaks(path, HIDDEN_LINES), student
        assert "cases passed" in path.read_text() or "NotImplementedError" in path.read_text(), student
    assert not leaks(files["blank"], SOLUTION_LINES | HIDDEN_LINES)
