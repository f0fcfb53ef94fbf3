"""Regrading by part (``grader autograde A --parts P[,P...]``), end to end through the command line on backprop, the
quickest assignment: only the named parts' test cells run (their visible and hidden tests; the others' are not run
and their cases not drawn), every other cell keeps the score of the grading in force, and where there is none
(a first grading, or a notebook handed in again since) the cell is recorded as not graded: no score in the
gradebook, flagged as needing one, named in the export and the report, and graded by the next plain run. A part
named that is no part is a clear error. The grading suite (test_grading_assignments.py) grades most planted bugs
this way, without their trained part."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import nbformat
import pytest
from grading_support import grader_cli, points, result
from nbgrader.api import Gradebook

from grader.autograde import resolve_parts
from grader.course import COURSE_ID, SOLUTIONS, GraderError, load_assignment, load_reference
from grader.submissions import standard_submissions, write

pytestmark = pytest.mark.grading

if not SOLUTIONS.is_dir():  # the public copy (`grader publish`) has no solutions/
    pytest.skip("needs solutions/ (private, not in the public copy)", allow_module_level=True)

A = "backprop"
OPTIONS = ["--workers", "2", "--cell-timeout", "60", "--notebook-timeout", "200", "--memory-gib", "3"]
TRAIN = "train-test"


def _parts_of(cell: str) -> list[str]:
    return [n for n, part in load_reference(load_assignment(A)).PARTS.items() if part.test_cell == cell]


def _autograde(course: Path, subs: Path, *more: str):
    return grader_cli("autograde", A, "--submissions", str(subs), *OPTIONS, *more, course_dir=course)


def _grades(course: Path, student: str) -> dict[str, tuple[float | None, bool]]:
    """test cell -> (its automatic score in the gradebook, whether it needs a grade)."""
    a = load_assignment(A)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID) as gb:
        nb = gb.find_submission_notebook(a.notebook_id, A, student)
        return {g.name: (g.auto_score, bool(g.needs_manual_grade)) for g in nb.grades if g.name in points(A).auto}


def _ran(course: Path, student: str) -> set[str]:
    """The test cells whose visible or hidden tests ran in the student's executed notebook."""
    nb = nbformat.read(str(course / "work" / A / student / "executed.ipynb"), as_version=4)
    out = set()
    for cell in nb.cells:
        of = cell.get("metadata", {}).get("grader", {}).get("hidden_of")
        if of and cell.get("execution_count"):
            out.add(of)
    return out


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The solution and planted bug 00 (gradient check) graded in full, once."""
    tmp = tmp_path_factory.mktemp("by-part")
    notebooks = standard_submissions(A)
    for student in ("solution", "bug-00"):
        write(notebooks[student], tmp / "subs", student, load_assignment(A).notebook)
    _autograde(tmp / "course", tmp / "subs")
    before = {s: result(tmp / "course", A, s) for s in ("solution", "bug-00")}
    return tmp, before, notebooks


def test_a_regrade_by_part_runs_those_cells_only_and_keeps_every_other_score(graded):
    tmp, before, _ = graded
    course = tmp / "course"
    proc = _autograde(course, tmp / "subs", "--parts", "linear_forward")
    assert f"{A}: grading the parts {', '.join(_parts_of('linear-test'))}" in proc.stdout  # the cell's other part
    for student, earlier in before.items():
        r = result(course, A, student)
        assert r["parts"] == _parts_of("linear-test") and not r["not_graded"]
        assert r["kept"] == [c for c in earlier["cells"] if c != "linear-test"]
        assert {c: s["score"] for c, s in r["cells"].items()} == {c: s["score"] for c, s in earlier["cells"].items()}
        assert {c: s["message"] for c, s in r["cells"].items() if c in r["kept"]} == \
            {c: s["message"] for c, s in earlier["cells"].items() if c in r["kept"]}
        assert r["score"] == earlier["score"] and "graded linear-test only" in r["message"]
        assert _ran(course, student) == {"linear-test"}, "a test cell of another part ran"
        inputs = sorted(p.stem for p in (course / "work" / A / student / "kernel" / "inputs").iterdir())
        assert inputs == sorted(_parts_of("linear-test")), "cases drawn for parts not graded"
        assert {c: g for c, (g, _) in _grades(course, student).items()} == \
            pytest.approx({c: s["score"] for c, s in earlier["cells"].items()})
        assert not any(need for _, need in _grades(course, student).values())


def test_a_notebook_handed_in_again_keeps_no_earlier_score(graded):
    """On the graded class, after the regrade above (this test changes a hand-in, so it comes last of those
    that grade): bug-00 hands in the solution instead; a run by part keeps the solution's other cells and
    none of bug-00's."""
    tmp, _, notebooks = graded
    course = tmp / "course"
    write(notebooks["solution"], tmp / "subs", "bug-00", load_assignment(A).notebook)  # handed in again, changed
    _autograde(course, tmp / "subs", "--parts", "mlp_logits")
    mine, changed = result(course, A, "solution"), result(course, A, "bug-00")
    assert mine["kept"] == [c for c in mine["cells"] if c != "mlp-test"] and not mine["not_graded"]
    assert not changed["kept"] and changed["not_graded"] == [c for c in changed["cells"] if c != "mlp-test"]
    assert "the notebook differs from the one graded before" in changed["message"]
    assert changed["cells"]["mlp-test"]["score"] == points(A).auto["mlp-test"]
    assert _grades(course, "bug-00")["gradcheck-test"] == (None, True)


def test_without_an_earlier_grading_the_other_cells_are_not_graded_then_the_next_run_grades_them(graded, tmp_path):
    _, _, notebooks = graded
    course, subs = tmp_path / "course", tmp_path / "subs"
    write(notebooks["solution"], subs, "solution", load_assignment(A).notebook)
    others = [n for n, part in load_reference(load_assignment(A)).PARTS.items() if part.test_cell != TRAIN]
    _autograde(course, subs, "--parts", ",".join(others))
    r, pts = result(course, A, "solution"), points(A)
    assert r["not_graded"] == [TRAIN] and r["status"] == "graded" and TRAIN not in _ran(course, "solution")
    assert r["cells"][TRAIN]["score"] == 0 and r["cells"][TRAIN]["message"].startswith("not graded")
    assert f"not graded: {TRAIN} (no earlier grading" in r["message"]
    assert r["score"] == pytest.approx(pts.max_auto - pts.auto[TRAIN])
    assert _grades(course, "solution")[TRAIN] == (None, True)  # no score, flagged: never 0 points in silence
    grader_cli("export", A, "--csv", str(tmp_path / "grades.csv"), course_dir=course)
    with open(tmp_path / "grades.csv", newline="") as fh:
        row = next(csv.DictReader(fh))
    assert row["needs_manual_grade"] == "True" and f"not graded: {TRAIN}" in row["message"]
    grader_cli("report", A, "--out", str(tmp_path / "report"), course_dir=course)
    page = (tmp_path / "report" / "report.html").read_text()
    assert 'id="not-graded"' in page and f"<code>{TRAIN}</code>: 1 students" in page

    _autograde(course, subs)  # a plain run: the cell without a score is graded, nothing else runs again
    r = result(course, A, "solution")
    assert r["parts"] == _parts_of(TRAIN) and not r["not_graded"] and _ran(course, "solution") == {TRAIN}
    assert r["score"] == pytest.approx(pts.max_auto)
    assert _grades(course, "solution")[TRAIN] == (pytest.approx(pts.auto[TRAIN]), False)
    _autograde(course, subs)  # and then nothing is left to grade
    assert json.loads((course / "work" / A / "solution" / "result.json").read_text()) == r


@pytest.mark.parametrize("asked, error", [
    (["no_such_part"], "--parts no_such_part: no such part (backprop: numerical_gradient, relative_error"),
    (["cnn:conv1d_unfold"], "--parts cnn:conv1d_unfold: cnn is not among the assignments graded (backprop)"),
])
def test_a_part_that_is_none_is_a_clear_error(asked, error):
    with pytest.raises(GraderError) as info:
        resolve_parts([load_assignment(A)], asked)
    assert str(info.value).startswith(error)


def test_parts_resolve_to_whole_cells_per_assignment():
    a, b = load_assignment(A), load_assignment("cnn")
    got = resolve_parts([a, b], ["relative_error", "backprop:sgd_step"])  # a name both have: both
    assert got == {A: _parts_of("gradcheck-test") + _parts_of("sgd-test"),
                   "cnn": [n for n, p in load_reference(b).PARTS.items() if p.test_cell == "gradcheck-test"]}
    with pytest.raises(GraderError, match="--parts names no part of cnn"):
        resolve_parts([a, b], ["backprop:sgd_step"])
