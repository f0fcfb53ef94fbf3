"""Checks that only make sense for the assignment "Backprop by hand": the notebook's locked helper cells
agree with the reference that grades them, the training check measures what it says, and the bugs the
assignment is about are planted. Private, like the reference beside it (never released:
``grader.course.PRIVATE_FILES``); the checks every assignment passes are in tests/test_grading_assignments.py."""
from __future__ import annotations

import re

import nbformat
import pytest
import torch

from grader.course import load_assignment, load_bugs, load_reference
from grader.notebook import forbidden_uses, nbgrader_meta
from grader.submissions import solution_answers
from nlpcourse.checking import Case

pytestmark = pytest.mark.grading

ASSIGNMENT = load_assignment("backprop")
REFERENCE = load_reference(ASSIGNMENT)
BUGS = load_bugs(ASSIGNMENT)
GRADCHECK, TRAIN = "gradcheck-test", "train-test"


def _cells() -> dict[str, str]:
    nb = nbformat.read(str(ASSIGNMENT.source), as_version=4)
    return {nbgrader_meta(c)["grade_id"]: c.source for c in nb.cells}


def _namespace(*answers: str, bug=None) -> dict:
    """The notebook's set-up and locked helper cells, then the given answer cells of the solution
    (with ``bug`` planted), run in one namespace, as the kernel would."""
    cells, solved = _cells(), solution_answers("backprop")
    if bug is not None:
        solved[bug.cell] = solved[bug.cell].replace(bug.old, bug.new, 1)
    ns: dict = {}
    for gid in ("setup", "gradcheck-functions", "train-data", *answers):
        exec(solved.get(gid, cells[gid]), ns)
    return ns


def test_notebook_helpers_are_the_references():
    """``review_data`` runs in the kernel; the grader uses its own copy (the held-out reviews it measures the
    trained classifier on). The gradient check's locked functions: tests/test_gradcheck.py."""
    ns = _namespace()
    for split_seed in (0, 12345):
        _, _, X_val, y_val = ns["review_data"](split_seed, REFERENCE.TRAIN_VOCAB)
        X_ref, y_ref = REFERENCE.held_out(split_seed, REFERENCE.TRAIN_VOCAB)
        assert torch.equal(X_val, X_ref) and torch.equal(y_val, y_ref), split_seed
        assert X_val.shape[1] == REFERENCE.TRAIN_VOCAB + 4


def test_training_check_measures_the_parameters_itself():
    """check_training rejects untrained, zero, misshapen and non-finite parameters and a result that is
    no dict, and accepts the solution's trained parameters; the accuracy is measured on held-out reviews."""
    part = REFERENCE.PARTS["train_review_classifier"]
    case = Case("split seed 0", [0, REFERENCE.TRAIN_VOCAB, 16, 7])
    expected = part.reference(*case.args)
    assert expected == REFERENCE.REQUIRED_ACCURACY
    V = REFERENCE.held_out(0, REFERENCE.TRAIN_VOCAB)[0].shape[1]
    g = torch.Generator().manual_seed(0)
    untrained = {"W_1": torch.randn(16, V, generator=g) * 0.03, "b_1": torch.zeros(16),
                 "W_2": torch.randn(2, 16, generator=g) * 0.25, "b_2": torch.zeros(2)}
    zeros = {k: torch.zeros_like(v) for k, v in untrained.items()}
    misshapen = {**untrained, "W_1": untrained["W_1"].T}
    overflowed = {**untrained, "b_2": torch.tensor([float("inf"), 0.0])}
    missing = {k: v for k, v in untrained.items() if k != "b_1"}
    for bad in (untrained, zeros, misshapen, overflowed, missing, [untrained], 0):
        assert not part.check(expected, bad, case, None).ok
    ns = _namespace("linear-solution", "activation-solution", "logsoftmax-solution", "loss-solution",
                    "mlp-solution", "sgd-solution", "train-solution")
    X_train, y_train, _, _ = ns["review_data"](0, REFERENCE.TRAIN_VOCAB)
    trained = ns["train_review_classifier"](X_train, y_train, 16, 7)
    verdict = part.check(expected, trained, case, None)
    assert verdict.ok and verdict.details["accuracy"] >= expected + 0.01, verdict
    assert not part.check(expected, trained, case, "cuda").ok  # outputs on another device than the inputs


def test_notebook_states_the_graded_numbers():
    cells = _cells()
    required = f"{REFERENCE.REQUIRED_ACCURACY:.2f}"
    assert f"at least {required}" in cells["train-md"] and f"accuracy >= {required}" in cells["train-run"]
    assert f"{REFERENCE.TRAIN_VOCAB} words" in " ".join(cells["train-md"].split())
    assert "10^{-6}" in cells["gradcheck-md"] and "10^{-2}" in cells["gradcheck-md"]  # right, surely wrong


def test_no_gradient_formula_is_given_away():
    """Derivations are the student's: the released text (markdown, docstrings, hints) does not state
    the backward formulas, which part 1 asks for."""
    release = nbformat.read(str(ASSIGNMENT.release), as_version=4)
    text = "\n".join(c.source for c in release.cells)
    for formula in (r"dY\s*@\s*W", r"dY\.T\s*@\s*X", r"1\s*-\s*A\s*\*\s*A", r"1\s*-\s*\\tanh\^2", r"1 - tanh",
                    r"P\s*-\s*onehot", r"\(P - Y\)", r"onehot\(y\)\)\s*/\s*B", r"dZ = dA", r"\\odot f'",
                    r"sums over the batch", r"Z\s*<=\s*0"):
        assert not re.search(formula, text), formula


def test_forbidden_names_catch_autograd_and_ready_made_training():
    uses = {
        "numerical_gradient": "def numerical_gradient(f, X, eps):\n    return torch.func.grad(f)(X)\n",
        "train_review_classifier": "opt = torch.optim.SGD(params.values(), lr=0.5)\n",
    }
    for name, code in uses.items():
        assert forbidden_uses(code, REFERENCE.PARTS[name].forbidden), name
    assert forbidden_uses("import torch.nn as nn\n", REFERENCE.PARTS["train_review_classifier"].forbidden)
    assert forbidden_uses("loss.backward()\n", REFERENCE.PARTS["train_review_classifier"].forbidden)


def test_the_bugs_the_new_parts_are_about_are_planted():
    """Part 2: one-sided differences, all entries nudged at once, a relative error without its guard.
    Part 9: no step taken, labels shuffled apart from the inputs; each loses the training part only."""
    names = " ".join(b.name for b in BUGS if b.loses == {GRADCHECK})
    assert "one-sided" in names and "at once" in names and "||b|| only" in names
    train_only = " ".join(b.name for b in BUGS if b.loses == {TRAIN})
    assert "drops the new parameters" in train_only and "not the labels" in train_only
