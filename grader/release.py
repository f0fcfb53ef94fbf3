"""``grader release ASSIGNMENT``: generate the student version in notebooks/ from solutions/ with nbgrader."""
from __future__ import annotations

import json
import logging
import shutil
import tempfile
from pathlib import Path

from nbgrader.converters import GenerateAssignment
from nbgrader.coursedir import CourseDirectory

from .course import DEFAULT_COURSE_DIR, PRIVATE_FILES, RELEASE, GraderError, load_assignment, nbgrader_config

#: Text that must never reach a student (nbgrader markers of solutions and hidden tests).
LEAK_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "record(")


def generate(assignment_name: str, release_dir: Path, course_dir: Path) -> Path:
    """Run nbgrader's generate_assignment for one assignment into ``release_dir/<assignment>``."""
    a = load_assignment(assignment_name)
    course_dir.mkdir(parents=True, exist_ok=True)
    c = nbgrader_config(course_dir, release_dir)
    c.CourseDirectory.assignment_id = a.name
    c.GenerateAssignment.force = True
    c.GenerateAssignment.create_assignment = True
    app = GenerateAssignment(coursedir=CourseDirectory(config=c), config=c)
    app.log.setLevel(logging.WARNING)
    app.start()
    out = release_dir / a.name
    nb = out / a.notebook
    if not nb.is_file():
        raise GraderError(f"nbgrader did not write {nb}")
    _normalise(nb)
    check_no_leak(out)
    return out


def _normalise(path: Path) -> None:
    """Write the notebook the same way every time, so that a release is byte-for-byte reproducible."""
    nb = json.loads(path.read_text())
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def check_no_leak(folder: Path) -> None:
    """Refuse a release that carries a solution, a hidden test or a private file."""
    for path in folder.rglob("*"):
        if any(path.match(pattern) for pattern in PRIVATE_FILES):
            raise GraderError(f"release leak: {path} is a private file of the assignment")
        if path.is_file() and path.suffix in (".ipynb", ".py", ".md", ".txt"):
            text = path.read_text(errors="replace")
            for marker in LEAK_MARKERS:
                if marker in text:
                    raise GraderError(f"release leak: {path} contains {marker!r}")


def release(assignment_name: str, course_dir: Path = DEFAULT_COURSE_DIR) -> Path:
    """Regenerate ``notebooks/<assignment>/``: into a temporary folder first, then swapped in whole."""
    with tempfile.TemporaryDirectory() as tmp:
        built = generate(assignment_name, Path(tmp), course_dir)
        target = RELEASE / assignment_name
        staging = RELEASE / f".{assignment_name}.new"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(built, staging)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    return target


def is_up_to_date(assignment_name: str, course_dir: Path) -> tuple[bool, str]:
    """Compare notebooks/<assignment> with a fresh release built in a temporary folder."""
    with tempfile.TemporaryDirectory() as tmp:
        built = generate(assignment_name, Path(tmp), course_dir)
        current = RELEASE / assignment_name
        if not current.exists():
            return False, f"{current} does not exist: run `grader release {assignment_name}`"
        new_files = {p.relative_to(built) for p in built.rglob("*") if p.is_file()}
        old_files = {p.relative_to(current) for p in current.rglob("*") if p.is_file()}
        if new_files != old_files:
            return False, f"files differ: {sorted(map(str, new_files ^ old_files))}"
        for rel in sorted(new_files):
            if (built / rel).read_bytes() != (current / rel).read_bytes():
                return False, f"{current / rel} is out of date with solutions/: run `grader release {assignment_name}`"
    return True, "up to date"
