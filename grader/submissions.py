"""Build realistic submissions of an assignment: the release with its answer cells filled in from the
solution, optionally with one planted bug (``solutions/<name>/bugs.py``) or a cell of one's own.

The grading test suite, the grading benchmark and an instructor checking a new assignment all grade
the same three kinds of notebook (:func:`standard_submissions`): the solution (full marks), the blank
release (0) and the solution with each planted bug (points lost exactly where the bug says).
"""
from __future__ import annotations

import copy
import re
from pathlib import Path

import nbformat

from .course import GraderError, load_assignment, load_bugs, load_reference
from .spec import Bug

_SOLUTION_LINE = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")


def solution_answers(assignment: str) -> dict[str, str]:
    """grade_id -> the source of each answer cell as a student who solved it would write it."""
    nb = nbformat.read(str(load_assignment(assignment).source), as_version=4)
    out = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            lines = cell.source.splitlines()
            out[meta["grade_id"]] = "\n".join(ln for ln in lines if not _SOLUTION_LINE.match(ln))
    return out


def solved_cells(assignment: str) -> dict[str, str]:
    """grade_id -> the source of every code cell of the source notebook, the answer cells as solved."""
    nb = nbformat.read(str(load_assignment(assignment).source), as_version=4)
    answers = solution_answers(assignment)
    ids = [(cell.metadata.get("nbgrader", {}).get("grade_id"), cell) for cell in nb.cells if cell.cell_type == "code"]
    return {gid: answers.get(gid, cell.source) for gid, cell in ids if gid}


def run_solved_cells(assignment: str, *grade_ids: str) -> dict:
    """Execute the solved cells ``grade_ids`` in this order in one fresh namespace (torch imported first),
    as a kernel would, and return the namespace: for checks of an assignment that need its functions."""
    cells, namespace = solved_cells(assignment), {}
    exec("import torch", namespace)
    for gid in grade_ids:
        exec(cells[gid], namespace)
    return namespace


def release_notebook(assignment: str) -> nbformat.NotebookNode:
    """The notebook students get (``notebooks/<name>/``), as handed out."""
    return nbformat.read(str(load_assignment(assignment).release), as_version=4)


def submission(assignment: str, answers: dict[str, str] | None = None, edit=None) -> nbformat.NotebookNode:
    """The release with ``answers`` (default: the solution) in its answer cells; ``edit(nb)`` may change more."""
    nb = release_notebook(assignment)
    answers = solution_answers(assignment) if answers is None else answers
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
    if edit is not None:
        nb = edit(nb) or nb
    return nb


def with_bug(assignment: str, bug: Bug) -> nbformat.NotebookNode:
    """The solution with ``bug`` planted (its text must occur exactly once in its answer cell)."""
    answers = solution_answers(assignment)
    if bug.cell not in answers:
        raise GraderError(f"bug {bug.name!r}: no answer cell {bug.cell!r} in {assignment}")
    if answers[bug.cell].count(bug.old) != 1:
        raise GraderError(f"bug {bug.name!r}: {bug.old!r} should occur once in {bug.cell}, "
                          f"found {answers[bug.cell].count(bug.old)} times")
    answers[bug.cell] = answers[bug.cell].replace(bug.old, bug.new, 1)
    return submission(assignment, answers)


def standard_submissions(assignment: str) -> dict[str, nbformat.NotebookNode]:
    """student id -> notebook: ``solution``, ``blank`` and ``bug-NN`` for each planted bug NN."""
    notebooks = {"solution": submission(assignment), "blank": release_notebook(assignment)}
    for i, bug in enumerate(load_bugs(load_assignment(assignment))):
        notebooks[f"bug-{i:02d}"] = with_bug(assignment, bug)
    return notebooks


def write(nb, folder: Path, student: str, name: str) -> Path:
    """Hand ``nb`` in as ``folder/<student>/<name>``."""
    path = folder / student / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def add_cell_after(nb, grade_id: str, source: str):
    """A copy of ``nb`` with a code cell of the student's own right after the cell ``grade_id``."""
    nb = copy.deepcopy(nb)
    idx = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    nb.cells.insert(idx + 1, nbformat.v4.new_code_cell(source))
    return nb


#: What the cell of one's own after the last graded cell (:func:`with_own_cells`) was handed in showing.
OWN_OUTPUT = "my experiment: perplexity 123.4 (handed in)"


def every_forbidden_name(assignment: str) -> str:
    """A function of the student's own that uses every name some part of ``assignment`` forbids."""
    names = sorted({n for part in load_reference(load_assignment(assignment)).PARTS.values() for n in part.forbidden})
    uses = [f"    _ = torch{n}" if n.startswith(".") else f"    import {n}" if "." not in n else f"    _ = {n}"
            for n in names]
    return "def my_experiment():\n" + "\n".join(uses) + "\n"


def with_own_cells(assignment: str, nb):
    """``nb`` with cells of the student's own, as the written questions invite: after the first test cell, a
    function that uses every forbidden name (no graded code calls it); after the last cell, one that uses them
    all, then loops forever, handed in with an output. Neither may cost a point or change the status."""
    first_test = next(c.metadata["nbgrader"]["grade_id"] for c in nb.cells
                      if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")
                      and c.cell_type == "code")
    nb = add_cell_after(nb, first_test, every_forbidden_name(assignment))
    nb = copy.deepcopy(nb)
    last = nbformat.v4.new_code_cell(every_forbidden_name(assignment) + "my_experiment()\nwhile True:\n    pass\n")
    last.outputs = [nbformat.v4.new_output("stream", name="stdout", text=OWN_OUTPUT + "\n")]
    nb.cells.append(last)
    return nb
