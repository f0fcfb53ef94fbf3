"""What an assignment's private modules declare, so that the grader can grade it and the tests check it.

``solutions/<assignment>/reference.py`` defines ``NOTEBOOK`` (the notebook's file name) and
``PARTS``: one :class:`Part` per name that a hidden test passes to ``nlpcourse.checking.record``.
``solutions/<assignment>/bugs.py`` defines ``BUGS``: the planted bugs, one :class:`Bug` each, that the
grading test suite plants in the solution to check that the grader catches them where it should.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from nlpcourse.checking import Case, Verdict, compare, copy_to

#: A part's own comparison: ``check(expected, got, case, device) -> Verdict``, where ``expected`` is what the
#: reference returned for the case and ``device`` the device the output must be on (None: not checked).
#: For outputs that cannot be compared value by value, such as random draws (see
#: ``nlpcourse.checking.compare_samples``).
Check = Callable[[Any, Any, Case, "str | None"], Verdict]


@dataclass
class Part:
    """One recorded function of an assignment and how to check it."""

    test_cell: str  # grade_id of the nbgrader test cell whose points this part earns (several parts may share one)
    reference: Callable[..., Any]  # the reference implementation, called with the same positional args
    cases: Callable[[torch.Generator, str], list[Case]]  # (seeded generator, device) -> input cases
    solution_cells: tuple[str, ...] = ()  # grade_ids of the answer cells that implement it
    forbidden: tuple[str, ...] = ()  # names the answer cells must not use (e.g. "backward", "autograd")
    weight: float = 1.0  # share of the test cell's points, relative to the other parts of that cell
    extra: dict[str, Any] = field(default_factory=dict)  # anything else the reference needs
    check: Check | None = None  # how to compare an output with the reference's (None: nlpcourse.checking.compare)
    # the reference runs on the case's device rather than the CPU: for outputs drawn from that device's own random
    # stream (a dropout mask from a CUDA generator differs from the CPU's with the same seed)
    same_device: bool = False


def make_case(name: str, args: Sequence[Any], device: str, rtol: float | None = None,
              atol: float | None = None) -> Case:
    """A case whose tensor arguments (inside lists, tuples and dicts too) are moved to ``device``: case
    generators draw every input on the CPU, so that a seed gives the same inputs on every device."""
    return Case(name, copy_to(list(args), device), device, rtol, atol)


@dataclass
class Bug:
    """A realistic mistake, planted in the solution: one exact substring replacement in one answer cell.

    The solution with this one bug must lose points in exactly the test cells in ``loses`` (the cells
    whose parts call the buggy function, directly or through a later part) and keep full marks in
    every other test cell, except those in ``may_lose``: cells where the outcome was measured to depend on
    the grader's seed (a trained model that survives the bug on most seeds, say), documented beside the bug."""

    name: str  # what the mistake is, as a student would make it
    cell: str  # grade_id of the answer cell to edit
    old: str  # exact substring of that cell's solution source, occurring once
    new: str  # what replaces it
    loses: set[str]  # grade_ids of the test cells that must lose points; all others keep full marks
    may_lose: frozenset[str] = frozenset()  # test cells that may lose points or not, by the grader's seed


def tuple_check(names: Sequence[str]) -> Check:
    """A :data:`Check` for parts that return a tuple of tensors (gradients, say): the elements compared one by
    one, the first wrong one named (``names[i]``) in the verdict."""

    def check(expected: Any, got: Any, case: Case, device: str | None) -> Verdict:
        if not (isinstance(got, (list, tuple)) and len(got) == len(names)):
            return compare(tuple(expected), got, "output", case.rtol, case.atol, device)
        for name, e, g in zip(names, expected, got):
            verdict = compare(e, g, name, case.rtol, case.atol, device)
            if not verdict.ok:
                return verdict
        return Verdict(True)

    return check


def tensor_problem(name: str, t: Any, shape: tuple[int, ...], diverged: str = "training diverged") -> str:
    """What is wrong with a trained tensor for judging it: not a float tensor of ``shape``, or not finite
    (``diverged`` says why it may not be); "" when nothing is."""
    if not isinstance(t, torch.Tensor) or not t.is_floating_point() or tuple(t.shape) != tuple(shape):
        got = tuple(t.shape) if isinstance(t, torch.Tensor) else type(t).__name__
        return f"{name}: expected a float tensor of shape {tuple(shape)}, got {got}"
    if not torch.isfinite(t).all():
        return f"{name}: some values are nan or inf ({diverged})"
    return ""


#: What a reference declares about its trained part, in ``OUTCOME`` (a dict): the number the part's check
#: measures, the bar it must clear, and where the bar sits between the chapter's simple baseline (computed by
#: the reference's ``baseline_outcome``, never by the student's code) and the solution, both measured over
#: ``seeds`` grader seeds with ``scripts/trained_part_seeds.py`` (``--baseline`` for the baseline). The
#: suite re-measures the solution's worst seed and the baseline's best and asserts both (tests/test_outcomes.py).
OUTCOME_FIELDS: dict[str, str] = {
    "metric": "the key of the check's verdict details that holds the outcome (e.g. 'perplexity')",
    "better": "'lower' or 'higher'",
    "bar": "what a run must reach: at most the bar when better is 'lower', at least when 'higher'",
    "solution_worst": "the solution's worst outcome over the seeds",
    "solution_worst_seed": "the student seed that gave it",
    "solution_best": "the solution's best outcome over the seeds",
    "baseline": "what the baseline is, in words (e.g. 'character Kneser-Ney trigram, same split')",
    "baseline_best": "the baseline's best outcome over the seeds (its only one when it has no seed)",
    "baseline_best_seed": "the student seed that gave it (None: the baseline does not depend on the seed)",
    "seeds": "how many student seeds were measured (at least 20)",
    "seconds": "one training run of the solution on one CPU thread",
}


def check_outcome(outcome: Any, where: str) -> None:
    """Raise :class:`~nlpcourse.errors.CourseError` naming what is wrong with an ``OUTCOME`` declaration: a
    missing or unknown field, a direction other than 'lower'/'higher', fewer than 20 seeds, or a bar that does
    not sit strictly between the baseline's best seed and the solution's worst."""
    from nlpcourse.errors import CourseError

    if not isinstance(outcome, dict):
        raise CourseError(f"{where}: OUTCOME should be a dict with the fields {sorted(OUTCOME_FIELDS)}")
    missing, unknown = set(OUTCOME_FIELDS) - set(outcome), set(outcome) - set(OUTCOME_FIELDS)
    if missing or unknown:
        raise CourseError(f"{where}: OUTCOME lacks {sorted(missing)} and has unknown {sorted(unknown)}")
    if outcome["better"] not in ("lower", "higher"):
        raise CourseError(f"{where}: OUTCOME['better'] should be 'lower' or 'higher', not {outcome['better']!r}")
    if not isinstance(outcome["seeds"], int) or outcome["seeds"] < 20:
        raise CourseError(f"{where}: OUTCOME['seeds'] should be at least 20, not {outcome['seeds']!r}")
    if not reaches(outcome, outcome["solution_worst"]) or reaches(outcome, outcome["baseline_best"]):
        raise CourseError(f"{where}: the bar {outcome['bar']} does not sit between the baseline's best "
                          f"({outcome['baseline_best']}) and the solution's worst ({outcome['solution_worst']})")


def reaches(outcome: dict, value: float) -> bool:
    """Whether an outcome ``value`` clears the declared bar."""
    if outcome["better"] == "lower":
        return value <= outcome["bar"]
    return value >= outcome["bar"]


def recipe_check(expected: dict[str, torch.Tensor], got: dict, rtol: float, after: str, how: str) -> Verdict:
    """A trained part's recipe case: the weights ``got`` after a few steps of the notebook's recipe against the
    reference recipe's ``expected``, tensor by tensor (``||got - expected|| / ||expected||`` at most ``rtol``);
    the largest relative error in the details, the tensor that has it named. ``after`` says what was run
    ("after 3 windows with settings ..."), ``how`` what to follow."""
    errors = {name: float((got[name].detach().cpu().float() - e).norm() / e.norm().clamp_min(1e-12))
              for name, e in expected.items()}
    name = max(errors, key=lambda k: errors[k] if errors[k] == errors[k] else float("inf"))  # nan is the largest
    if not errors[name] <= rtol:
        return Verdict(False, f"{after}, {name} is not the recipe's (relative error {errors[name]:.2g}): {how}",
                       {"recipe_error": errors[name]})
    return Verdict(True, "", {"recipe_error": errors[name]})
