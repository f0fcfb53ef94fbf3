"""Build realistic submissions of an assignment for the grading tests: the released notebook with
its answer cells filled in from the solution (optionally with a planted bug or a hostile cell)."""
from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
_SOLUTION_LINE = re.compile(r"^\s*### (BEGIN|END) SOLUTION\s*$")


def solution_answers(assignment: str) -> dict[str, str]:
    """grade_id -> the source of each answer cell as a student who solved it would write it."""
    src = next((ROOT / "solutions" / assignment).glob("*.ipynb"))
    nb = nbformat.read(str(src), as_version=4)
    out = {}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("solution"):
            out[meta["grade_id"]] = "\n".join(l for l in cell.source.splitlines() if not _SOLUTION_LINE.match(l))
    return out


def release_notebook(assignment: str) -> nbformat.NotebookNode:
    return nbformat.read(str(next((ROOT / "notebooks" / assignment).glob("*.ipynb"))), as_version=4)


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


def with_bug(assignment: str, cell: str, old: str, new: str) -> nbformat.NotebookNode:
    answers = solution_answers(assignment)
    assert old in answers[cell], f"bug text {old!r} not found in {cell}"
    answers[cell] = answers[cell].replace(old, new, 1)
    return submission(assignment, answers)


def write(nb, folder: Path, student: str, name: str) -> Path:
    path = folder / student / name
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def add_cell_after(nb, grade_id: str, source: str):
    nb = copy.deepcopy(nb)
    idx = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
    nb.cells.insert(idx + 1, nbformat.v4.new_code_cell(source))
    return nb
