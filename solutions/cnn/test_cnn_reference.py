"""Checks that only make sense for the assignment "A CNN sentence classifier from its parts": the functions
and the measure the notebook shares with the grader, the judge of the trained parameters, the edge cases the
hidden tests must hold, and which planted bugs it must have. Private, like the reference beside it (never
released: ``grader.course.PRIVATE_FILES``); the checks every assignment passes are in
tests/test_grading_assignments.py."""
from __future__ import annotations

import pytest
import torch

from grader.course import load_assignment, load_bugs, load_reference
from grader.submissions import run_solved_cells
from nlpcourse.checking import Case
from nlpcourse.models.cnn import window_mask

pytestmark = pytest.mark.grading

ASSIGNMENT = load_assignment("cnn")
REFERENCE = load_reference(ASSIGNMENT)
BUGS = load_bugs(ASSIGNMENT)
#: The answer cells the trainer is made of, in notebook order.
TRAINER_CELLS = ("conv-solution", "pool-solution", "encoder-solution", "maxnorm-solution", "logits-solution",
                 "train-helpers", "train-solution")


def _run_cells(*grade_ids: str) -> dict:
    return run_solved_cells("cnn", *grade_ids)


def test_the_bugs_the_issue_names_are_planted():
    names = " ".join(bug.name for bug in BUGS)
    for what in ("padding counted in the max", "with 0 instead of -inf", "dropout left on at evaluation",
                 "columns instead of the rows", "whole matrix", "frozen copy receives gradients",
                 "width-major", "one window per word"):
        assert what in names, what
    assert len(BUGS) >= 8
    assert all(bug.loses == {"gradcheck-test"} for bug in BUGS if bug.cell == "gradcheck-solution")


def test_valid_windows_agree_with_the_library_for_real_sentences():
    lengths = torch.tensor([1, 2, 5, 7])
    for width in (1, 3, 5):
        assert torch.equal(REFERENCE._valid_windows(lengths, 7 + width - 1, width), window_mask(lengths, 7, width))
    assert not REFERENCE._valid_windows(torch.tensor([0]), 6, 3).any()


def test_hidden_cases_hold_the_edge_cases_the_issue_asks_for():
    g = torch.Generator().manual_seed(0)
    pool = REFERENCE.PARTS["max_over_time"].cases(g, "cpu")
    assert any((case.args[1] == 0).any() for case in pool), "an all-padding row"
    assert any("real" in case.name for case in pool)
    negative = [c for c in pool if "negative" in c.name]
    assert negative and all((c.args[0] < 0).all() for c in negative), "every activation negative"
    conv = REFERENCE.PARTS["conv1d_unfold"].cases(g, "cpu")
    assert any(case.args[0].shape[1] < case.args[1].shape[2] for case in conv), "a sentence shorter than the filter"
    real = [c for c in conv if c.name.startswith("real")]
    assert real and (real[0].args[0].abs().sum(dim=2) > 0).sum(dim=1).min() <= 2, "a 1-2 word snippet"




def test_the_notebooks_measure_is_the_graders_and_the_solution_clears_the_bar():
    """The solution's trainer on one seed (the suite grades the solution on another, in the kernel; the bar's
    margin over 20 seeds is in reference.py): its accuracy by the notebook's ``accuracy`` (the student's
    functions) equals the grader's ``split_accuracy`` (PyTorch's convolution), and clears the threshold on the
    test part; the grader's check accepts it and rejects broken parameters with a reason."""
    torch.set_num_threads(1)
    ns = _run_cells(*TRAINER_CELLS)
    for seed in (5,):
        params = ns["train_cnn"](seed)
        for part in ("valid", "test"):
            assert ns["accuracy"](params, part) == pytest.approx(REFERENCE.split_accuracy(params, part), abs=1e-3)
        case = Case("seed", [seed, *REFERENCE.TRAIN_SETTINGS])
        expected = REFERENCE.train_cnn(*case.args)
        verdict = REFERENCE._check_training(expected, params, case, "cpu")
        assert verdict.ok and verdict.details["accuracy"] >= REFERENCE.MIN_TEST_ACCURACY + 0.01, verdict
    broken = dict(params, W_out=params["W_out"].T.contiguous())
    assert "W_out" in REFERENCE._check_training(expected, broken, case, "cpu").message
    swapped = dict(params, filters=[(W.transpose(1, 2).contiguous(), b) for W, b in params["filters"][:1]])
    assert not REFERENCE._check_training(expected, swapped, case, "cpu").ok
    nan = dict(params, E=params["E"] * float("nan"))
    assert "nan" in REFERENCE._check_training(expected, nan, case, "cpu").message
