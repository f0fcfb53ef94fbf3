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

A bug whose cells (``loses``, ``may_lose``) leave out the trained part's is graded by a second run,
``grader autograde --parts`` naming every other part: its trainer does not run, and its trained cell is
recorded as not graded. The solution, the blank and every bug that names the trained cell get the full run.

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

from grader.course import SOLUTIONS, load_assignment, load_bugs, load_reference
from grader.notebook import nbgrader_meta, skip_reason
from grader.submissions import OWN_OUTPUT, standard_submissions, with_own_cells, write
from grader.trial import trained_part

TRAIN_CELL = "train-test"  # the trained part's cell (grader.trial.trained_part)

pytestmark = pytest.mark.grading

if not SOLUTIONS.is_dir():  # the public copy (`grader publish`) has no solutions/
    pytest.skip("needs solutions/ (private, not in the public copy)", allow_module_level=True)

GRADE_OPTIONS = ["--workers", "2", "--cell-timeout", "60", "--notebook-timeout", "900", "--memory-gib", "3"]
GRADING_TIMEOUT = 3600  # seconds for the whole queue: far more than it takes, so that a hang fails, not CI
BUG_IDS = [(a, i) for a in ASSIGNMENTS for i in range(len(load_bugs(load_assignment(a))))]


def by_part(name: str, index: int) -> bool:
    """Whether planted bug ``index`` is graded without the trained part: its cells do not include it."""
    bug = load_bugs(load_assignment(name))[index]
    return TRAIN_CELL not in bug.loses | bug.may_lose


def untrained_parts(name: str) -> list[str]:
    """``name:part`` for every part of ``name`` but those of the trained cell, for ``--parts``."""
    parts = load_reference(load_assignment(name)).PARTS
    return [f"{name}:{p}" for p, part in parts.items() if part.test_cell != TRAIN_CELL]
HIDDEN_LINES, SOLUTION_LINES = secret_lines()


@pytest.fixture(scope="module")
def batches(request, tmp_path_factory):
    """``batches(name)``: where the standard submissions of ``name`` were graded, with the feedback and the
    exported grades. Every assignment's submissions are graded on first use, by one ``grader autograde``
    of all the assignments at once: one queue on two workers, busy to the last submission. All of them in a
    run of the suite; those of the tests selected only (``-k backprop``: backprop's), when some are left out."""
    done: dict[str, dict | BaseException] = {}
    selected = {item.callspec.params["name"] for item in request.session.items
                if item.module is request.module and "name" in getattr(getattr(item, "callspec", None), "params", {})}

    def get(name: str) -> dict:
        if not done:
            names = [a for a in ASSIGNMENTS if a in selected or a == name]
            try:
                done.update(_grade(names, tmp_path_factory.mktemp("grading")))
            except (AssertionError, subprocess.TimeoutExpired) as exc:
                done.update(dict.fromkeys(names, exc))  # the next tests fail at once, not after another run
                raise
        if name not in done:
            pytest.fail(f"{name} was not among the assignments graded for the tests selected")
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
        notebooks["solution"] = with_own_cells(name, notebooks["solution"])  # which must cost nothing
        for student, nb in notebooks.items():
            short = student.startswith("bug-") and by_part(name, int(student[4:]))
            write(nb, subs / ("by-part" if short else "full") / student, name, a.notebook)
        students[name] = sorted(notebooks)
    start = time.monotonic()
    proc = grader_cli("autograde", *names, "--submissions", str(subs / "full"), *GRADE_OPTIONS, course_dir=course,
                      timeout=GRADING_TIMEOUT)
    if (subs / "by-part").is_dir():
        parts = ",".join(p for name in names for p in untrained_parts(name))
        proc2 = grader_cli("autograde", *names, "--submissions", str(subs / "by-part"), "--parts", parts,
                           *GRADE_OPTIONS, course_dir=course, timeout=GRADING_TIMEOUT)
        proc.stdout += proc2.stdout
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
    """The solution, with cells of the student's own that use every forbidden name of the assignment (one in
    a function no graded code calls, one after the last graded cell that would also loop past the cell timeout,
    which the grader does not run: its outputs are those handed in), gets full marks, graded."""
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
    last = executed(course, name, "solution").cells[-1]
    assert "while True" in last.source and last.get("execution_count") is None
    assert [o.get("text") for o in last.outputs] == [OWN_OUTPUT + "\n"]


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
            not_graded = set(result(batch["course"], name, student).get("not_graded") or [])
            # a cell not graded (a run of the other parts) has no score there and waits for one, never 0 in silence
            assert {g.name for g in nb.grades if g.name in pts.auto and g.needs_manual_grade} == not_graded, student
            assert {c for c, v in auto.items() if v is None} == not_graded, student
            scores = cell_scores(batch["course"], name, student)
            assert {c: v for c, v in auto.items() if c not in not_graded} == \
                pytest.approx({c: v for c, v in scores.items() if c not in not_graded}), student
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
    not_graded = set(r.get("not_graded") or [])
    assert not_graded == ({TRAIN_CELL} if by_part(name, index) else set()), r["message"]
    assert not_graded.isdisjoint(bug.loses | bug.may_lose)
    lost = {cell for cell, s in cell_scores(course, name, f"bug-{index:02d}").items()
            if s < pts.auto[cell] and cell not in not_graded}
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


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_report_puts_each_bugs_parts_at_the_top(batches, name, tmp_path):
    """``grader report`` (grader/report.py) on the batch graded above, grading nothing itself. Every part fails
    for the blank and for some bug (test_every_part_is_caught_by_a_planted_bug): class-wide, every part has
    failures and none is left that no bug hits, so the top is each bug's own. In the view of one bug's student,
    the parts above the first that passes are exactly the parts the bug makes fail, each with the bug's own
    first failure, all in the cells it declares (``loses``, ``may_lose``) and at least one in each cell of
    ``loses``. Class-wide, each part's pass rate counts the students whose cell message says it failed, the
    worst first; no time-out, no crash; every submission but the blank waits for its written answers; the page
    shows no solution line. The parts ``result.json`` stores read the same from its cells' messages (the older
    format)."""
    from grader.report import clean_message, load, part_outcomes, report, summarize

    batch, a = batches(name), load_assignment(name)
    course, students, parts = batch["course"], batch["students"], load_reference(a).PARTS
    page, table, summary = report(name, course, tmp_path)
    results = load(name, course)
    failing = {student: part_failures(result(course, name, student)) & set(parts) for student in students}
    stored = {s.student: s.parts for s in results.submissions}
    for student in students:
        r = result(course, name, student)
        older = {**r, "cells": {c: {k: v for k, v in s.items() if k != "parts"} for c, s in r["cells"].items()}}
        read = part_outcomes(older, {p: parts[p].test_cell for p in parts})
        assert {p: (round(o.fraction, 4), o.failure) for p, o in read.items()} == \
            {p: (o.fraction, o.failure) for p, o in stored[student].items()}, student
        assert {p for p, o in stored[student].items() if not o.passed} == failing[student], student

    assert summary.students == summary.statuses["graded"] == len(students)
    assert not summary.timeouts and not summary.crashes and not summary.not_run
    assert [r.pass_rate for r in summary.parts] == sorted(r.pass_rate for r in summary.parts)
    unjudged = {s for s in students if s.startswith("bug-") and by_part(name, int(s[4:]))}  # the trained part's
    assert summary.not_graded == ({TRAIN_CELL: len(unjudged)} if unjudged else {})
    for row in summary.parts:
        judged = [s for s in students if row.cell != TRAIN_CELL or s not in unjudged]
        assert row.judged == len(judged) and row.passed == sum(row.part not in failing[s] for s in judged)
        assert row.passed < row.judged, f"{row.part}: no submission fails it"
        assert sum(f.students for f in row.failures) + row.other_failures == row.judged - row.passed
    # nbgrader scores an answer left as released 0 by itself: all but the blank wait for their written answers
    assert summary.waiting == dict.fromkeys(sorted(points(name).manual), len(students) - 1)
    assert not next(s for s in results.submissions if s.student == "blank").waiting
    assert len(table.read_text().splitlines()) == 1 + len(parts)
    assert not leaks(page, SOLUTION_LINES | HIDDEN_LINES)

    assert all(r.pass_rate == 1 for r in summarize(results.only(["solution"])).parts)
    for index, bug in enumerate(load_bugs(a)):
        student = f"bug-{index:02d}"
        view = summarize(results.only([student])).parts
        top = [r for r in view if r.judged and r.pass_rate < 1]
        assert view[:len(top)] == top and {r.part for r in top} == failing[student], bug.name
        cells = {parts[r.part].test_cell for r in top}
        assert bug.loses <= cells <= bug.loses | bug.may_lose, f"{bug.name}: parts failing in {sorted(cells)}"
        for r in top:
            assert [(f.message, f.students) for f in r.failures] == \
                [(clean_message(stored[student][r.part].failure), 1)], (bug.name, r.part)


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


def test_a_feedback_page_reads_well_in_chromium(batches, browser):
    """One feedback page (a planted bug's, on word2vec) as the student opens it in Chromium: each graded cell
    named in the list at the top (a test cell by its parts, never "Test cell" nine times), the written answer
    said to wait for its hand grade rather than shown as 0 points, no verdict line running off the page, the
    markdown tables ruled. The page asks for nothing on the network."""
    name = "word2vec" if "word2vec" in ASSIGNMENTS else ASSIGNMENTS[0]
    batch = batches(name)
    path = feedback_files(batch["course"], name)["bug-00"]
    page = browser.new_page(viewport={"width": 1000, "height": 900})
    remote = []
    page.on("request", lambda r: remote.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
    try:
        page.goto(path.as_uri())
        page.wait_for_load_state("load")
        toc = page.locator("#toc li").all_inner_texts()
        parts = load_reference(load_assignment(name)).PARTS
        for cell in points(name).auto:
            names = [p for p, part in parts.items() if part.test_cell == cell]
            assert any(t.startswith(f"{cell}: {', '.join(names)}: ") for t in toc), (cell, toc)
        for cell in points(name).manual:
            assert any(t.startswith(cell) and "waits for hand grading" in t for t in toc), (cell, toc)
        assert not any("Test cell" in t for t in toc), toc
        overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"the page is {overflow} px wider than the window: a line runs off it"
        wraps = page.evaluate("[...document.querySelectorAll('div.output_area pre')].map(p => "
                              "getComputedStyle(p).whiteSpace)")
        assert wraps and set(wraps) == {"pre-wrap"}, set(wraps)
        ruled = page.evaluate("[...document.querySelectorAll('.rendered_html td')].map(td => "
                              "getComputedStyle(td).borderTopStyle)")
        assert ruled and set(ruled) == {"solid"}, set(ruled)
    finally:
        page.close()
    assert not remote, remote
