"""What an assignment's reference module declares, so that the grader can grade it.

``solutions/<assignment>/reference.py`` defines ``NOTEBOOK`` (the notebook's file name) and
``PARTS``: one :class:`Part` per name that a hidden test passes to ``nlpcourse.checking.record``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import torch

from nlpcourse.checking import Case, Verdict, to_device

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


def make_case(name: str, args: Sequence[Any], device: str, rtol: float | None = None,
              atol: float | None = None) -> Case:
    """A case whose tensor arguments (inside lists, tuples and dicts too) are moved to ``device``: case
    generators draw every input on the CPU, so that a seed gives the same inputs on every device."""
    return Case(name, to_device(list(args), device), device, rtol, atol)
