"""Trying an assignment's trained part outside a kernel, the way the grader judges it, on many grader seeds.

A trained part is graded on one run of the student's trainer, on a seed the grader draws from the student's
secret seed, judged by the part's ``check``. Where its bar sits, and which planted bugs fail it on every
seed and which only on some (``Bug.may_lose``), is measured here: the solution (or the solution with one
planted bug) is run over seeds 0, 1, 2... as student seeds, each giving the cases the grader would make,
and every run is judged by the grader's own check. ``scripts/trained_part_seeds.py`` is the command line.

The answer cells run in this process (no sandbox): use it on the course's own solution and bugs only.
"""
from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Callable
from typing import Any

import nbformat

from nlpcourse.checking import Case, Verdict, run_case

from .course import GraderError, load_assignment, load_bugs, load_reference
from .judging import judge_case, make_cases
from .notebook import HIDDEN_BEGIN, is_autograded_test, is_solution, nbgrader_meta, skip_reason
from .submissions import solution_answers


def trained_part(assignment: str) -> str:
    """The name of the assignment's trained part: the part whose test cell has the longest hidden run, i.e.
    the one with a ``check`` in the cell named ``train-test``."""
    parts = load_reference(load_assignment(assignment)).PARTS
    names = [name for name, part in parts.items() if part.test_cell == "train-test"]
    if len(names) != 1:
        raise GraderError(f"{assignment}: expected one part graded in the cell train-test, found {names}")
    return names[0]


def solved_namespace(assignment: str, bug: int | None = None) -> dict[str, Any]:
    """Run the notebook's set-up, given and answer cells (the solution's, with planted bug ``bug`` if given)
    in one namespace, as a kernel would (a cell that raises does not stop the next), without the test cells
    and the cells the grader skips; return it
    with ``recorded``: part name -> the function each hidden test hands to ``record``."""
    a = load_assignment(assignment)
    answers = solution_answers(assignment)
    if bug is not None:
        bugs = load_bugs(a)
        if not 0 <= bug < len(bugs):
            raise GraderError(f"{assignment} has {len(bugs)} planted bugs: no bug {bug}")
        b = bugs[bug]
        answers[b.cell] = answers[b.cell].replace(b.old, b.new, 1)
    recorded: dict[str, Callable] = {}
    namespace: dict[str, Any] = {"recorded": recorded}
    with contextlib.redirect_stdout(io.StringIO()):  # what the cells print (worked examples) is not wanted here
        _run_cells(a, answers, namespace, recorded)
    return namespace


def _run_cells(a, answers: dict[str, str], namespace: dict[str, Any], recorded: dict[str, Callable]) -> None:
    for cell in nbformat.read(str(a.source), as_version=4).cells:
        if cell.cell_type != "code" or skip_reason(cell):
            continue
        if is_autograded_test(cell):
            hidden = cell.source.partition(HIDDEN_BEGIN)[2]
            exec(hidden, {**namespace, "record": lambda part, fn: recorded.__setitem__(part, fn)})
            continue
        source = answers[nbgrader_meta(cell)["grade_id"]] if is_solution(cell) else cell.source
        try:
            exec(_without_magics(source), namespace)
        except Exception:  # noqa: BLE001 - as in a kernel, an error in one cell does not stop the next
            continue


def _without_magics(source: str) -> str:
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source).replace("get_ipython().run_line_magic", "(lambda *a: None)")


def judge_seeds(assignment: str, seeds: list[int], bug: int | None = None,
                report: Callable[[dict], None] | None = None) -> list[dict]:
    """Run the trained part for each student seed of ``seeds`` as the grader would (its cases from the seed,
    the trainer called on each, the part's check on what it returns); one row per case:
    ``{"seed", "case", "ok", "message", "details", "seconds"}``."""
    a = load_assignment(assignment)
    reference = load_reference(a)
    name = trained_part(assignment)
    part = reference.PARTS[name]
    fn = solved_namespace(assignment, bug)["recorded"][name]
    rows = []
    for seed, case in _seed_cases(reference, name, seeds):
        start = time.monotonic()
        got = run_case(fn, case)
        seconds = time.monotonic() - start
        verdict = judge_case(part, case, got)
        _add(rows, report, {"seed": seed, "case": case.name, "ok": verdict.ok, "message": verdict.message,
                            "details": {k: float(v) for k, v in verdict.details.items()
                                        if isinstance(v, (int, float))}, "seconds": round(seconds, 2)})
    return rows


def baseline_seeds(assignment: str, seeds: list[int],
                   report: Callable[[dict], None] | None = None) -> list[dict]:
    """The chapter's simple baseline on the trained part's cases for each student seed of ``seeds``: the
    reference's ``baseline_outcome(case, trainer)``, where ``trainer`` is the solution's trained function (a
    baseline may be the solution's trainer without the chapter's idea: a width-1 CNN, a decoder without
    attention), judged as the grader judges; one row per case judged on an outcome (``baseline_outcome``
    returns None for the others): ``{"seed", "case", "value", "seconds"}``."""
    a = load_assignment(assignment)
    reference = load_reference(a)
    name = trained_part(assignment)
    if not callable(getattr(reference, "baseline_outcome", None)):
        raise GraderError(f"{a.reference_path}: declares no baseline_outcome(case, trainer)")
    fn = solved_namespace(assignment)["recorded"][name]
    rows = []
    for seed, case in _seed_cases(reference, name, seeds):
        start = time.monotonic()
        value = reference.baseline_outcome(case, fn)
        if value is not None:  # None: a case of the part not judged on an outcome (a recipe check, say)
            _add(rows, report, {"seed": seed, "case": case.name, "value": float(value),
                                "seconds": round(time.monotonic() - start, 2)})
    return rows


def recipe_verdicts(reference, name: str, trainer: Callable, steps_at: int = -1,
                    seed: int = 3) -> tuple[Verdict, Verdict]:
    """The judge of part ``name``'s recipe case (``reference.RECIPE_SETTINGS``, the number of steps at index
    ``steps_at``) on ``seed``: its verdict on ``trainer``'s weights, and on those of one step more. A trainer
    that follows the recipe gets the first ok and the second not."""
    recipe = Case("recipe", [seed, *reference.RECIPE_SETTINGS])
    settings = list(reference.RECIPE_SETTINGS)
    settings[steps_at] += 1
    one_more = [seed, *settings]
    part = reference.PARTS[name]
    expected = part.reference(*recipe.args)
    return (part.check(expected, trainer(*recipe.args), recipe, "cpu"),
            part.check(expected, trainer(*one_more), recipe, "cpu"))


def _seed_cases(reference, name: str, seeds: list[int]):
    """(seed, case) for each student seed and each case of part ``name`` the grader draws from that seed."""
    for seed in seeds:
        for case in make_cases(reference, seed, [name])[name]:
            yield seed, case


def _add(rows: list[dict], report: Callable[[dict], None] | None, row: dict) -> None:
    rows.append(row)
    if report:
        report(row)


def summary(rows: list[dict]) -> dict:
    """How many runs passed, and the range of each number the check measured."""
    out: dict[str, Any] = {"runs": len(rows), "passed": sum(r["ok"] for r in rows)}
    for key in sorted({k for r in rows for k in r["details"]}):
        values = [r["details"][key] for r in rows if key in r["details"]]
        out[key] = [min(values), max(values)]
    return out
