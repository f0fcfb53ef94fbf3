"""The gradient check declared once (grader/gradcheck.py), in every assignment that uses it: the notebook's locked
functions are the grader's, the cases tell central from forward differences, and the students' two functions
have one specification, word for word, wherever they are asked for."""
from __future__ import annotations

import re

import pytest
import torch

from grader import gradcheck
from grader.course import SOLUTIONS, assignments, load_assignment, load_bugs, load_reference
from grader.judging import judge_case
from grader.submissions import run_solved_cells, solved_cells
from grader.trial import solved_namespace
from nlpcourse.checking import compare, run_case

if not SOLUTIONS.is_dir():  # the public copy (`grader publish`) has no solutions/
    pytest.skip("needs solutions/ (private, not in the public copy)", allow_module_level=True)


def _uses_the_shared_check(name: str) -> bool:
    parts = load_reference(load_assignment(name)).PARTS
    return "relative_error" in parts and parts["relative_error"].reference is gradcheck.references().relative_error


SHARED = [a for a in assignments() if _uses_the_shared_check(a)]


def _cases(reference, seed: int):
    return reference.PARTS["numerical_gradient"].cases(torch.Generator().manual_seed(seed), "cpu")


def test_the_assignments_that_derive_gradients_share_the_check():
    assert {"backprop", "cnn", "rnnlm", "word2vec", "seq2seq", "transformer", "pretraining"} <= set(SHARED)


@pytest.mark.parametrize("name", SHARED)
def test_the_notebooks_gradcheck_functions_are_the_graders(name):
    """The locked cell that the hidden test runs in the kernel defines the functions the grader differentiates,
    and its ``numerical_gradient_on`` hands the student's ``numerical_gradient`` the function and the point."""
    reference = load_reference(load_assignment(name))
    ns = run_solved_cells(name, "setup", "gradcheck-functions")
    assert set(ns["GRADCHECK_FUNCTIONS"]) == set(reference.GRADCHECK_FUNCTIONS)
    for case in _cases(reference, 3):
        fn, x, _, *fixed = case.args
        for point in (x, x + 0.3):
            assert torch.equal(ns["GRADCHECK_FUNCTIONS"][fn](point, *fixed),
                               reference.GRADCHECK_FUNCTIONS[fn](point, *fixed)), case.name
    ns["numerical_gradient"] = lambda f, x, eps: (f(x), x, eps)
    x = torch.arange(4.0, dtype=torch.float64)
    assert ns["numerical_gradient_on"]("cubic", x, 0.5) == (reference.GRADCHECK_FUNCTIONS["cubic"](x), x, 0.5)


@pytest.mark.parametrize("name", SHARED)
def test_the_cases_separate_central_from_forward_differences(name):
    """A forward difference fails every case but those where it is exact (a function linear in x, such as a
    convolution: there both are right), and there are such failing cases; central differences are closer to
    the true gradient than forward ones on every other case."""
    reference = load_reference(load_assignment(name))
    failed = 0
    for case in _cases(reference, 5):
        fn, x, eps, *fixed = case.args
        f = reference.GRADCHECK_FUNCTIONS[fn]
        central = reference.PARTS["numerical_gradient"].reference(*case.args)
        forward = torch.zeros_like(central)
        for k in range(x.numel()):  # forward differences: what the cases must fail
            bump = torch.zeros_like(x)
            bump.view(-1)[k] = eps
            forward.view(-1)[k] = (f(x + bump, *fixed) - f(x, *fixed)) / eps
        leaf = x.clone().requires_grad_()
        f(leaf, *fixed).backward()
        if compare(central, forward, "output", case.rtol, case.atol).ok:
            assert torch.allclose(forward, leaf.grad, rtol=1e-6, atol=1e-8), case.name
            continue
        failed += 1
        assert (central - leaf.grad).abs().max() < (forward - leaf.grad).abs().max(), case.name
    assert failed >= 5


def _specification(name: str, function: str) -> str:
    """The signature and docstring of ``function`` in the assignment's gradient-check answer cell."""
    source = solved_cells(name)["gradcheck-solution"]
    match = re.search(rf'def {function}\(.*?"""(.*?)"""', source, re.S)
    assert match, (name, function)
    return match.group(0)


@pytest.mark.parametrize("function", ["numerical_gradient", "relative_error"])
def test_one_specification_wherever_the_check_is_asked_for(function):
    specs = {name: _specification(name, function) for name in SHARED}
    assert len(set(specs.values())) == 1, specs


@pytest.mark.parametrize("name", SHARED)
def test_the_solution_passes_and_every_planted_bug_of_the_check_fails_on_every_seed(name):
    """Judged as the grader judges (in this process): the solution's two functions pass every case of seeds 0
    to 2, and each planted bug of the answer cell fails some case of each seed, so that it always loses."""
    reference = load_reference(load_assignment(name))
    bugs = [i for i, bug in enumerate(load_bugs(load_assignment(name))) if bug.cell == "gradcheck-solution"]
    assert len(bugs) >= 2
    for bug in [None, *bugs]:
        recorded = solved_namespace(name, bug)["recorded"]
        for seed in (0, 1, 2):
            verdicts = [judge_case(reference.PARTS[part], case, run_case(recorded[part], case)).ok
                        for part in ("numerical_gradient", "relative_error")
                        for case in reference.PARTS[part].cases(torch.Generator().manual_seed(seed), "cpu")]
            assert all(verdicts) if bug is None else not all(verdicts), (name, bug, seed)
