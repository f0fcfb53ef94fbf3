"""Unit tests of the grader's defences that need no kernel: forbidden names behind IPython syntax,
recordings that are links, and answer cells missing from both the submission and the release."""
from __future__ import annotations

import copy
import os
from pathlib import Path

import nbformat
import pytest
import torch

from grader.notebook import (
    CODE_STUB,
    HIDDEN_BEGIN,
    StudentCode,
    cell_timeout,
    forbidden_in_reach,
    forbidden_uses,
    merge,
    not_run,
    recorded_names,
    skip_reason,
    tampering,
)
from grader.spec import tensor_problem
from grader.worker import _load_recording
from grader.worker import main as worker_main

AUTOGRAD = ("torch.autograd", ".backward")


@pytest.mark.parametrize("cells", [
    ["%time y = 1\nimport torch\ng = torch.autograd.grad(y, x)"],  # a magic no longer hides the cell
    ["def broken(:\n    pass", "g = torch.autograd.grad(y, x)"],  # nor does another cell's syntax error
    ["%time g = torch.autograd.grad(y, x)"],  # code inside a line magic
    ["%%timeit\nloss.backward()"],  # code inside a cell magic
    ["!echo hi\nexec('import torch.autograd as ag')"],  # code in an exec string, after a shell escape
    ["eval(\"torch.autograd.grad(y, x)\")"],
])
def test_forbidden_names_are_found_through_ipython_syntax(cells):
    assert forbidden_uses(cells, AUTOGRAD), cells


def test_forbidden_names_allow_the_students_own_code():
    assert forbidden_uses(["%time z = x @ w\ndef backward(dz):\n    return dz"], AUTOGRAD) == []


def _recording(folder: Path, values) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(values, folder / "part.pt")
    return folder / "part.pt"


def test_tensor_problem_names_the_tensor_and_what_is_wrong():
    assert tensor_problem("W", torch.zeros(2, 3), (2, 3)) == ""
    assert "W: expected a float tensor of shape (2, 3), got (3, 2)" == tensor_problem("W", torch.zeros(3, 2), (2, 3))
    assert "got list" in tensor_problem("W", [[0.0] * 3] * 2, (2, 3))
    assert "got (2, 3)" in tensor_problem("W", torch.zeros(2, 3, dtype=torch.long), (2, 3)), "ids are not weights"
    bad = torch.zeros(2, 3)
    bad[1, 2] = float("inf")
    assert tensor_problem("W", bad, (2, 3), "check the rate") == "W: some values are nan or inf (check the rate)"


def test_recording_is_read_when_it_is_a_plain_file(tmp_path):
    path = _recording(tmp_path / "outputs", [{"ok": True, "value": torch.ones(2)}])
    data, why = _load_recording(path)
    assert why == "" and data[0]["ok"]


def test_recording_that_is_a_link_is_not_read(tmp_path):
    """A kernel could link its recording to another student's: the grader, outside the sandbox, would read it."""
    other = _recording(tmp_path / "other" / "outputs", [{"ok": True, "value": torch.ones(2)}])
    mine = tmp_path / "mine" / "outputs"
    mine.mkdir(parents=True)
    os.symlink(other, mine / "part.pt")
    data, why = _load_recording(mine / "part.pt")
    assert data is None and "not a regular file" in why


def test_recordings_in_a_replaced_outputs_folder_are_not_read(tmp_path):
    other = _recording(tmp_path / "other" / "outputs", [{"ok": True, "value": torch.ones(2)}])
    kernel = tmp_path / "mine"
    kernel.mkdir()
    os.symlink(other.parent, kernel / "outputs")
    data, why = _load_recording(kernel / "outputs" / "part.pt")
    assert data is None and "replaced" in why


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_recording_that_is_a_pipe_is_not_read_and_does_not_block(tmp_path):
    (tmp_path / "outputs").mkdir()
    os.mkfifo(tmp_path / "outputs" / "part.pt")
    data, why = _load_recording(tmp_path / "outputs" / "part.pt")
    assert data is None and "regular file" in why


def _nb(*cells):
    nb = nbformat.v4.new_notebook()
    for gid, solution, src in cells:
        cell = nbformat.v4.new_code_cell(src)
        cell.metadata["nbgrader"] = {"grade_id": gid, "solution": solution, "grade": False, "locked": not solution}
        nb.cells.append(cell)
    return nb


def test_missing_answer_never_runs_the_instructors_solution():
    """An answer cell that the submission and a stale release both lack gets nbgrader's stub."""
    source = _nb(("setup", False, "import torch"), ("answer", True, "def f():\n    return 42  # the solution"))
    stale_release = _nb(("setup", False, "import torch"))
    student = _nb(("setup", False, "import torch"))
    merged, report = merge(source, stale_release, student)
    answer = next(c for c in merged.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "answer")
    assert answer.source == CODE_STUB
    assert "42" not in "".join(c.source for c in merged.cells)
    assert report["missing"] == ["answer"]


def test_a_trained_parts_cells_get_the_source_timeout_and_a_student_cannot_take_one():
    """The source's ``grader.timeout`` lengthens its test cell and the cell of its hidden tests; a cell the
    student added, or a student's copy of the test cell claiming a longer one, keeps the default."""
    source = _nb(("answer", True, "def f():\n    return 1"),
                 ("train-test", False, f"assert f() == 1\n{HIDDEN_BEGIN}\nrecord('f', f)\n### END HIDDEN TESTS"))
    source.cells[1].metadata["nbgrader"] |= {"grade": True, "points": 1}
    source.cells[1].metadata["grader"] = {"timeout": 150}
    student = _nb(("answer", True, "def f():\n    return 1"), ("train-test", False, "pass"))
    student.cells.insert(1, nbformat.v4.new_code_cell("while True: pass", metadata={"grader": {"timeout": 10**6}}))
    student.cells[2].metadata["grader"] = {"timeout": 10**6}
    merged, _ = merge(source, source, student)
    limits = {c.source.splitlines()[0][:20]: cell_timeout(c, 60) for c in merged.cells}
    assert limits == {"def f():": 60, "while True: pass": 60, "assert f() == 1": 150, HIDDEN_BEGIN[:20]: 150}
    assert cell_timeout(nbformat.v4.new_code_cell("x", metadata={"grader": {"timeout": 30}}), 60) == 60
    assert cell_timeout(nbformat.v4.new_code_cell("x", metadata={"grader": {"timeout": True}}), 60) == 60


def test_only_the_source_can_keep_a_cell_from_running():
    """A source cell with ``grader.skip`` (the notebook's own run of a trained part) is not run and its output
    says why; a student's added cell, or a student's copy of a source cell, claiming one runs all the same."""
    source = _nb(("answer", True, "def f():\n    return 1"), ("own-run", False, "print(f())"))
    source.cells[1].metadata["grader"] = {"skip": "it trains with seed 0; the hidden test trains on another"}
    student = _nb(("answer", True, "def f():\n    return 1"), ("own-run", False, "print(f())"))
    student.cells.append(nbformat.v4.new_code_cell("print(2)", metadata={"grader": {"skip": "mine"}}))
    student.cells[0].metadata["grader"] = {"skip": "mine too"}
    merged, _ = merge(source, source, student)
    reasons = {c.source: skip_reason(c) for c in merged.cells}
    assert reasons == {"def f():\n    return 1": "", "print(f())": source.cells[1].metadata["grader"]["skip"],
                       "print(2)": ""}
    own = next(c for c in merged.cells if c.source == "print(f())")
    assert own.outputs[0]["text"].startswith("Not run by the grader: it trains with seed 0")


def test_own_cells_after_the_last_graded_cell_are_not_run_and_keep_their_outputs():
    """A cell of the student's own after the last graded cell (the written questions' experiments) is marked
    not to run and keeps the outputs handed in; one before it runs, its outputs cleared; a student's own
    metadata cannot mark a cell before it."""
    source = _nb(("answer", True, "def f():\n    return 1"),
                 ("f-test", False, f"assert f() == 1\n{HIDDEN_BEGIN}\nrecord('f', f)\n### END HIDDEN TESTS"),
                 ("closing", False, "print('given, after the tests')"))
    source.cells[1].metadata["nbgrader"] |= {"grade": True, "points": 1}
    student = _nb(("answer", True, "def f():\n    return 1"), ("f-test", False, "pass"), ("closing", False, "x"))
    before = nbformat.v4.new_code_cell("helper = 2", metadata={"grader": {"not_run": True, "student_added": True}})
    before.outputs = [nbformat.v4.new_output("stream", name="stdout", text="old\n")]
    after = nbformat.v4.new_code_cell("while True: pass")
    after.outputs = [nbformat.v4.new_output("stream", name="stdout", text="my runs: 1.5\n")]
    student.cells[1:1] = [before]
    student.cells.append(after)
    merged, report = merge(source, source, student)
    cells = {c.source: c for c in merged.cells}
    assert report["extra"] == 2
    assert not not_run(cells["helper = 2"]) and cells["helper = 2"].outputs == []
    assert not_run(cells["while True: pass"]) and cells["while True: pass"].outputs[0]["text"] == "my runs: 1.5\n"
    assert not not_run(cells["print('given, after the tests')"])  # the instructor's cells all run


def _reach(cells: dict[str, str], entry: str, own: tuple[str, ...], forbidden: tuple[str, ...], given=None):
    return forbidden_in_reach(StudentCode(cells, given), entry, own, forbidden)


def test_forbidden_names_are_judged_on_the_code_a_part_reaches():
    """Not on unrelated experiment cells; each name with the function that used it (issue 55)."""
    check = "def numerical_gradient(f, x):\n    return torch.autograd.grad(f(x), x)\n\n" \
            "def relative_error(a, b):\n    return (a - b).norm() / b.norm()\n"
    experiment = "import torch.nn as nn\nrnn = nn.RNN(3, 4)\nh = torch.rnn_tanh_cell(x, h, w, u)\n"
    cells = {"check": check, "cell 9": experiment}
    assert _reach(cells, "relative_error", ("check",), AUTOGRAD) == {}
    assert _reach(cells, "numerical_gradient", ("check",), AUTOGRAD) == {"torch.autograd": ["numerical_gradient"]}
    forward = "def step(x, h):\n    return rnn(x, h)\n\ndef elman_forward(x, h):\n    return step(x, h)\n"
    assert _reach({**cells, "forward": "def elman_forward(x, h):\n    return x + h\n"}, "elman_forward",
                  ("forward",), ("torch.nn", ".rnn_tanh_cell")) == {}
    # reached by name, transitively: elman_forward -> step -> rnn, bound in the experiment cell
    assert _reach({**cells, "forward": forward}, "elman_forward", ("forward",), ("torch.nn",)) == \
        {"torch.nn": ["rnn = nn.RNN(3, 4)", "import torch.nn as nn"]}


def test_the_reach_follows_the_notebooks_given_helpers_and_aliases():
    """A helper given in the notebook that calls the student's function is followed (its own code is never
    reported); an import alias counts where the reached code uses it."""
    given = {"given 3": "def run_epoch(batch):\n    return my_step(batch).backward()\n"}  # the instructor's
    cells = {"train": "def train(data):\n    return [run_epoch(b) for b in data]\n",
             "step": "import torch.nn.functional as F\ndef my_step(b):\n    return F.softplus(b)\n"}
    assert _reach(cells, "train", ("train",), (".backward", ".softplus", "torch.nn"), given) == \
        {".softplus": ["my_step"], "torch.nn": ["my_step", "import torch.nn.functional as F"]}
    # no function named like the part: the part's whole answer cells are its code
    assert _reach({"a": "w = torch.autograd.grad(y, x)"}, "sgns_gradients", ("a",), AUTOGRAD) == \
        {"torch.autograd": ["w = torch.autograd.grad(y, x)"]}


@pytest.mark.skipif(not __import__("grader.sandbox", fromlist=["x"]).sandbox_available(), reason="needs bubblewrap")
def test_sandbox_file_system_holds_only_what_the_kernel_needs(tmp_path):
    """Allow-list: Python, the library and the data are there; solutions/, the tests and the shadow
    password file are not (tests/test_grading_hostile.py checks the same from inside a real kernel)."""
    import subprocess
    import sys

    from grader.sandbox import REPO, sandbox_prefix

    tmp_path.chmod(0o777)
    code = ("import os, nlpcourse, torch; "
            f"print(os.path.exists({str(REPO / 'solutions')!r}), os.path.exists({str(REPO / 'tests')!r}), "
            f"os.path.isdir({str(REPO / 'data')!r}));"
            "\ntry:\n    print(open('/etc/shadow').read())\nexcept OSError as exc:\n    print(type(exc).__name__)")
    proc = subprocess.run(sandbox_prefix(tmp_path, [], None) + [sys.executable, "-c", code],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "False False True"
    assert "root:" not in proc.stdout


@pytest.mark.parametrize("argv", [
    ["--course-dir", "X", "autograde", "backprop", "--submissions", "S"],
    ["autograde", "backprop", "--submissions", "S", "--course-dir", "X"],
    ["autograde", "backprop", "--course-dir", "X", "--submissions", "S"],
])
def test_course_dir_is_accepted_before_or_after_the_command(argv):
    from grader.cli import _parser

    assert _parser().parse_args(argv).course_dir == Path("X")


@pytest.mark.parametrize("command", [["release", "backprop"], ["feedback", "backprop"],
                                     ["export", "backprop", "--csv", "g.csv"], ["report", "backprop"],
                                     ["collect", "backprop", "--zip", "a.zip"]])
def test_every_command_takes_course_dir_and_defaults_to_grading(command):
    from grader.cli import _parser
    from grader.course import DEFAULT_COURSE_DIR

    assert _parser().parse_args(command).course_dir == DEFAULT_COURSE_DIR
    assert _parser().parse_args([*command, "--course-dir", "Y"]).course_dir == Path("Y")


@pytest.mark.parametrize("bad", [{"workers": 0}, {"cell_timeout": 0}, {"interrupt_grace": -1}, {"memory_gib": 0}])
def test_grading_limits_refuse_what_cannot_work(bad):
    from grader.autograde import Limits
    from grader.course import GraderError

    with pytest.raises(GraderError, match=next(iter(bad)).replace("_", "-")):
        Limits(**bad).check()


def test_worker_judges_on_one_thread():
    """Workers run one per core beside their kernels: a judge on torch's whole thread pool made the
    rnnlm batch (a 30,000-step LSTM per training case) take over 900 s instead of about 150 s."""
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert worker_main(["a", "b"]) == 2  # a usage error, after the worker's setup
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


@pytest.mark.skipif(not (Path(__file__).resolve().parents[1] / "solutions").is_dir(),
                    reason="needs solutions/ (private, not in the public copy)")
def test_several_assignments_are_read_from_nbgraders_layout_only(tmp_path):
    """With several assignments, a student folder counts for an assignment only if it has that assignment's
    folder; graded alone, the same folders are each a submission (a missing one when empty)."""
    from grader.autograde import autograde, find_submissions
    from grader.course import GraderError, load_assignment

    backprop, cnn = load_assignment("backprop"), load_assignment("cnn")
    for student, a in [("alice", backprop), ("alice", cnn), ("bob", cnn)]:
        (tmp_path / student / a.name).mkdir(parents=True)
        (tmp_path / student / a.name / a.notebook).write_text("{}")
    (tmp_path / "carol" / "backprop").mkdir(parents=True)  # a folder for backprop, but no notebook in it
    several = {a.name: [(s.student, s.status_hint) for s in find_submissions(a, tmp_path, nested_only=True)]
               for a in (backprop, cnn)}
    assert several == {"backprop": [("alice", ""), ("carol", "missing")], "cnn": [("alice", ""), ("bob", "")]}
    alone = [(s.student, s.status_hint) for s in find_submissions(backprop, tmp_path)]
    assert alone == [("alice", ""), ("bob", "missing"), ("carol", "missing")]
    with pytest.raises(GraderError, match="once"):
        autograde(["backprop", "backprop"], tmp_path, tmp_path / "course")


def test_the_reach_starts_from_what_the_hidden_tests_record():
    """The hidden test's ``record("mlp_logits", lambda ...: mlp_forward(...)[0])`` reaches mlp_forward and what
    it calls, not the other functions of the same answer cell (mlp_loss_and_grads, and the autograd it uses)."""
    hidden = ['record("mlp_logits", lambda params, X: mlp_forward(params, X)[0])\nrecord("mlp_grads", mlp_grads)']
    roots = recorded_names(hidden)
    assert roots == {"mlp_logits": {"mlp_forward"}, "mlp_grads": {"mlp_grads"}}
    cell = "def mlp_forward(params, X):\n    return X @ params, None\n\n" \
           "def mlp_grads(params, X):\n    return torch.autograd.grad(mlp_forward(params, X)[0].sum(), params)\n"
    code = StudentCode({"mlp-solution": cell})
    assert forbidden_in_reach(code, "mlp_logits", ("mlp-solution",), AUTOGRAD, roots["mlp_logits"]) == {}
    assert forbidden_in_reach(code, "mlp_grads", ("mlp-solution",), AUTOGRAD, roots["mlp_grads"]) == \
        {"torch.autograd": ["mlp_grads"]}


def test_tampering_is_flagged_and_an_honest_submission_is_not():
    """Locked cells edited (not their trailing spaces), points or flags changed, a graded cell deleted, a cell of
    one's own dressed as graded, a forged ``record``: each named; the answers and cells of one's own are not."""
    release = _nb(("setup", False, "import torch"), ("answer", True, "raise NotImplementedError()"),
                  ("f-test", False, "assert f() == 1"))
    release.cells[2].metadata["nbgrader"] |= {"grade": True, "points": 2}
    honest = copy.deepcopy(release)
    honest.cells[0].source += "\n\n"  # an editor's blank lines
    honest.cells[1].source = "def f():\n    return 1"
    honest.cells.append(nbformat.v4.new_code_cell("print(f())  # my own"))
    assert tampering(release, honest) == []
    bad = copy.deepcopy(honest)
    bad.cells[0].source = "import torch\nimport builtins"
    bad.cells[2].metadata["nbgrader"]["points"] = 100
    bad.cells.append(nbformat.v4.new_code_cell("from nlpcourse.checking import record\nrecord('f', lambda: 1)"))
    bonus = nbformat.v4.new_code_cell("pass")
    bonus.metadata["nbgrader"] = {"grade_id": "bonus", "grade": True, "points": 50}
    bad.cells.append(bonus)
    flags = tampering(release, bad)
    assert flags == ["edited the locked cell setup", "changed points of f-test",
                     "a cell of their own carries nbgrader's grading metadata (bonus)",
                     "their own code records results or writes the grader's outputs (forging a hidden test)"], flags
    gone = copy.deepcopy(honest)
    del gone.cells[2]
    assert tampering(release, gone) == ["deleted the test cell f-test"]


def test_a_function_copied_from_the_library_under_other_names_is_flagged():
    """The forbidden-name check stops a call to the library; a copy of it, renamed, is flagged for the
    instructor (pretraining's mask_tokens is the course's mlm_corrupt: the chapter shows it)."""
    import inspect
    import re

    import nlpcourse.models.bert as bert
    from grader.notebook import copied_from_library, library_fingerprints

    source = re.sub(r"\bids\b", "tokens", inspect.getsource(bert.mlm_corrupt)).replace("def mlm_corrupt",
                                                                                       "def mask_tokens")
    assert copied_from_library(StudentCode({"mask-solution": source}), library_fingerprints()) == \
        ["mask_tokens copies nlpcourse.models.bert.mlm_corrupt"]
    own = "def mask_tokens(ids, vocab, rate=0.15, generator=None):\n    return ids.clone(), ids.clone()\n"
    assert copied_from_library(StudentCode({"mask-solution": own}), library_fingerprints()) == []
