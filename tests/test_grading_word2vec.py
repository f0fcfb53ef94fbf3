"""End-to-end tests of the assignment "word2vec from its parts" (``solutions/word2vec/``): real submissions,
real sandboxed kernels, nbgrader's real gradebook, as tests/test_grading.py does for backprop (whose
helpers this module reuses).

One module-scoped run of ``grader autograde word2vec`` grades, two at a time: the solution (full marks,
10 autograded points), the blank release (0) and one submission per bug of tests/word2vec_bugs.py (points
lost exactly in the test cells the bug lists). The other tests need no kernel: the release, the leaks,
and the reference's case generators and statistical check. Run with ``pytest -m grading``.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import nbformat
import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from submissions import release_notebook, solution_answers, submission, with_bug, write  # noqa: E402
from test_grading import HIDDEN_LINES, SOLUTION_LINES, grader_cli, leaks  # noqa: E402
from word2vec_bugs import BUGS, CBOW, NEGATIVES, SGNS  # noqa: E402

from grader.course import load_assignment, load_reference  # noqa: E402
from grader.notebook import forbidden_uses, nbgrader_meta  # noqa: E402
from grader.release import LEAK_MARKERS  # noqa: E402
from nlpcourse.checking import compare_samples  # noqa: E402

pytestmark = pytest.mark.grading

ASSIGNMENT = "word2vec"
NOTEBOOK = "word2vec.ipynb"
COURSE_ID = "neural-nlp"
GRADE_OPTIONS = ["--workers", "2", "--cell-timeout", "30", "--notebook-timeout", "150", "--memory-gib", "3"]
ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "solutions" / ASSIGNMENT / NOTEBOOK
RELEASE = ROOT / "notebooks" / ASSIGNMENT / NOTEBOOK
REFERENCE = load_reference(load_assignment(ASSIGNMENT))


def _test_points() -> dict[str, float]:
    nb = nbformat.read(str(SOURCE), as_version=4)
    return {nbgrader_meta(c)["grade_id"]: float(nbgrader_meta(c)["points"]) for c in nb.cells
            if nbgrader_meta(c).get("grade") and not nbgrader_meta(c).get("solution") and c.cell_type == "code"}


POINTS = _test_points()  # grade_id of each autograded test cell -> its points
MAX_AUTOGRADED = sum(POINTS.values())
WRITTEN_POINTS = 2


# ------------------------------------------------------------------ one grading run


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """Grade the solution, the blank release and every bug in one ``grader autograde`` run."""
    tmp = tmp_path_factory.mktemp("grading-word2vec")
    subs, course = tmp / "submissions", tmp / "course"
    write(submission(ASSIGNMENT), subs, "solution", NOTEBOOK)
    write(release_notebook(ASSIGNMENT), subs, "blank", NOTEBOOK)
    for i, bug in enumerate(BUGS):
        write(with_bug(ASSIGNMENT, bug.cell, bug.old, bug.new), subs, f"bug-{i:02d}", NOTEBOOK)
    start = time.monotonic()
    proc = grader_cli("autograde", ASSIGNMENT, "--submissions", str(subs), *GRADE_OPTIONS, course_dir=course)
    print(f"graded {len(BUGS) + 2} word2vec submissions in {time.monotonic() - start:.0f} s")
    return {"course": course, "stdout": proc.stdout, "stderr": proc.stderr}


def result(graded, student: str) -> dict:
    return json.loads((graded["course"] / "work" / ASSIGNMENT / student / "result.json").read_text())


def cell_scores(graded, student: str) -> dict[str, float]:
    return {cell: s["score"] for cell, s in result(graded, student)["cells"].items()}


def executed(graded, student: str):
    """The notebook as the grader ran it, each test cell's output replaced by its verdict."""
    return nbformat.read(str(graded["course"] / "work" / ASSIGNMENT / student / "executed.ipynb"), as_version=4)


def _outputs(cell) -> str:
    return "".join(o.get("text", "") + o.get("ename", "") + " " + o.get("evalue", "") for o in cell.get("outputs", []))


# ------------------------------------------------------------------ solution and blank


def test_solution_gets_full_marks(graded):
    r = result(graded, "solution")
    assert r["status"] == "graded", r["message"]
    assert cell_scores(graded, "solution") == POINTS
    assert r["score"] == MAX_AUTOGRADED == 10
    for cell, s in r["cells"].items():
        assert "cases passed" in s["message"] and "failure" not in s["message"], (cell, s["message"])


def test_solution_runs_every_cell_and_the_demo(graded):
    """No cell of the solution fails (visible tests included), and the demo trains and answers analogies."""
    nb = executed(graded, "solution")
    for cell in nb.cells:
        if cell.cell_type == "code":
            errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            assert not errors, (nbgrader_meta(cell).get("grade_id"), errors)
    demo = next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == "demo")
    text = _outputs(demo)
    assert "step 300" in text and "man : king :: woman : " in text, text


def test_blank_release_gets_zero(graded):
    r = result(graded, "blank")
    assert r["status"] == "graded", r["message"]
    assert r["score"] == 0 and set(cell_scores(graded, "blank").values()) == {0.0}
    for cell, s in r["cells"].items():
        assert "NotImplementedError" in s["message"], (cell, s["message"])


def test_visible_tests_of_the_blank_say_not_implemented(graded):
    """Every visible test of the release, run on the blank, stops with "<part>: not implemented yet"."""
    nb = executed(graded, "blank")
    verdicts = {nbgrader_meta(c)["grade_id"]: _outputs(c) for c in nb.cells
                if nbgrader_meta(c).get("grade_id") in POINTS}
    assert set(verdicts) == set(POINTS)
    for cell, text in verdicts.items():
        assert "Visible test: CheckFailure:" in text and "not implemented yet" in text, (cell, text)
        assert "Traceback" not in text, (cell, text)


def test_gradebook_has_the_written_answer_to_grade_by_hand(graded):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{graded['course'] / 'gradebook.db'}", COURSE_ID) as gb:
        assert gb.find_assignment(ASSIGNMENT).max_score == MAX_AUTOGRADED + WRITTEN_POINTS
        good = gb.find_submission(ASSIGNMENT, "solution")
        assert good.needs_manual_grade is True
        assert good.code_score == pytest.approx(MAX_AUTOGRADED)


# ------------------------------------------------------------------ planted bugs


def test_there_are_enough_bugs():
    assert len(BUGS) >= 8
    assert len({b.name for b in BUGS}) == len(BUGS)
    for bug in BUGS:
        assert bug.loses and bug.loses <= set(POINTS), bug.name
    # the ones the assignment is about
    cells = {cell for bug in BUGS for cell in bug.loses}
    assert cells == set(POINTS), "every test cell has a bug that it catches"
    assert any(bug.loses == {SGNS, CBOW} and "log(sigmoid" in bug.name for bug in BUGS)
    assert sum(bug.loses == {NEGATIVES} for bug in BUGS) >= 3


@pytest.mark.parametrize("index", range(len(BUGS)), ids=[b.name for b in BUGS])
def test_bug_loses_points_exactly_where_expected(graded, index):
    bug = BUGS[index]
    r = result(graded, f"bug-{index:02d}")
    assert r["status"] == "graded", r["message"]
    scores = cell_scores(graded, f"bug-{index:02d}")
    lost = {cell for cell, s in scores.items() if s < POINTS[cell]}
    assert lost == bug.loses, f"{bug.name}: lost points in {sorted(lost)}, expected {sorted(bug.loses)}"
    for cell in bug.loses:
        assert "first failure" in r["cells"][cell]["message"], r["cells"][cell]["message"]
    for cell, s in r["cells"].items():
        assert "does not allow" not in s["message"], f"{cell}: {s['message']}"


# ------------------------------------------------------------------ release


def test_release_is_up_to_date(tmp_path):
    proc = grader_cli("release", ASSIGNMENT, "--check", course_dir=tmp_path / "course", check=False)
    assert proc.returncode == 0, f"notebooks/{ASSIGNMENT} is stale: {proc.stdout}{proc.stderr}"
    assert "up to date" in proc.stdout


def test_released_notebook_has_no_solution_nor_hidden_test():
    assert not leaks(RELEASE, SOLUTION_LINES | HIDDEN_LINES)
    text = RELEASE.read_text()
    assert not [m for m in LEAK_MARKERS if m in text]
    assert not list(RELEASE.parent.rglob("reference.py"))
    nb = nbformat.read(str(RELEASE), as_version=4)
    answers = [c for c in nb.cells if nbgrader_meta(c).get("solution") and c.cell_type == "code"]
    assert len(answers) == 6
    for cell in answers:
        assert "raise NotImplementedError()" in cell.source, nbgrader_meta(cell)["grade_id"]


# ------------------------------------------------------------------ the reference, without a kernel


def _same(x, y) -> bool:
    if isinstance(x, torch.Tensor):
        return isinstance(y, torch.Tensor) and x.dtype == y.dtype and x.shape == y.shape and torch.equal(x, y)
    if isinstance(x, (list, tuple)):
        return isinstance(y, (list, tuple)) and len(x) == len(y) and all(_same(a, b) for a, b in zip(x, y))
    return type(x) is type(y) and x == y


def _cases(seed: int) -> dict:
    return {name: part.cases(torch.Generator().manual_seed(seed), "cpu") for name, part in REFERENCE.PARTS.items()}


def test_parts_match_the_notebook():
    """Every part's test cell and answer cells exist; the parts of a test cell share its points."""
    nb = nbformat.read(str(SOURCE), as_version=4)
    ids = {nbgrader_meta(c).get("grade_id") for c in nb.cells}
    for name, part in REFERENCE.PARTS.items():
        assert part.test_cell in POINTS, name
        assert set(part.solution_cells) <= ids, name
        test_cell = next(c for c in nb.cells if nbgrader_meta(c).get("grade_id") == part.test_cell)
        assert f'record("{name}"' in test_cell.source, name
    assert {p.test_cell for p in REFERENCE.PARTS.values()} == set(POINTS)


def test_case_generators_are_deterministic():
    first, again, other = _cases(1234), _cases(1234), _cases(4321)
    for name in REFERENCE.PARTS:
        assert len(first[name]) >= 5, name
        for a, b in zip(first[name], again[name], strict=True):
            assert a.name == b.name and _same(a.args, b.args), (name, a.name)
        for case in first[name]:
            for arg in case.args:
                if isinstance(arg, torch.Tensor):
                    assert arg.device.type == "cpu"
    assert any(not _same([c.args for c in first[n]], [c.args for c in other[n]]) for n in REFERENCE.PARTS)


def test_reference_solves_its_own_cases():
    """The references run on every case, and each analogy case has one clear best answer (a margin far
    above rounding), so that a correct answer in float32 cannot pick another word."""
    cases = _cases(7)
    for name, part in REFERENCE.PARTS.items():
        for case in cases[name]:
            part.reference(*case.args)
    for case in cases["analogy"]:
        E, a, b, c = case.args
        top2 = REFERENCE._analogy_scores(E.double(), a, b, c).topk(2, dim=1).values
        need = 1e-4 if E.dtype == torch.float32 else 1e-9
        assert (top2[:, 0] - top2[:, 1]).min() > need, case.name


@pytest.mark.parametrize("seed", [0, 99])
def test_draws_check_rejects_uniform_and_unigram_samplers(seed):
    """The chi-square check of draw_negatives accepts the reference's draws and rejects, on every case,
    draws from the uniform distribution and from the unsmoothed unigram distribution (power 1)."""
    part = REFERENCE.PARTS["draw_negatives"]
    for case in part.cases(torch.Generator().manual_seed(seed), "cpu"):
        noise, B, K, s = case.args
        assert B * K >= 20000 and len(noise) >= 200, case.name
        g = torch.Generator().manual_seed(s + 1)
        unigram = noise ** (1 / 0.75)  # the noise is counts ** 0.75, normalised
        samplers = {
            "uniform": torch.randint(len(noise), (B, K), generator=g),
            "power 1": torch.multinomial(unigram / unigram.sum(), B * K, replacement=True, generator=g).view(B, K),
        }
        expected = part.reference(*case.args)
        assert compare_samples(noise, expected, (B, K)).ok, case.name
        assert part.check(expected, expected, case, None).ok, case.name
        assert not part.check(expected, expected.int(), case, None).ok, case.name  # ids must be torch.long
        for what, draws in samplers.items():
            verdict = compare_samples(noise, draws, (B, K))
            assert not verdict.ok, f"{case.name}: the {what} sampler passed ({verdict.details})"
            assert not part.check(expected, draws, case, None).ok, case.name


def test_forbidden_names_catch_ready_made_losses():
    """PyTorch's stable log-sigmoid and losses, autograd and the word-vector libraries are refused in the
    answer cells; the solution's own answer cells use none of them."""
    uses = {
        "log_sigmoid": "import torch.nn.functional as F\ndef log_sigmoid(x):\n    return F.logsigmoid(x)\n",
        "sgns_loss": "def log_sigmoid(x):\n    return -torch.logaddexp(torch.zeros_like(x), -x)\n",
        "cbow_loss": "def cbow_hidden(W_in, context, mask):\n    return torch.embedding_bag(W_in, context)\n",
        "analogy": "from gensim.models import KeyedVectors\n",
    }
    for name, code in uses.items():
        assert forbidden_uses(code, REFERENCE.PARTS[name].forbidden), name
    assert forbidden_uses("loss.backward()", REFERENCE.PARTS["sgns_loss"].forbidden)
    answers = solution_answers(ASSIGNMENT)
    for name, part in REFERENCE.PARTS.items():
        code = "\n".join(answers[cell] for cell in part.solution_cells)
        assert not forbidden_uses(code, part.forbidden), name
