"""The grading suite, run on every assignment that ``grader`` finds (each ``solutions/<name>/`` with a
``reference.py``): adding an assignment adds files under ``solutions/<name>/`` and no test code.

For each assignment one ``grader autograde`` run grades, two at a time in sandboxed kernels, the
standard submissions of :func:`grader.submissions.standard_submissions`:

========================  ===================================================================
student                   must get
========================  ===================================================================
``solution``              full marks in every autograded cell, no error in any cell
``blank``                 the release as handed out: 0, and every test cell says why
``bug-NN``                the solution with ``BUGS[NN]`` of ``solutions/<name>/bugs.py``: points
                          lost in exactly the test cells the bug lists, full marks elsewhere
========================  ===================================================================

then ``grader feedback`` and ``grader export``. Without a kernel: the assignment has at least 8
planted bugs, every test cell and every part is caught by one, the parts match the notebook, the
case generators are deterministic, the reference solves its own cases, the release is up to date,
reproducible and leaks nothing, and the library holds no graded function. Hostile submissions are in
test_grading_hostile.py; checks that only make sense for one assignment live beside its reference,
in ``solutions/<name>/test_<name>_reference.py``. Run with ``pytest -m grading``.
"""
from __future__ import annotations

import csv
import importlib
import pkgutil
import subprocess
import time
from pathlib import Path

import nbformat
import pytest
import torch
from grading_support import (
    ASSIGNMENTS,
    COURSE_ID,
    ROOT,
    cell_scores,
    executed,
    feedback_files,
    grader_cli,
    grader_env,
    leaks,
    part_failures,
    points,
    result,
    secret_lines,
)

from grader.course import load_assignment, load_bugs, load_reference
from grader.notebook import forbidden_uses, nbgrader_meta
from grader.release import LEAK_MARKERS
from grader.submissions import solution_answers, standard_submissions, write

pytestmark = pytest.mark.grading

GRADE_OPTIONS = ["--workers", "2", "--cell-timeout", "60", "--notebook-timeout", "200", "--memory-gib", "3"]
MIN_BUGS = 8
BUG_IDS = [(a, i) for a in ASSIGNMENTS for i in range(len(load_bugs(load_assignment(a))))]
HIDDEN_LINES, SOLUTION_LINES = secret_lines()


@pytest.fixture(scope="module")
def batches(tmp_path_factory):
    """``batches(name)``: the course folder where the standard submissions of ``name`` were graded
    (once per assignment, on first use), with the feedback and the exported grades."""
    done: dict[str, dict | BaseException] = {}

    def get(name: str) -> dict:
        if name not in done:
            try:
                done[name] = _grade(name, tmp_path_factory.mktemp(f"grading-{name}"))
            except (AssertionError, subprocess.TimeoutExpired) as exc:
                done[name] = exc  # the next test of this assignment fails at once, not after another batch
                raise
        if isinstance(done[name], BaseException):
            pytest.fail(f"grading the {name} batch failed in an earlier test: {done[name]}")
        return done[name]
    return get


def _grade(name: str, tmp: Path) -> dict:
    a = load_assignment(name)
    subs, course = tmp / "submissions", tmp / "course"
    notebooks = standard_submissions(name)
    for student, nb in notebooks.items():
        write(nb, subs, student, a.notebook)
    start = time.monotonic()
    proc = grader_cli("autograde", name, "--submissions", str(subs), *GRADE_OPTIONS, course_dir=course)
    print(f"graded {len(notebooks)} {name} submissions in {time.monotonic() - start:.0f} s")
    fb = grader_cli("feedback", name, course_dir=course)
    grader_cli("export", name, "--csv", str(tmp / "grades.csv"), course_dir=course)
    with open(tmp / "grades.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {"course": course, "students": sorted(notebooks), "stdout": proc.stdout, "feedback": fb, "rows": rows}


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


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_enough_bugs_and_every_test_cell_catches_one(name):
    bugs, pts = load_bugs(load_assignment(name)), points(name)
    assert len(bugs) >= MIN_BUGS, f"{name} has {len(bugs)} planted bugs; at least {MIN_BUGS} are needed"
    assert len({b.name for b in bugs}) == len(bugs), "two bugs share a name"
    for bug in bugs:
        assert bug.loses and bug.loses <= set(pts.auto), bug.name
        assert bug.may_lose <= set(pts.auto) - bug.loses, bug.name
    uncaught = set(pts.auto) - {cell for bug in bugs for cell in bug.loses}
    assert not uncaught, f"no planted bug loses points in {sorted(uncaught)}"


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


# ------------------------------------------------------------------ the reference, without a kernel


def _same(x, y) -> bool:
    if isinstance(x, torch.Tensor):
        return isinstance(y, torch.Tensor) and x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y)
    if isinstance(x, (list, tuple)):
        return isinstance(y, (list, tuple)) and len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    if isinstance(x, dict):
        return isinstance(y, dict) and x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    return type(x) is type(y) and x == y


def _tensors(obj) -> list[torch.Tensor]:
    if isinstance(obj, torch.Tensor):
        return [obj]
    items = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else []
    return [t for item in items for t in _tensors(item)]


def _cases(name: str, seed: int) -> dict:
    parts = load_reference(load_assignment(name)).PARTS
    return {part: spec.cases(torch.Generator().manual_seed(seed), "cpu") for part, spec in parts.items()}


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_parts_match_the_notebook(name):
    """Every part's test cell and answer cells exist and the test cell records it; every autograded
    test cell has a part (a cell without one would score 0 for everybody)."""
    a = load_assignment(name)
    nb = nbformat.read(str(a.source), as_version=4)
    ids = {nbgrader_meta(c).get("grade_id") for c in nb.cells}
    parts = load_reference(a).PARTS
    for part, spec in parts.items():
        assert spec.test_cell in points(name).auto, part
        assert spec.solution_cells and set(spec.solution_cells) <= ids, part
        test_cell = next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == spec.test_cell)
        assert f'record("{part}"' in test_cell.source, part
    assert {p.test_cell for p in parts.values()} == set(points(name).auto)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_case_generators_are_deterministic_and_draw_on_the_cpu(name):
    first, again, other = _cases(name, 1234), _cases(name, 1234), _cases(name, 4321)
    for part in first:
        assert len(first[part]) >= 3, f"{part}: hidden tests need several cases"
        for a, b in zip(first[part], again[part], strict=True):
            assert a.name == b.name and _same(a.args, b.args), (part, a.name)
        for case in first[part]:
            assert all(t.device.type == "cpu" for t in _tensors(case.args)), (part, case.name)
    assert any(not _same([c.args for c in first[p]], [c.args for c in other[p]]) for p in first)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_reference_solves_its_own_cases_and_uses_no_forbidden_name(name):
    parts = load_reference(load_assignment(name)).PARTS
    for part, cases in _cases(name, 7).items():
        for case in cases:
            parts[part].reference(*case.args)
    answers = solution_answers(name)
    for part, spec in parts.items():
        code = "\n".join(answers[cell] for cell in spec.solution_cells)
        assert not forbidden_uses(code, tuple(spec.forbidden)), part


def test_library_holds_no_function_named_like_a_graded_part():
    """nlpcourse never contains the answer to a graded exercise: no public name of the library is the
    name of a part that an assignment grades."""
    import nlpcourse

    graded = {part for a in ASSIGNMENTS for part in load_reference(load_assignment(a)).PARTS}
    assert graded
    public = set()
    for mod in pkgutil.walk_packages(nlpcourse.__path__, "nlpcourse."):
        module = importlib.import_module(mod.name)
        public |= {n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))}
    assert not graded & public, sorted(graded & public)


# ------------------------------------------------------------------ release, feedback: no leak


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_release_is_up_to_date(tmp_path, name):
    """``notebooks/<name>`` is what ``grader release`` makes of ``solutions/<name>`` today."""
    proc = grader_cli("release", name, "--check", course_dir=tmp_path / "course", check=False)
    assert proc.returncode == 0, f"notebooks/{name} is stale: {proc.stdout}{proc.stderr}"
    assert "up to date" in proc.stdout


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_release_is_reproducible(tmp_path, monkeypatch, name):
    from grader.release import generate

    monkeypatch.setenv("PATH", grader_env()["PATH"])
    outs = [generate(name, tmp_path / f"release{i}", tmp_path / f"course{i}") for i in (1, 2)]
    files = [{p.relative_to(o): p.read_bytes() for p in o.rglob("*") if p.is_file()} for o in outs]
    assert files[0] and files[0] == files[1]
    a = load_assignment(name)
    assert files[0][Path(a.notebook)] == a.release.read_bytes()


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_release_has_no_solution_no_hidden_test_no_private_file(name):
    a = load_assignment(name)
    files = [p for p in a.release.parent.rglob("*") if p.is_file()]
    assert files
    bad = {str(p): leaks(p, SOLUTION_LINES | HIDDEN_LINES) for p in files}
    assert not {p: v for p, v in bad.items() if v}
    text = a.release.read_text()
    assert not [m for m in LEAK_MARKERS if m in text]
    assert not [p for p in files if p.suffix == ".py"], "a private module was released"
    nb = nbformat.read(str(a.release), as_version=4)
    for cell in nb.cells:
        if nbgrader_meta(cell).get("solution") and cell.cell_type == "code":
            assert "raise NotImplementedError()" in cell.source, nbgrader_meta(cell)["grade_id"]


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_feedback_for_every_student_leaks_nothing(batches, name):
    batch = batches(name)
    files = feedback_files(batch["course"], name)
    assert sorted(files) == batch["students"]
    for student, path in files.items():
        assert not leaks(path, HIDDEN_LINES), student
        assert "cases passed" in path.read_text() or "NotImplementedError" in path.read_text(), student
    assert not leaks(files["blank"], SOLUTION_LINES | HIDDEN_LINES)


def test_site_shows_no_solution_nor_hidden_test():
    import os

    site = ROOT / "_build" / "html"
    if not site.is_dir():
        if os.environ.get("NLPCOURSE_REQUIRE_SITE") == "1":
            pytest.fail(f"{site} does not exist (NLPCOURSE_REQUIRE_SITE=1): build the book first")
        pytest.skip(f"{site} not built")
    files = [p for p in site.rglob("*") if p.is_file()]
    bad = {str(p.relative_to(site)): leaks(p, SOLUTION_LINES | HIDDEN_LINES) for p in files}
    assert not {p: v for p, v in bad.items() if v}
    assert not [p for p in files if p.name in ("reference.py", "bugs.py")]
