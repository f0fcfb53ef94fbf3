"""Where things are: assignments (source, release, reference) and the grading workspace, and the
nbgrader configuration that ties them together."""
from __future__ import annotations

import importlib.util
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from traitlets.config import Config

from nlpcourse.errors import CourseError

REPO = Path(__file__).resolve().parents[1]
SOLUTIONS = REPO / "solutions"  # nbgrader source: solutions + hidden tests + reference.py (private)
RELEASE = REPO / "notebooks"  # nbgrader release: what students get (public)
DEFAULT_COURSE_DIR = REPO / "_grading"  # gradebook, submitted/, autograded/, feedback/ (private)
COURSE_ID = "neural-nlp"
#: Files of an assignment's source folder that never go to students nor into autograded folders.
PRIVATE_FILES = ["reference.py", "bugs.py", "test_*.py", "__pycache__", "*.pyc", ".ipynb_checkpoints"]

_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


class GraderError(CourseError):
    """A problem with the grader's input that stops the command (bad assignment name, bad folder...)."""


def safe_id(value: str, what: str) -> str:
    """Student and assignment ids become folder names and database keys: allow a safe subset only."""
    if not _SAFE_ID.match(value) or value in (".", ".."):
        raise GraderError(f"{what} {value!r} is not a valid id (letters, digits, '_', '-', '.'; at most 64)")
    return value


@dataclass(frozen=True)
class Assignment:
    """One assignment: its nbgrader source notebook, its release, and its reference module."""

    name: str  # folder name under solutions/ and notebooks/
    notebook: str  # the notebook's file name, e.g. "backprop.ipynb"

    @property
    def source(self) -> Path:
        return SOLUTIONS / self.name / self.notebook

    @property
    def release(self) -> Path:
        return RELEASE / self.name / self.notebook

    @property
    def reference_path(self) -> Path:
        return SOLUTIONS / self.name / "reference.py"

    @property
    def bugs_path(self) -> Path:
        return SOLUTIONS / self.name / "bugs.py"

    @property
    def notebook_id(self) -> str:
        return Path(self.notebook).stem


def assignments() -> list[str]:
    return sorted(p.parent.name for p in SOLUTIONS.glob("*/reference.py"))


def load_assignment(name: str) -> Assignment:
    safe_id(name, "assignment")
    folder = SOLUTIONS / name
    if not (folder / "reference.py").is_file():
        known = ", ".join(assignments()) or "none"
        raise GraderError(f"unknown assignment {name!r}: no {folder}/reference.py (known: {known})")
    notebooks = sorted(folder.glob("*.ipynb"))
    if len(notebooks) != 1:
        raise GraderError(f"assignment {name!r}: expected one source notebook in {folder}, found {len(notebooks)}")
    return Assignment(name, notebooks[0].name)


def _import_private(path: Path, module_name: str) -> ModuleType:
    """Import a module of ``solutions/<name>/`` by path (once; it is cached in ``sys.modules``)."""
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[module_name]  # a broken module is not cached as if it had loaded
        raise
    return module


def load_reference(assignment: Assignment) -> ModuleType:
    """Import ``solutions/<name>/reference.py`` (in the grader's process only, never in a kernel)."""
    module = _import_private(assignment.reference_path, f"_nlpcourse_reference_{assignment.name}")
    if getattr(module, "NOTEBOOK", None) != assignment.notebook:
        raise GraderError(f"{assignment.reference_path}: NOTEBOOK should be {assignment.notebook!r}")
    if not isinstance(getattr(module, "PARTS", None), dict) or not module.PARTS:
        raise GraderError(f"{assignment.reference_path}: PARTS should be a non-empty dict of Part")
    return module


def load_bugs(assignment: Assignment) -> list:
    """The planted bugs of ``solutions/<name>/bugs.py`` (its ``BUGS``, a list of :class:`grader.spec.Bug`),
    found the way ``reference.py`` is found; an assignment without the file has none."""
    if not assignment.bugs_path.is_file():
        return []
    module = _import_private(assignment.bugs_path, f"_nlpcourse_bugs_{assignment.name}")
    bugs = getattr(module, "BUGS", None)
    if not isinstance(bugs, list):
        raise GraderError(f"{assignment.bugs_path}: BUGS should be a list of grader.spec.Bug")
    return bugs


def nbgrader_config(course_dir: Path, release_dir: Path | None = None) -> Config:
    """nbgrader configuration: source = solutions/, release = notebooks/, the rest in ``course_dir``."""
    c = Config()
    c.CourseDirectory.root = str(course_dir)
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.source_directory = str(SOLUTIONS)  # absolute: os.path.join(root, abs) == abs
    c.CourseDirectory.release_directory = str(release_dir or RELEASE)
    c.CourseDirectory.submitted_directory = "submitted"
    c.CourseDirectory.autograded_directory = "autograded"
    c.CourseDirectory.feedback_directory = "feedback"
    c.CourseDirectory.db_url = f"sqlite:///{course_dir / 'gradebook.db'}"
    c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", *PRIVATE_FILES]
    c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
    c.Exchange.root = str(course_dir / "exchange")
    return c


def read_json_object(path: Path) -> dict:
    """A JSON object from ``path`` (a student's ``result.json`` or ``handed_in.json``); {} if there is no such
    file; a :class:`GraderError` naming it if it cannot be read, or holds anything but a JSON object."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise GraderError(f"{path} is not valid JSON ({exc}): grade the student again") from exc
    if not isinstance(data, dict):
        raise GraderError(f"{path} holds a {type(data).__name__}, not a JSON object: grade the student again")
    return data
