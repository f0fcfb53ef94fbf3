"""``grader publish DEST``: the public copy of the course (grader/publish.py). It is built once from this
repository's HEAD; then checked for what it holds (HEAD's public files, one commit, nothing of solutions/ in
its files or its object store), for lines of solutions/ (with a copy where some are planted, which the check
must find), for what the book build and the student notebooks need, and by running a released notebook's
set-up cell from it. A small repository made in the test checks the refusals and the reproducibility.

Not run here, to keep the suite short: ``make book`` in the copy (what it reads is checked instead: the
pages of _toc.yml, the files that _config.yml, the Makefile and the chapters name, the data behind the
registry) and ``grader release --check``, which needs the sources in solutions/ (the released notebooks are
checked the way the release checks them: nbformat, and the release's own leak check).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import nbformat
import pytest
import yaml
from grading_support import _regions

from grader import publish as pub
from grader.cli import main
from grader.course import SOLUTIONS, GraderError, assignments
from grader.release import check_no_leak

if not SOLUTIONS.is_dir():  # the public copy (`grader publish`) has no solutions/
    pytest.skip("needs solutions/ (private, not in the public copy)", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[1]
IDENTITY = {"GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_AUTHOR_DATE": "1700000000 +0000",
            "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.org",
            "GIT_COMMITTER_DATE": "1700000000 +0000"}


def git(repo: Path, *args: str, stdin: str | None = None, check: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | IDENTITY
    return subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, text=True,
                          check=check, env=env).stdout


@pytest.fixture(scope="module")
def public(tmp_path_factory) -> pub.Published:
    return pub.publish(tmp_path_factory.mktemp("publish") / "public")


@pytest.fixture(scope="module")
def secrets() -> dict[str, str]:
    return pub.secret_lines()


# ------------------------------------------------------------------ what the copy holds


def test_the_copy_is_heads_public_files_in_one_commit_and_nothing_of_solutions(public):
    copy = public.dest
    head = git(ROOT, "ls-tree", "-r", "--full-tree", "HEAD").splitlines()
    tops = {line.split("\t", 1)[1].split("/")[0] for line in head}
    assert tops <= pub.PUBLIC | pub.PRIVATE and tops & pub.PRIVATE == {"solutions"}
    expected = [line for line in head if line.split("\t", 1)[1].split("/")[0] not in pub.PRIVATE]
    assert git(copy, "ls-tree", "-r", "--full-tree", "HEAD").splitlines() == expected  # same blobs and modes
    on_disk = sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file() and ".git" not in p.parts)
    assert on_disk == sorted(line.split("\t", 1)[1] for line in expected)
    assert public.private == sorted(line.split("\t", 1)[1] for line in head if line.split("\t", 1)[1]
                                    .startswith("solutions/"))
    assert not [p for p in on_disk if p.startswith(("solutions/", "_grading/"))
                or Path(p).name in ("reference.py", "bugs.py", "gradebook.db", ".grading_secret")]
    assert git(copy, "status", "--porcelain") == ""  # a clean checkout, ready to push
    assert git(copy, "rev-list", "--count", "--all").strip() == "1"
    assert git(copy, "rev-parse", "HEAD").strip() == public.commit
    assert git(copy, "symbolic-ref", "HEAD").strip() == "refs/heads/main"
    objects = git(copy, "rev-list", "--objects", "--all").splitlines()
    assert not [line for line in objects if {"solutions", "_grading"} & set(line.partition(" ")[2].split("/"))]
    stored = set(git(copy, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split())
    assert stored == {line.split()[0] for line in objects}  # no object but those of the one commit
    source = git(ROOT, "rev-parse", "HEAD").strip()
    assert public.source == source and source in git(copy, "log", "-1", "--format=%B")
    assert git(copy, "log", "-1", "--format=%an %ae %ad") == git(ROOT, "log", "-1", "--format=%an %ae %ad", source)
    assert copy.stat().st_mode & 0o777 == 0o755


def test_no_line_of_a_solution_hidden_test_or_reference_is_in_the_copy(public, secrets):
    leaks = pub.find_leaks(public.dest, secrets)
    assert pub.unaccepted(leaks) == {}
    for path, digests in pub.ACCEPTED.items():  # each exception still needed, or it goes
        assert digests <= {pub.digest(line) for line in leaks.get(path, ())}, f"{path}: ACCEPTED is out of date"


def test_the_secret_lines_are_every_assignments_solutions_hidden_tests_and_references(secrets):
    """Read again with nbformat from HEAD: every non-trivial line of a solution region, a hidden test or a
    written answer's model text is a secret line, unless the course publishes it by design."""
    names = assignments()
    assert len(names) >= 7
    for name in names:
        origins = {origin.rsplit("/", 1)[1] for origin in secrets.values() if origin.startswith(f"solutions/{name}/")}
        assert origins == {f"{name}.ipynb", "reference.py"}, name
    assert sum(line.startswith("record(") for line in secrets) >= 30  # the hidden tests
    by_design = re.compile("|".join(f"(?:{p})" for p in pub.PUBLIC_BY_DESIGN))
    corpus = []
    for path in git(ROOT, "ls-tree", "-r", "--name-only", "HEAD").splitlines():
        if by_design.fullmatch(path):
            text = git(ROOT, "show", f"HEAD:{path}")
            corpus.append(text)
            if path.endswith(".ipynb"):
                corpus += [c.source for c in nbformat.reads(text, as_version=4).cells]
    public_text = "\n".join(corpus)
    public_lines = {line.strip() for line in public_text.splitlines()}
    missed = []
    for name in names:
        nb = nbformat.reads(git(ROOT, "show", f"HEAD:solutions/{name}/{name}.ipynb"), as_version=4)
        for cell in nb.cells:
            lines = (_regions(cell.source, "### BEGIN SOLUTION", "### END SOLUTION")
                     + _regions(cell.source, "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"))
            if cell.metadata.get("nbgrader", {}).get("solution") and "BEGIN SOLUTION" not in cell.source:
                lines += [line.strip() for line in cell.source.splitlines()]
            for line in lines:
                published = line in public_lines if len(line) < pub.SUBSTRING_CHARS else line in public_text
                if line and not pub.trivial(line) and not published and line not in secrets:
                    missed.append((name, line))
    assert not missed


def test_a_line_planted_in_a_copy_is_found_in_its_files_and_its_history(public, secrets, tmp_path):
    """The negative control: a solution line in a released notebook (JSON-escaped, committed), a reference line
    in a commit that was then undone (unreachable), a hidden test in a Python string of a blob that no commit
    holds. The leak check finds all three."""
    def pick(origin: str, start: str = "") -> str:
        return min(line for line, o in secrets.items()
                   if o == origin and line.startswith(start) and len(line) >= pub.SUBSTRING_CHARS)

    solution = pick("solutions/backprop/backprop.ipynb", "dW = ")
    reference = pick("solutions/cnn/reference.py")
    hidden = pick("solutions/word2vec/word2vec.ipynb", "record(")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(public.dest), str(clone))
    release = clone / "notebooks" / "backprop" / "backprop.ipynb"
    nb = nbformat.read(str(release), as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(f"def helper(dY, X):\n    {solution}\n    return dW"))
    nbformat.write(nb, str(release))
    git(clone, "commit", "-qam", "a helper")
    (clone / "tests" / "README.md").write_text(f"Notes\n\n    {reference}\n")
    git(clone, "commit", "-qam", "notes")
    git(clone, "reset", "-q", "--hard", "HEAD~1")
    dangling = git(clone, "hash-object", "-w", "--stdin", stdin=f'CELL = "x = 1\\n{hidden}\\n"\n').strip()

    leaks = pub.find_leaks(clone, secrets)
    assert solution in leaks["notebooks/backprop/backprop.ipynb"]
    assert any(reference in lines for where, lines in leaks.items() if where.startswith("blob "))
    assert hidden in leaks[f"blob {dangling}"]
    assert pub.find_leaks(clone, {f"no file holds {uuid.uuid4().hex}"}) == {}


# ------------------------------------------------------------------ the book and the notebooks work from it


def _toc_files(node) -> list[str]:
    if isinstance(node, dict):
        return ([node[k] for k in ("root", "file") if k in node]
                + [f for v in node.values() if isinstance(v, (list, dict)) for f in _toc_files(v)])
    if isinstance(node, list):
        return [f for item in node for f in _toc_files(item)]
    return []


#: A path that a chapter's code builds from the repository's root: ``ROOT / "data" / "checkpoints" / "cnn.pt"``,
#: ``CHECKPOINTS / f"seq2seq_{name}.pt"``.
PATH_EXPRESSION = re.compile(r'\b(ROOT|REPO|CHECKPOINTS)((?:\s*/\s*f?"[^"\n]*")+)')
#: A file a chapter asks the library for: ``checkpoint_path(f"seq2seq_{name}.pt")``, ``benchmark_results("cnn")``.
LIBRARY_FILE = re.compile(r'\b(checkpoint_path|benchmark_results)\(f?"([^"\n]*)"\)')
LIBRARY_FOLDER = {"checkpoint_path": ("data/checkpoints", ""), "benchmark_results": ("benchmarks/results", ".json")}


def test_what_the_book_build_reads_is_in_the_copy(public):
    copy = public.dest
    toc = yaml.safe_load((copy / "_toc.yml").read_text())
    pages = [copy / f"{page}.md" for page in _toc_files(toc)]
    assert len(pages) >= 12 and all(p.is_file() for p in pages), [str(p) for p in pages if not p.is_file()]
    config = yaml.safe_load((copy / "_config.yml").read_text())
    assert all((copy / bib).is_file() for bib in config["bibtex_bibfiles"])
    sphinx = config["sphinx"]
    assert all((copy / folder / f"{name}.py").is_file() for name, folder in sphinx["local_extensions"].items())
    static = sphinx["config"]["html_static_path"]
    makefile = (copy / "Makefile").read_text()
    named = set(re.findall(r"(?<![\w./$-])((?:scripts|tests|book)/[\w./-]*\w|package(?:-lock)?\.json)", makefile))
    assert {"scripts/vendor_js.py", "scripts/widgets_setup.js", "scripts/execute_chapters.py",
            "package-lock.json"} <= named  # what makes book/_vendor and runs the chapters
    # What the build makes (book/_vendor/, from npm and scripts/vendor_js.py) is ignored by git; the rest is there.
    needed = sorted(named | set(static))
    queries = "\n".join(f"{name}\n{name}/" for name in needed)  # book/_vendor/ is a folder's pattern
    ignored = {name.rstrip("/") for name in git(copy, "check-ignore", "--stdin", stdin=queries, check=False).split()}
    assert not [name for name in needed if not (copy / name).exists() and name not in ignored]
    for css in sphinx["config"]["html_css_files"]:
        assert any((copy / folder / css).is_file() for folder in static), css

    paths = 0
    for page in pages:
        text = page.read_text()
        for target in re.findall(r"```\{(?:literalinclude|include|image|figure)\}\s+(\S+)", text):
            assert (page.parent / target).is_file(), (page.name, target)
            paths += 1
        for base, parts in PATH_EXPRESSION.findall(text):
            folder = copy / "data" / "checkpoints" if base == "CHECKPOINTS" else copy
            pattern = "/".join(re.sub(r"\{[^}]*\}", "*", p) for p in re.findall(r'"([^"]*)"', parts))
            assert list(folder.glob(pattern)), (page.name, f"{base} / {pattern}")
            paths += 1
        for function, name in LIBRARY_FILE.findall(text):
            folder, suffix = LIBRARY_FOLDER[function]
            pattern = re.sub(r"\{[^}]*\}", "*", name) + suffix
            assert list((copy / folder).glob(pattern)), (page.name, f"{function}({name!r})")
            paths += 1
        code = "\n".join(re.findall(r"```\{code-cell\}.*?\n(.*?)```", text, flags=re.S))
        assert "solutions" not in code and "_grading" not in code, page.name
    assert paths >= 25  # the chapters' checkpoints, benchmark tables and literal includes

    registry = json.loads((copy / "data" / "registry.json").read_text())
    for name, entry in registry.pop("checkpoints").items():  # the trained models a student's install fetches
        data = copy / "data" / "checkpoints" / name
        assert hashlib.sha256(data.read_bytes()).hexdigest() == entry["sha256"], name
    for name, entry in registry.items():
        data = copy / "data" / entry["file"]
        assert hashlib.sha256(data.read_bytes()).hexdigest() == entry["sha256"], name


def test_the_released_notebooks_are_in_the_copy_whole_and_without_leaks(public):
    """``grader release --check`` regenerates each release from solutions/, which the copy has not: here each
    released notebook is read and validated with nbformat and passes the release's own leak check."""
    folders = sorted(p for p in (public.dest / "notebooks").iterdir() if p.is_dir())
    assert [f.name for f in folders] == assignments()
    for folder in folders:
        (notebook,) = folder.glob("*.ipynb")
        nb = nbformat.read(str(notebook), as_version=4)
        nbformat.validate(nb)
        check_no_leak(folder)
        answers = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution") and c.cell_type == "code"]
        assert answers and all("raise NotImplementedError()" in c.source for c in answers), folder.name


def test_a_released_notebooks_set_up_runs_from_the_copy_with_its_own_library(public):
    """The set-up cell and the locked gradient-check functions of backprop's released notebook, run in the copy's
    notebooks/backprop/ with PYTHONPATH at the copy: its own nlpcourse (and grader, which sees no assignment)."""
    copy = public.dest
    program = """
import json
nb = json.load(open("backprop.ipynb"))
cells = {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"])
         for c in nb["cells"] if "nbgrader" in c["metadata"]}
ns = {}
exec(cells["setup"], ns)
exec(cells["gradcheck-functions"], ns)
import nlpcourse, grader.course
from nlpcourse.data import load_reviews
from nlpcourse.data.registry import data_dir
print(json.dumps({"nlpcourse": nlpcourse.__file__, "grader": grader.course.__file__, "data": str(data_dir()),
                  "assignments": grader.course.assignments(), "reviews": len(load_reviews()),
                  "cubic": float(ns["_cubic"](ns["torch"].tensor([2.0])))}))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("NLPCOURSE_DATA_DIR", "PYTHONPATH")}
    proc = subprocess.run([sys.executable, "-c", program], cwd=copy / "notebooks" / "backprop", capture_output=True,
                          text=True, timeout=300, env=env | {"PYTHONPATH": str(copy)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.splitlines()[-1])
    assert Path(got["nlpcourse"]).is_relative_to(copy) and Path(got["grader"]).is_relative_to(copy)
    assert Path(got["data"]) == copy / "data"
    assert got["assignments"] == [] and got["reviews"] > 10_000 and got["cubic"] == 1.0


# ------------------------------------------------------------------ refusals, on a small repository


@pytest.fixture
def small(tmp_path) -> Path:
    """A course of a few files: a source notebook with a solution and a hidden test, its reference, its release."""
    repo = tmp_path / "course"
    cell = nbformat.v4.new_code_cell
    source = nbformat.v4.new_notebook(cells=[
        cell("def double_flip(x):\n    ### BEGIN SOLUTION\n    return torch.flip(x, dims=[0]) * 2\n"
             "    ### END SOLUTION",
             metadata={"nbgrader": {"solution": True, "grade_id": "a"}}),
        cell('### BEGIN HIDDEN TESTS\nrecord("double_flip", double_flip)\n### END HIDDEN TESTS',
             metadata={"nbgrader": {"grade": True, "grade_id": "t", "points": 1}})])
    release = nbformat.v4.new_notebook(cells=[cell("def double_flip(x):\n    raise NotImplementedError()")])
    files = {"README.md": "A course.\n", "book/intro.md": "# Intro\n", "tests/test_a.py": "def test_a():\n    pass\n",
             "solutions/a/a.ipynb": nbformat.writes(source), "notebooks/a/a.ipynb": nbformat.writes(release),
             "solutions/a/reference.py": "def reference(x):\n    return 2 * torch.flip(x, dims=[0])\n"}
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo.parent, "init", "-q", "--initial-branch=main", str(repo))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "course")
    return repo


def test_the_same_commit_gives_the_same_public_commit_and_uncommitted_changes_stay_out(small, tmp_path):
    (tmp_path / "empty").mkdir()
    (small / "README.md").write_text("A course, edited.\n")
    first = pub.publish(tmp_path / "first", repo=small)
    second = pub.publish(tmp_path / "empty", repo=small)  # an empty folder will do
    assert first.commit == second.commit and first.files == 4 and first.uncommitted == ["README.md"]
    assert (tmp_path / "first" / "README.md").read_text() == "A course.\n"
    assert not (tmp_path / "first" / "solutions").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["course", "empty", "first"]


@pytest.mark.parametrize("change, message", [
    ({"tests/test_a.py": "def expected(x):\n    return torch.flip(x, dims=[0]) * 2\n"},
     "would publish lines of solutions/"),
    ({"tests/cases.py": 'CASES = "record(\\"double_flip\\", double_flip)"\n'}, "would publish lines of solutions/"),
    ({"docs/notes.md": "Notes.\n"}, "neither public nor private: docs"),
    ({"book/solutions/a.md": "A page.\n"}, None),  # a folder named solutions/ is private wherever it is
])
def test_a_leak_or_an_unlisted_entry_stops_it_with_nothing_written(small, tmp_path, change, message):
    for name, text in change.items():
        (small / name).parent.mkdir(parents=True, exist_ok=True)
        (small / name).write_text(text)
    git(small, "add", "-A")
    git(small, "commit", "-qm", "change")
    if message is None:
        done = pub.publish(tmp_path / "public", repo=small)
        assert "book/solutions/a.md" in done.private and not (tmp_path / "public" / "book" / "solutions").exists()
        return
    with pytest.raises(GraderError, match=re.escape(message)):
        pub.publish(tmp_path / "public", repo=small)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["course"]  # no DEST, no staging folder


def test_a_dest_that_is_not_empty_or_inside_the_course_is_refused(small, tmp_path, capsys):
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(GraderError, match="exists and is not empty"):
        pub.publish(tmp_path / "full", repo=small)
    with pytest.raises(GraderError, match="exists and is not empty"):
        pub.publish(tmp_path / "full" / "x", repo=small)
    with pytest.raises(GraderError, match="inside the course repository"):
        pub.publish(small / "public", repo=small)
    assert main(["publish", str(tmp_path / "full")]) == 2
    assert "exists and is not empty" in capsys.readouterr().err


# ------------------------------------------------------------------ answers under other names

def test_no_graded_answer_is_in_the_copy_under_any_name(public):
    """Every function of every answer cell, its names replaced (grader.publish.fingerprints), is looked for in
    every Python file, notebook and page of the copy: none is there (grader/gradcheck.py once held the gradient
    check's two answers, in the grader's own code, which the line check reads as public by design)."""
    answers = pub.answer_fingerprints()
    assert {where.split(":")[0] for where in answers.values()} == \
        {f"solutions/{a}/{a}.ipynb" for a in assignments()}, "some assignment has no answer to look for"
    assert pub.find_answers(public.dest, answers) == {}


ANSWER = ("def relative_error(a, b):\n    ### BEGIN SOLUTION\n    a, b = a.double(), b.double()\n"
          "    size = torch.linalg.vector_norm(a) + torch.linalg.vector_norm(b)\n"
          "    return 0.0 if size == 0 else float(torch.linalg.vector_norm(a - b) / size)\n    ### END SOLUTION")
RENAMED = ('def distance(x, y):\n    """How far apart two tensors are."""\n    x, y = x.double(), y.double()\n'
           "    total = torch.linalg.vector_norm(x) + torch.linalg.vector_norm(y)  # both norms\n"
           "    return 0.0 if total == 0 else float(torch.linalg.vector_norm(x - y) / total)\n")


def test_an_answer_renamed_into_the_grader_stops_the_copy(small, tmp_path):
    """A solution copied into a public file under other names (function, variables, docstring, comments) is
    found by its tree, where the line check, which reads grader/ as public by design, finds nothing."""
    source = nbformat.read(str(small / "solutions/a/a.ipynb"), as_version=4)
    source.cells.append(nbformat.v4.new_code_cell(ANSWER, metadata={"nbgrader": {"solution": True, "grade_id": "b"}}))
    nbformat.write(source, str(small / "solutions/a/a.ipynb"))
    git(small, "add", "-A")
    git(small, "commit", "-qm", "a second answer")
    assert pub.publish(tmp_path / "clean", repo=small).files == 4
    (small / "grader").mkdir()
    (small / "grader" / "helpers.py").write_text("import torch\n\n\n" + RENAMED)
    git(small, "add", "-A")
    git(small, "commit", "-qm", "a helper")
    with pytest.raises(GraderError, match=r"answer of a graded part under other names: grader/helpers\.py: distance "
                                          r"\(= solutions/a/a\.ipynb: relative_error\)"):
        pub.publish(tmp_path / "public", repo=small)
    assert not (tmp_path / "public").exists()
