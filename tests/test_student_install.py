"""A student's install, end to end: the wheel built from the repository, installed into a fresh virtual
environment in a temporary folder with no repository beside it, runs a chapter's notebook (as the site's
launch buttons open it) and a completed assignment top to bottom. The trained models come from a local
mirror (a ``file://`` URL standing in for the repository's raw files); a missing mirror gives the
CourseError that names the file, the URL and the setting.

No package index is reachable here, so the fresh environment finds the course's dependencies in the
test's own environment (a ``.pth`` line, which does not bring in its editable install of the course):
``pip install --no-deps`` puts the wheel's own files in place, which is what is under test.
"""
from __future__ import annotations

import json
import os
import re
import site
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from module_support import load_script

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY, REVISION = "https://github.com/example/course", "0123456789abcdef0123456789abcdef01234567"
CHAPTER, ASSIGNMENT = "building_blocks", "word2vec"
pytestmark = pytest.mark.slow


def _run(cmd: list[str], env: dict | None = None, cwd: Path | None = None, check: bool = True, timeout: int = 1800):
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=timeout)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


@pytest.fixture(scope="module")
def student(tmp_path_factory) -> dict:
    """A fresh environment with the wheel installed; its python, environment variables and working folder."""
    tmp = tmp_path_factory.mktemp("student")
    wheel = load_script("install_size").build_wheel(tmp, {"NLPCOURSE_REPOSITORY": REPOSITORY,
                                                      "NLPCOURSE_REVISION": REVISION})
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    python = venv / "bin" / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (purelib / "course_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    _run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", str(wheel)])
    work = tmp / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NLPCOURSE_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env |= {"NLPCOURSE_CACHE": str(tmp / "cache"), "NLPCOURSE_PROGRESS": "0", "HOME": str(tmp / "home"),
            "NLPCOURSE_CHECKPOINT_URL": (ROOT / "data" / "checkpoints").as_uri() + "/"}
    installed = sum(p.stat().st_size for d in ("nlpcourse", "grader") for p in (purelib / d).rglob("*")
                    if p.is_file() and "__pycache__" not in p.parts)
    return {"python": python, "env": env, "work": work, "wheel": wheel, "installed": installed, "tmp": tmp}


def _py(student: dict, code: str, **env) -> subprocess.CompletedProcess:
    return _run([str(student["python"]), "-c", code], env=student["env"] | env, cwd=student["work"], check=False)


def test_the_installed_package_holds_the_corpora_and_not_the_repository(student):
    done = _py(student, "import json, nlpcourse; from nlpcourse.data import data_dir, load_reviews; "
                        "from nlpcourse.data.checkpoints import origin; "
                        "print(json.dumps([nlpcourse.__file__, str(data_dir()), len(load_reviews()), origin()]))")
    assert done.returncode == 0, done.stderr
    module, data, reviews, where = json.loads(done.stdout)
    assert str(student["tmp"] / "venv") in module and Path(data) == Path(module).parent / "_data"
    assert reviews == 12_808 and where == {"repository": REPOSITORY, "revision": REVISION}
    assert 8e6 < student["wheel"].stat().st_size < 20e6  # the corpora, not the 79 MB of checkpoints


def test_a_missing_mirror_gives_the_course_error(student, tmp_path):
    url = (tmp_path / "no-mirror").as_uri() + "/"
    done = _py(student, "from nlpcourse.data import checkpoint_path; checkpoint_path('bow_mlp.pt')",
               NLPCOURSE_CHECKPOINT_URL=url)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("nlpcourse.errors.DataError: cannot download checkpoint bow_mlp.pt"), last
    assert url + "bow_mlp.pt" in last and "NLPCOURSE_CHECKPOINT_URL" in last and "NLPCOURSE_DATA_DIR" in last


def _execute(student: dict, nb: nbformat.NotebookNode, name: str) -> tuple[nbformat.NotebookNode, float]:
    path = student["work"] / f"{name}.ipynb"
    nbformat.write(nb, path)
    start = time.perf_counter()
    _run([str(student["python"]), "-m", "nbconvert", "--to", "notebook", "--execute", "--inplace",
          "--ExecutePreprocessor.timeout=3600", str(path)], env=student["env"], cwd=student["work"])
    return nbformat.read(path, as_version=4), time.perf_counter() - start


def test_a_chapter_notebook_runs_top_to_bottom(student):
    nb = load_script("launch_notebooks").chapter_notebook(ROOT / "book" / f"{CHAPTER}.md", REPOSITORY, REVISION)
    ran, seconds = _execute(student, nb, CHAPTER)
    code = [c for c in ran.cells if c.cell_type == "code"]
    assert all(c.execution_count for c in code) and not [o for c in code for o in c.outputs
                                                        if o.output_type == "error"]
    cached = Path(student["env"]["NLPCOURSE_CACHE"]) / "checkpoints" / "bow_mlp.pt"
    assert cached.read_bytes() == (ROOT / "data" / "checkpoints" / "bow_mlp.pt").read_bytes()
    page = (ROOT / "book" / "start_here.md").read_text()
    stated = float(re.search(r"a wheel of ([\d.]+) MB", page).group(1))  # what Start here says
    assert abs(stated - student["wheel"].stat().st_size / 1e6) < 0.1 * stated
    print(f"{CHAPTER}: {seconds:.0f} s; wheel {student['wheel'].stat().st_size / 1e6:.1f} MB, "
          f"installed {student['installed'] / 1e6:.1f} MB")


def _completed(name: str) -> nbformat.NotebookNode:
    """The released notebook with every answer cell as the solution writes it: a student who did the work."""
    released = nbformat.read(ROOT / "notebooks" / name / f"{name}.ipynb", as_version=4)
    source = nbformat.read(ROOT / "solutions" / name / f"{name}.ipynb", as_version=4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in source.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for cell in released.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = "\n".join(line for line in answers[grade_id].splitlines()
                                     if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
    return released


def test_a_completed_assignment_runs_top_to_bottom(student):
    released = ROOT / "notebooks" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb = load_script("launch_notebooks").assignment_notebook(released, REPOSITORY, REVISION)
    done = _completed(ASSIGNMENT)
    by_id = {c.metadata.get("nbgrader", {}).get("grade_id"): c.source for c in done.cells}
    for cell in nb.cells:
        cell.source = by_id.get(cell.metadata.get("nbgrader", {}).get("grade_id"), cell.source)
    ran, _ = _execute(student, nb, ASSIGNMENT)
    errors = [o for c in ran.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors, errors[0]
    assert "course:" in "".join(o.get("text", "") for c in ran.cells if c.cell_type == "code" for o in c.outputs)
