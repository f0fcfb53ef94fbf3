"""Shared helpers of the grading tests (test_grading_assignments.py, test_grading_hostile.py): run the
``grader`` command line, read what it wrote, and find solution or hidden-test text where none may be.

No tests here. Everything is read from the assignment's own files (``solutions/<name>/``), so that a
new assignment needs no test code of its own.
"""
from __future__ import annotations

import html.parser
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest

from grader.course import SOLUTIONS, assignments, load_assignment
from grader.notebook import nbgrader_meta
from grader.publish import trivial
from grader.sandbox import sandbox_available

ROOT = Path(__file__).resolve().parents[1]
COURSE_ID = "neural-nlp"
ASSIGNMENTS = assignments()  # every folder of solutions/ with a reference.py


# ------------------------------------------------------------------ the assignment's points


@dataclass(frozen=True)
class Points:
    """The points of an assignment's source notebook."""

    auto: dict[str, float]  # grade_id of each autograded test cell -> its points
    manual: dict[str, float]  # grade_id of each hand-graded answer -> its points

    @property
    def max_auto(self) -> float:
        return sum(self.auto.values())


def points(assignment: str) -> Points:
    nb = nbformat.read(str(load_assignment(assignment).source), as_version=4)
    auto, manual = {}, {}
    for cell in nb.cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade") and not meta.get("solution") and cell.cell_type == "code":
            auto[meta["grade_id"]] = float(meta["points"])
        elif meta.get("grade") and meta.get("solution"):
            manual[meta["grade_id"]] = float(meta["points"])
    return Points(auto, manual)


def part_cases(assignment: str, seed: int) -> dict:
    """part -> the hidden-test cases that its generator draws on the CPU from a generator seeded with ``seed``."""
    import torch

    from grader.course import load_reference

    parts = load_reference(load_assignment(assignment)).PARTS
    return {part: spec.cases(torch.Generator().manual_seed(seed), "cpu") for part, spec in parts.items()}


# ------------------------------------------------------------------ running the grader


def grader_env() -> dict[str, str]:
    # nbgrader runs alembic from PATH: that of this Python (the CLI does the same for itself).
    return dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))


def grader_cli(*args: str, course_dir: Path, timeout: float = 900,
               check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "grader.cli", "--course-dir", str(course_dir), *args],
                          capture_output=True, text=True, timeout=timeout, env=grader_env(), cwd=course_dir.parent)
    if check:
        assert proc.returncode == 0, \
            f"grader {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return proc


def need_sandbox() -> None:
    if not sandbox_available():
        if os.environ.get("CI"):
            pytest.fail("bubblewrap is not available: the isolation tests cannot run")
        pytest.skip("bubblewrap is not available here: no isolation to test")


# ------------------------------------------------------------------ reading what the grader wrote


def result(course: Path, assignment: str, student: str) -> dict:
    return json.loads((course / "work" / assignment / student / "result.json").read_text())


def cell_scores(course: Path, assignment: str, student: str) -> dict[str, float]:
    return {cell: s["score"] for cell, s in result(course, assignment, student)["cells"].items()}


def executed(course: Path, assignment: str, student: str):
    """The notebook as the grader ran it, each test cell's output replaced by its verdict."""
    return nbformat.read(str(course / "work" / assignment / student / "executed.ipynb"), as_version=4)


def part_failures(r: dict) -> set[str]:
    """Names of the parts that failed a case in a result: the cells' messages hold one line per part,
    ``<part>: k/n cases passed; first failure: ...`` (or why nothing was recorded)."""
    failed = set()
    for cell in r["cells"].values():
        for line in cell["message"].splitlines():
            name, _, verdict = line.partition(": ")
            if verdict and not _all_passed(verdict):
                failed.add(name)
    return failed


def _all_passed(verdict: str) -> bool:
    head = verdict.split(" cases passed")[0]
    done, _, total = head.partition("/")
    return " cases passed" in verdict and "failure" not in verdict and done == total


# ------------------------------------------------------------------ leaks


def _regions(text: str, begin: str, end: str) -> list[str]:
    lines, inside = [], False
    for line in text.splitlines():
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside:
            lines.append(line.strip())
    return lines


def public_lines() -> set[str]:
    """Every line, stripped, that the course publishes anyway: the released notebooks, the book's pages
    and the library. A solution line that is also one of these (``g = torch.Generator().manual_seed(0)``)
    gives nothing away."""
    lines: set[str] = set()
    for release in sorted((ROOT / "notebooks").glob("*/*.ipynb")):
        cells = nbformat.read(str(release), as_version=4).cells
        lines |= {ln.strip() for c in cells for ln in c.source.splitlines()}
    for path in [*sorted((ROOT / "book").glob("*.md")), *sorted((ROOT / "nlpcourse").rglob("*.py"))]:
        lines |= {ln.strip() for ln in path.read_text().splitlines()}
    return lines


def _telling(line: str) -> bool:
    """Whether a stripped source line is long enough, and worded enough, to give an answer away: the
    publisher's rule (:func:`grader.publish.trivial`) on lines of at least 12 characters."""
    return len(line) >= 12 and not trivial(line)


def secret_lines() -> tuple[set[str], set[str]]:
    """(hidden-test lines, solution lines) of every source notebook: stripped, :func:`_telling` (a table
    rule ``|---|---|---|---|`` gives nothing away, and is part of every wider one), and not published
    anyway (:func:`public_lines`)."""
    hidden, solution = set(), set()
    public = public_lines()
    for src in sorted(SOLUTIONS.glob("*/*.ipynb")):
        nb = nbformat.read(str(src), as_version=4)
        for cell in nb.cells:
            hidden |= {ln for ln in _regions(cell.source, "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")
                       if _telling(ln) and ln not in public}
            solution |= {ln for ln in _regions(cell.source, "### BEGIN SOLUTION", "### END SOLUTION")
                         if _telling(ln) and ln not in public}
    assert hidden and solution
    return hidden, solution


MARKERS = ("BEGIN HIDDEN TESTS", "BEGIN SOLUTION", "END HIDDEN TESTS", "END SOLUTION")


class _Text(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_data(self, data):
        self.parts.append(data)


def _readable_forms(path: Path) -> list[str]:
    """The file's text, plus what a reader sees of it: an HTML page without tags, a notebook's sources,
    JSON / JavaScript strings unescaped."""
    try:
        raw = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return []
    forms = [raw]
    if path.suffix in (".html", ".htm", ".xml", ".svg"):
        p = _Text()
        p.feed(raw)
        forms.append("".join(p.parts))
    if path.suffix == ".ipynb":
        try:
            forms.append("\n".join(c.source for c in nbformat.reads(raw, as_version=4).cells))
        except Exception:  # noqa: BLE001 - not a notebook after all: the raw text is checked
            pass
    if "\\" in raw:
        forms.append(raw.replace('\\"', '"').replace("\\n", "\n").replace("\\'", "'").replace("\\\\", "\\"))
    return forms


def leaks(path: Path, secret: set[str]) -> list[str]:
    """The nbgrader markers and the ``secret`` lines that ``path`` shows a reader."""
    found = []
    for text in _readable_forms(path):
        found += [m for m in MARKERS if m in text]
        found += [ln for ln in secret if ln in text]
    return sorted(set(found))


def feedback_files(course: Path, assignment: str) -> dict[str, Path]:
    """student -> their feedback page (``feedback/<student>/<assignment>/<notebook>.html``)."""
    return {p.parts[-3]: p for p in (course / "feedback").glob(f"*/{assignment}/*.html")}
