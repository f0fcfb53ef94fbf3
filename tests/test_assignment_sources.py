"""Every assignment's sources, checked without a kernel (the grading of submissions is in
test_grading_assignments.py): enough planted bugs, every test cell caught by one; the parts match the
notebook; the case generators are deterministic and draw on the CPU; the reference solves its own cases and
uses no forbidden name; the library holds no graded function; the release is current, reproducible and leaks
nothing, and so does the built site. A module of its own so that the test runs spread these checks beside
the long grading queue. Run with ``pytest -m grading``.
"""
from __future__ import annotations

import importlib
import pkgutil

import nbformat
import pytest
import torch
from grading_support import (
    ASSIGNMENTS,
    ROOT,
    grader_cli,
    grader_env,
    leaks,
    part_cases,
    points,
    secret_lines,
)

from grader.course import SOLUTIONS, load_assignment, load_bugs, load_reference
from grader.notebook import forbidden_uses, nbgrader_meta
from grader.release import LEAK_MARKERS
from grader.submissions import solution_answers
from grader.trial import trained_part

pytestmark = pytest.mark.grading

if not SOLUTIONS.is_dir():  # the public copy (`grader publish`) has no solutions/
    pytest.skip("needs solutions/ (private, not in the public copy)", allow_module_level=True)

MIN_BUGS = 8
HIDDEN_LINES, SOLUTION_LINES = secret_lines()


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



# ------------------------------------------------------------------ the reference


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
    first, again, other = part_cases(name, 1234), part_cases(name, 1234), part_cases(name, 4321)
    for part in first:  # a trained part is one run, judged by its outcome: training is what costs
        assert len(first[part]) >= (1 if part == trained_part(name) else 3), f"{part}: hidden tests need several cases"
        for a, b in zip(first[part], again[part], strict=True):
            assert a.name == b.name and _same(a.args, b.args), (part, a.name)
        for case in first[part]:
            assert all(t.device.type == "cpu" for t in _tensors(case.args)), (part, case.name)
    assert any(not _same([c.args for c in first[p]], [c.args for c in other[p]]) for p in first)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_reference_solves_its_own_cases_and_uses_no_forbidden_name(name):
    parts = load_reference(load_assignment(name)).PARTS
    for part, cases in part_cases(name, 7).items():
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



def test_release_command_says_whether_the_release_is_current(tmp_path):
    """``grader release A --check``: the command an instructor runs (every assignment's release is compared
    with a fresh one by test_release_is_current_and_reproducible, and by ``grader autograde`` before it grades)."""
    proc = grader_cli("release", ASSIGNMENTS[0], "--check", course_dir=tmp_path / "course", check=False)
    assert proc.returncode == 0, f"notebooks/{ASSIGNMENTS[0]} is stale: {proc.stdout}{proc.stderr}"
    assert "up to date" in proc.stdout


@pytest.fixture(scope="module")
def release_course(tmp_path_factory):
    """One course folder for the fresh releases below: nbgrader creates its gradebook once (running
    ``alembic`` in a process of its own, 2.5 s), not once per assignment."""
    return tmp_path_factory.mktemp("release-course")


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_release_is_current_and_reproducible(tmp_path, monkeypatch, release_course, name):
    """A fresh release of ``solutions/<name>`` is ``notebooks/<name>``, file for file and byte for byte: the
    release is current, and reproducible (the committed one was made by an earlier run, in another folder)."""
    from grader.release import generate

    monkeypatch.setenv("PATH", grader_env()["PATH"])
    out = generate(name, tmp_path / "release", release_course)
    fresh = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    folder = load_assignment(name).release.parent
    committed = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert fresh and fresh == committed, f"notebooks/{name} is stale or not reproducible: run `grader release {name}`"


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


# ------------------------------------------------------------------ each visible test cell runs on its own


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_each_test_cell_reads_nothing_only_another_test_cell_defines(name):
    """A student re-runs one test cell after fixing their answer: it must not read a name that only an
    earlier test cell binds (the transformer's encode test once read part 5's ``names``: a NameError when run
    alone). Every global a test cell's visible part reads is bound by itself, a set-up or given cell, an answer
    cell, or Python's builtins."""
    import ast
    import builtins

    from grader.notebook import HIDDEN_BEGIN, free_names, is_autograded_test, python_source

    nb = nbformat.read(str(load_assignment(name).source), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]

    def bound(cell) -> set[str]:
        tree = ast.parse(python_source([cell.source.partition(HIDDEN_BEGIN)[0]]))
        return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | \
            {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))} | \
            {(a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
             for a in n.names}

    others = set(dir(builtins)) | {"get_ipython", "display"}
    for cell in code:
        if not is_autograded_test(cell):
            others |= bound(cell)
    for cell in code:
        if is_autograded_test(cell):
            visible = python_source([cell.source.partition(HIDDEN_BEGIN)[0]])
            missing = free_names(ast.parse(visible)) - others - bound(cell)
            assert not missing, f"{nbgrader_meta(cell)['grade_id']} reads {sorted(missing)}: only a test binds it"


# ------------------------------------------------------------------ the times the notebooks state

#: (assignment, the cell that states it, the statement with its number as (\d+), what was measured: a cell of
#: benchmarks/results/notebook_times.json, written by scripts/notebook_times.py on the course's 2-core machine)
STATED_TIMES = [
    ("cnn", "train-md", r"it takes about (\d+)\nseconds on the word-order task", "train-run"),
    ("cnn", "train-md", r"and about (\d+) on the reviews", "question: two epochs on the reviews"),
    ("cnn", "train-run", r"\(about (\d+) seconds\)", "train-run"),
    ("cnn", "written-question", r"two epochs takes\s+about (\d+) seconds", "question: two epochs on the reviews"),
    ("cnn", "written-question", r"one of six about (\d+)\)", "question: six epochs on the reviews"),
    ("pretraining", "train-md", r"takes about (\d+) seconds", "train-run"),
    ("pretraining", "train-run", r"\(about (\d+) seconds\)", "train-run"),
    ("pretraining", "pretrain-md", r"It takes about (\d+) seconds", "pretrain-demo"),
    ("rnnlm", "train-md", r"takes about (\d+) seconds", "train-run"),
    ("rnnlm", "train-run", r"\(about (\d+) seconds\)", "train-run"),
    ("seq2seq", "train-md", r"takes about (\d+) seconds", "train-run"),
    ("seq2seq", "train-run", r"\(about (\d+) seconds\)", "train-run"),
    ("transformer", "train-md", r"takes about (\d+) seconds", "train-run"),
    ("transformer", "train-run", r"\(about (\d+) seconds\)", "train-run"),
    ("transformer", "written-question", r"\(about (\d+) seconds each\)", "question: one short epoch"),
    ("word2vec", "train-md", r"takes about (\d+) seconds", "train-run"),
    ("word2vec", "train-run", r"\(about (\d+) seconds\)", "train-run"),
]


def _notebook_times() -> dict:
    import json

    return json.loads((ROOT / "benchmarks" / "results" / "notebook_times.json").read_text())["assignments"]


@pytest.mark.parametrize("name, cell, statement, measured", STATED_TIMES)
def test_each_stated_time_is_the_measured_one(name, cell, statement, measured):
    """A time a notebook promises is what scripts/notebook_times.py measured for that cell (or that written
    question's run), rounded: within 25% (issue 55: "about 9 s" took 24)."""
    import re

    if name not in ASSIGNMENTS:
        pytest.skip(f"no {name} here")
    nb = nbformat.read(str(load_assignment(name).source), as_version=4)
    source = next(c.source for c in nb.cells if nbgrader_meta(c).get("grade_id") == cell)
    found = re.search(statement, source)
    assert found, f"{name}/{cell} no longer says {statement!r}: update STATED_TIMES"
    seconds = _notebook_times()[name]["cells"][measured]
    assert abs(int(found.group(1)) - seconds) <= 0.25 * seconds, (name, cell, found.group(0), seconds)


@pytest.mark.parametrize("name", ASSIGNMENTS)
def test_every_graded_cells_limit_is_six_times_what_it_takes(name):
    """The grader's limit on each test cell (the default --cell-timeout, 60 s, or the source's own) is at least
    six times the cell's measured time; a trained part's hidden cell trains as the notebook's own run does,
    so its limit is held to six times that run. Three times was not enough: the project's CI, two grading
    runs of two kernels each on its two cores, stopped cnn's trained cell (19 s here) at 60 s and the
    transformer's (32 s here) at 120 s. The sentence that states the limit states that one."""
    import re

    from grader.autograde import Limits
    from grader.notebook import cell_timeout, is_autograded_test

    times = _notebook_times()[name]["cells"]
    nb = nbformat.read(str(load_assignment(name).source), as_version=4)
    for cell in nb.cells:
        if not is_autograded_test(cell):
            continue
        gid, limit = nbgrader_meta(cell)["grade_id"], cell_timeout(cell, Limits().cell_timeout)
        takes = times["train-run"] if gid == "train-test" else times[gid]
        assert limit >= 6 * takes, f"{name}/{gid}: a limit of {limit} s for a cell that takes {takes:.1f} s"
    said = re.search(r"judges this part after (\d+) seconds", "\n".join(c.source for c in nb.cells))
    if said:
        train = next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == "train-test")
        assert int(said.group(1)) == cell_timeout(train, Limits().cell_timeout), said.group(0)
