"""Hostile submissions, written once, on the assignment ``backprop``: real sandboxed kernels, nbgrader's
real gradebook. (What every assignment must pass, solution, blank release and planted bugs, is in
test_grading_assignments.py.)

One module-scoped run of ``grader autograde`` grades every submission below at once (about 25 kernels,
two at a time); the tests then read what it wrote: ``work/backprop/<student>/result.json``, the
executed notebooks under ``autograded/``, nbgrader's gradebook, the feedback and the exported CSV.

Submissions, and what each must get (points per test cell: gradcheck 2, linear 2, activation 2,
logsoftmax 2, loss 2, mlp 3, sgd 1, train 3; 17 autograded points, plus 8 for the hand-graded written
answers, the derivations and the ablations). "Part 1" below is the linear layer, the first part a
submission solves; the gradient check comes before it in the notebook:

============================  =========================================================  ==========
student                       what it is                                                 status
============================  =========================================================  ==========
``solution``                  the instructor's solution                                  graded, 17
``blank``                     the release as handed out                                  graded, 0
``loop-in-function``          ``sgd_step`` never returns on a hidden case (lr = 0)       timeout, 16
``loop-top-level``            ``while True: pass`` at the top of the log-softmax answer  timeout, 8
``memory-bomb``               part 1 solved; a cell allocates without end                graded, <= 2
``os-exit``                   solved; ``os._exit(0)`` in a cell after part 1             crashed, 4
``sys-exit``                  blank; ``sys.exit()`` / ``raise SystemExit`` everywhere     graded, 0
``tests-deleted``             blank; every test cell deleted                             graded, 0
``tests-edited``              part 1 solved; every test cell ``pass``; points 100;       graded, 2
                              a test cell marked as an answer; a new graded cell
``monkeypatch``               blank; torch/numpy/checking/IPython patched, record no-op  graded, 0
``record-forged``             blank; ``record`` replaced: writes zeros for every case    graded, = zeros
``outputs-forged``            blank; last cell writes the recordings itself (copies of   graded, = copies
                              the inputs, a pickle that runs code, an oversized file)
``reader``                    blank; looks for the reference, source notebook, gradebook,  graded, 0
                              other submissions, the grader's processes; calls the host
``autograd``                  solved, but ``linear_backward`` uses torch.autograd        graded, 15
``renamed``                   solved, handed in as ``homework.ipynb``                    graded, 17
``wedged``                    part 1 solved; then a cell patches every ``close``,         timeout, 2
                              ``equal``, ``check``... of every module: the kernel's own
                              messaging breaks, the next cell never ends, and the
                              interrupt goes unanswered
``sigint-ignored``            part 1 solved; ``signal.signal(SIGINT, SIG_IGN)``, sleeps   timeout, 2
``interrupt-swallowed``       part 1 solved; a loop that catches KeyboardInterrupt        timeout, 2
``c-loop``                    part 1 solved; ``sum(range(10**15))``: a C loop that never   timeout, 2
                              checks for signals
``not-json``                  not JSON                                                   invalid, 0
``not-notebook``              JSON, but not a notebook                                   invalid, 0
``no-notebook``               a folder with no notebook                                  missing, 0
============================  =========================================================  ==========

"= zeros" / "= copies": a forged recording earns exactly what the same values earn when a genuine
answer returns them (functions returning zeros, or their first argument), computed here with the
grader's own judge; these few points come from hidden cases whose expected output is zeros (tanh of
0) or the input itself (an SGD step with lr = 0). With values that match no case, forging earns 0.

The last four are stopped by the watchdog: a kernel that has not answered the interrupt within the
grace period is shut down, so each costs about the cell timeout, not the notebook timeout.

A separate, smaller run checks that a batch killed mid-way (SIGKILL) resumes without regrading or
double-counting. Run with ``pytest -m grading``; needs bubblewrap for the isolation tests (they skip
without it, unless CI is set).
"""
from __future__ import annotations

import csv
import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import pytest
import torch
from grading_support import (
    COURSE_ID,
    ROOT,
    feedback_files,
    grader_cli,
    grader_env,
    leaks,
    need_sandbox,
    points,
    secret_lines,
)

from grader.course import SOLUTIONS, load_assignment, load_bugs, load_reference
from grader.export import STATUSES
from grader.sandbox import SYSTEM_FOLDERS, sandbox_available, visible_folders
from grader.submissions import (
    OWN_OUTPUT,
    add_cell_after,
    release_notebook,
    solution_answers,
    submission,
    with_bug,
    with_own_cells,
    write,
)

pytestmark = pytest.mark.grading

if not SOLUTIONS.is_dir():  # the public copy (`grader publish`) has no solutions/
    pytest.skip("needs solutions/ (private, not in the public copy)", allow_module_level=True)

ASSIGNMENT = "backprop"
NOTEBOOK = "backprop.ipynb"
CELL_TIMEOUT = 15  # seconds; each loop costs it. At 10 s the memory bomb (3 GiB filled page by page beside
# the grading queue) once ran past it in CI: a flaky timeout, so back to 15
INTERRUPT_GRACE = 3
GRADE_OPTIONS = ["--workers", "2", "--cell-timeout", str(CELL_TIMEOUT), "--notebook-timeout", "150",
                 "--memory-gib", "3", "--interrupt-grace", str(INTERRUPT_GRACE)]
SOURCE = ROOT / "solutions" / ASSIGNMENT / NOTEBOOK
REFERENCE = ROOT / "solutions" / ASSIGNMENT / "reference.py"
RELEASE = ROOT / "notebooks" / ASSIGNMENT / NOTEBOOK
SITE = ROOT / "_build" / "html"

GRADCHECK, LINEAR, ACTIVATION, LOGSOFTMAX, LOSS, MLP, SGD, TRAIN = (
    "gradcheck-test", "linear-test", "activation-test", "logsoftmax-test", "loss-test", "mlp-test", "sgd-test",
    "train-test")


POINTS = points(ASSIGNMENT).auto  # grade_id of each autograded test cell -> its points
MAX_AUTOGRADED = sum(POINTS.values())
MAX_MANUAL = sum(points(ASSIGNMENT).manual.values())  # the hand-graded written answers


# ------------------------------------------------------------------ building the submissions


def _answers(**overrides: str) -> dict[str, str]:
    """Answer cells: the solution's, except those given (grade_id with '_' for '-')."""
    answers = solution_answers(ASSIGNMENT)
    for key, src in overrides.items():
        answers[key.replace("_", "-")] = src
    return answers


def _only_linear_solved():
    """The release with only part 1 (linear layer) answered: genuinely worth exactly 2 points."""
    return submission(ASSIGNMENT, {"linear-solution": solution_answers(ASSIGNMENT)["linear-solution"]})


def _cells(nb, pred):
    return [c for c in nb.cells if pred(c.metadata.get("nbgrader", {}))]


def _is_test(meta: dict) -> bool:
    return bool(meta.get("grade")) and not meta.get("solution")


# Hostile code, as students would write it into their notebooks.

LOOP_IN_FUNCTION = '''\
def sgd_step(params, grads, lr):
    """One step of gradient descent, with a loop that never ends when lr == 0 (a hidden case)."""
    while lr == 0:
        pass
    return {name: p - lr * grads[name] for name, p in params.items()}
'''

MEMORY_BOMB = '''\
import torch

def hoard():
    blocks = []
    while True:  # grows until the memory limit stops it
        blocks.append(bytearray(256 * 2**20))

try:
    huge = torch.ones(2**36)  # 256 GiB
except Exception as exc:
    print("huge tensor:", type(exc).__name__)
hoard()
'''

SYS_EXITS_AT_THE_TOP = "import sys\nsys.exit()\n"
SYSTEM_EXIT_ANSWER = '''\
import sys

def linear_forward(X, W, b):
    sys.exit(0)

def linear_backward(dY, X, W):
    raise SystemExit(0)
'''

MONKEYPATCH = '''\
import sys
import numpy
import numpy.testing
import torch
import torch.testing
import nlpcourse.checking as checking
from IPython.core.interactiveshell import InteractiveShell

torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
numpy.allclose = lambda *a, **k: True
numpy.testing.assert_allclose = lambda *a, **k: None
checking.compare = lambda *a, **k: checking.Verdict(True)
checking.check_close = checking.check_shape_of = lambda *a, **k: None
checking.record = lambda *a, **k: None
check_close = check_shape_of = record = lambda *a, **k: None  # the names the test cells call
InteractiveShell.showtraceback = lambda *a, **k: None
get_ipython().showtraceback = lambda *a, **k: None
get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)
sys.excepthook = lambda *a: None
'''

RECORD_FORGED = '''\
import os
from pathlib import Path
import torch
import nlpcourse.checking as checking

def fake_record(part, fn):
    """Ignore fn; claim every case returned zeros shaped like its first argument."""
    cases = checking.load_cases(os.environ["NLPCOURSE_GRADER_INPUTS"], part)[part]
    fakes = [{"ok": True, "value": checking._map(c.args[0], torch.zeros_like), "devices": ["cpu"]} for c in cases]
    torch.save(fakes, Path(os.environ["NLPCOURSE_GRADER_OUTPUTS"]) / f"{part}.pt")

checking.record = fake_record
record = fake_record
'''

OUTPUTS_FORGED = '''\
import builtins
import os
from pathlib import Path
import torch
import nlpcourse.checking as checking

class Payload:
    def __reduce__(self):  # runs on unpickling, if the grader loaded it unsafely
        return (builtins.open, (MARKER, "w"))

out = Path(os.environ["NLPCOURSE_GRADER_OUTPUTS"])
for part, cases in checking.load_cases(os.environ["NLPCOURSE_GRADER_INPUTS"]).items():
    torch.save([{"ok": True, "value": c.args[0], "devices": ["cpu"]} for c in cases], out / f"{part}.pt")
torch.save([Payload()], out / "linear_forward.pt")
with open(out / "linear_backward.pt", "wb") as fh:
    fh.truncate(65 * 2**20)  # more than the grader reads
print("forged", sorted(p.name for p in out.iterdir()))
'''

# The reader, in cells: it looks for the private files by name, then searches the whole file system for
# **/reference.py, **/*.db and **/*.ipynb (about 44,000 folders are in sight, 1 s here). On a cold disk beside
# a busy grading queue that search once took longer than one cell's timeout (15 s) in CI, and later longer
# than eight cells of 6 s, so the fixture reads those folders once before the batch (warm_folder_cache),
# and the search is `find`, started in the first cell in the background, running between cells too; the
# cells below wait for it, each for at most READER_SLICE seconds: no cell runs past its timeout.
READER_SLICE = 6  # seconds of waiting for the search per cell
READER_SEARCH_CELLS = 12  # cells that wait for it: up to 72 s in all, within the notebook's 150 s
READER = '''\
import hashlib, json, os, subprocess, sys, time, urllib.request

def digest(path):
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except Exception as exc:
        return f"unreadable: {type(exc).__name__}"

def collect(listing):
    """The files the search printed (NUL-separated), each with its digest."""
    for path in filter(None, listing.split("\\0")):
        if not (path.endswith(".ipynb") and "/site-packages/" in path):
            found["globbed"][path] = digest(path)

found = {"paths": {}, "globbed": {}, "listings": {}, "stolen": [], "processes": [], "cwd": os.getcwd(),
         "search_done": False, "search_seconds": 0.0}
# **/reference.py, **/*.db, **/*.ipynb over the whole file system but /proc, /sys and /dev
SEARCH = subprocess.Popen(
    ["find", "/", "(", "-path", "/proc", "-o", "-path", "/sys", "-o", "-path", "/dev", ")", "-prune", "-o",
     "-type", "f", "(", "-name", "reference.py", "-o", "-name", "*.db", "-o", "-name", "*.ipynb", ")",
     "-print0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="surrogateescape")
SEARCH_START = time.time()
for path in TARGETS:
    found["paths"][path] = digest(path) if os.path.exists(path) else "absent"
for folder in FOLDERS:
    try:
        found["listings"][folder] = sorted(os.listdir(folder))
    except Exception as exc:
        found["listings"][folder] = f"error: {type(exc).__name__}"
'''

READER_SEARCH = '''\
if not found["search_done"]:
    try:
        listing, _ = SEARCH.communicate(timeout=SLICE)
        collect(listing)
        found["search_done"] = True
    except subprocess.TimeoutExpired:
        pass
    found["search_seconds"] = round(time.time() - SEARCH_START, 1)
'''

READER_USE = '''\
for pid in (p for p in os.listdir("/proc") if p.isdigit()):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            found["processes"].append(fh.read().decode(errors="replace").split("\\0"))
    except Exception:
        pass
try:
    urllib.request.urlopen(URL, timeout=3).read()
    found["network"] = "reached"
except Exception as exc:
    found["network"] = f"failed: {type(exc).__name__}: {exc}"
# use whatever was found: a reference implementation of these functions becomes the answers
for path, sha in found["globbed"].items():
    if path.endswith("reference.py") and "def linear_forward" in open(path, errors="replace").read():
        try:
            namespace = {}
            exec(open(path).read(), namespace)
            for name in ("linear_forward", "linear_backward", "relu_forward", "relu_backward", "tanh_forward",
                         "tanh_backward", "log_softmax", "cross_entropy", "cross_entropy_backward", "sgd_step"):
                if name in namespace:
                    globals()[name] = namespace[name]
                    found["stolen"].append(f"{path}:{name}")
        except BaseException as exc:
            found["stolen"].append(f"{path}: {type(exc).__name__}")
print("FOUND=" + json.dumps(found))
'''

STATE_FORGER = '''\
import hashlib, json, os
from pathlib import Path

here = Path.cwd()
# the kernel runs in the kernel/ folder of the grader's folder for this submission (or, forked by the
# kernel nursery, in the nursery's slot it is moved into for the run): aim at the folder above it
student, folder = "state-forger", here.parent
fake = {"student": student, "assignment": "backprop", "status": "graded", "message": "12/12 autograded points",
        "score": 12.0, "max_score": 12.0, "executed": False,
        "cells": {c: {"score": p, "max_score": p, "message": "all cases passed"} for c, p in POINTS.items()}}
submitted = folder / "submitted" / "backprop.ipynb"
sha = hashlib.sha256(submitted.read_bytes()).hexdigest() if submitted.exists() else "?"
for where in sorted({here, folder}):
    for name, text in (("result.json", json.dumps(fake)), ("recorded.json", json.dumps({"sha256": sha}))):
        try:
            (where / name).write_text(text)
        except OSError as exc:
            print("cannot write", where / name, exc)
    for name in ("result.json.tmp", "executed.ipynb.tmp", "recorded.json.tmp", "job.run.json", "job.json.tmp"):
        try:
            os.symlink(TARGET + name, where / name)
        except OSError as exc:
            print("cannot plant", where / name, exc)
(here / "forged.flag").write_text("done")
print("forged grader state in", sorted(map(str, {here, folder})))
'''


def state_forger(target_prefix: Path) -> str:
    """A cell that forges the grader's own files (a full-marks result.json, a recorded.json) and plants
    symlinks where the grader writes its temporary files, pointing to ``target_prefix*`` on the host."""
    return f"TARGET = {str(target_prefix)!r}\nPOINTS = {POINTS!r}\n" + STATE_FORGER


# Kernels that stop answering: the cell timeout's interrupt is never answered.
WEDGED = '''\
import re
import sys

names = re.compile(r"close|equal|check|assert|compare|verify", re.I)
for module in list(sys.modules.values()):
    for attr in list(getattr(module, "__dict__", {})):
        if names.search(attr):
            try:
                setattr(module, attr, lambda *a, **k: None)
            except Exception:
                pass
'''

# It waits rather than spins: the ignored interrupt is the point, and the busy loops above already hold a
# core for their cell timeout each, beside the grading queue
SIGINT_IGNORED = ("import signal\nimport time\n\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                  "while True:\n    time.sleep(1)\n")

INTERRUPT_SWALLOWED = '''\
import time

while True:
    try:
        time.sleep(0.1)
    except KeyboardInterrupt:
        print("interrupted; going on")
'''

C_LOOP = "total = sum(range(10**15))  # a C loop: no signal is looked at until it ends\n"
WEDGES = {"wedged": WEDGED, "sigint-ignored": SIGINT_IGNORED, "interrupt-swallowed": INTERRUPT_SWALLOWED,
          "c-loop": C_LOOP}

HISTORY_PRINTER = "print(*In, sep='\\n')  # IPython's input history: every cell run so far, hidden tests included\n"

AUTOGRAD_LINEAR = '''\
def linear_forward(X, W, b):
    return X @ W.T + b


def linear_backward(dY, X, W):
    X_ = X.detach().clone().requires_grad_(True)
    W_ = W.detach().clone().requires_grad_(True)
    dX, dW = torch.autograd.grad(X_ @ W_.T, (X_, W_), grad_outputs=dY)
    return dX, dW, dY.sum(dim=0)
'''


def _tests_edited():
    """Part 1 solved; every test cell replaced by ``pass``; points of one set to 100; one marked as an
    answer cell; and a cell of the student's own dressed up as a graded test worth 100 points."""
    nb = _only_linear_solved()
    for cell in _cells(nb, _is_test):
        cell.source = "pass"
    for cell in nb.cells:
        m = cell.metadata.get("nbgrader", {})
        if m.get("grade_id") == LINEAR:
            m["points"] = 100
        if m.get("grade_id") == LOGSOFTMAX:
            m["solution"] = True
            m["grade"] = False
    nb = add_cell_after(nb, "setup", "pass")
    bonus = next(c for c in nb.cells if c.source == "pass" and not c.metadata.get("nbgrader"))
    bonus.metadata["nbgrader"] = {"grade": True, "grade_id": "bonus-test", "locked": True, "points": 100,
                                  "schema_version": 3, "solution": False}
    return nb


def own_cells(nb):
    """The solution with cells of the student's own (grader.submissions.with_own_cells: every forbidden name in
    a function no graded code calls; after the last cell, a loop that never ends, not run), and in the middle one
    that runs past the cell timeout. None may cost a point or change the status."""
    nb = with_own_cells(ASSIGNMENT, nb)
    return add_cell_after(nb, ACTIVATION, f"import time\ntime.sleep({CELL_TIMEOUT + 5})\n")


def _tests_deleted():
    nb = release_notebook(ASSIGNMENT)
    nb.cells = [c for c in nb.cells if not _is_test(c.metadata.get("nbgrader", {}))]
    return nb


def build_submissions(folder: Path, marker: Path, url: str, course_dir: Path) -> dict[str, str]:
    """Write every submission under ``folder``; return {student: how it is handed in}."""
    blank = release_notebook(ASSIGNMENT)
    solved = submission(ASSIGNMENT)
    # (student, notebook) for those handed in as backprop.ipynb
    notebooks = {
        "solution": solved,
        "blank": blank,
        "loop-in-function": submission(ASSIGNMENT, _answers(sgd_solution=LOOP_IN_FUNCTION)),
        "loop-top-level": submission(ASSIGNMENT, _answers(
            logsoftmax_solution="while True:\n    pass\n\n" + solution_answers(ASSIGNMENT)["logsoftmax-solution"])),
        "memory-bomb": add_cell_after(_only_linear_solved(), LINEAR, MEMORY_BOMB),
        "os-exit": add_cell_after(solved, LINEAR, "import os\nos._exit(0)\n"),
        "sys-exit": add_cell_after(add_cell_after(
            submission(ASSIGNMENT, {"linear-solution": SYSTEM_EXIT_ANSWER}), "setup", SYS_EXITS_AT_THE_TOP),
            LINEAR, "raise SystemExit(0)\n"),
        "tests-deleted": _tests_deleted(),
        "tests-edited": _tests_edited(),
        "monkeypatch": add_cell_after(blank, "setup", MONKEYPATCH),
        "record-forged": add_cell_after(blank, "setup", RECORD_FORGED),
        # before the last graded cell: a cell of one's own after it is not run at all
        "outputs-forged": add_cell_after(blank, "train-run", f"MARKER = {str(marker)!r}\n" + OUTPUTS_FORGED),
        "reader": with_reader(blank, url, folder, course_dir),
        "autograd": submission(ASSIGNMENT, _answers(linear_solution=AUTOGRAD_LINEAR)),
        "history-printer": add_cell_after(blank, "train-run", HISTORY_PRINTER),
        "own-cells": own_cells(solved),
        "state-forger": add_cell_after(blank, "setup", state_forger(marker.parent / "written-through-symlink-")),
    }
    for student, code in WEDGES.items():
        notebooks[student] = add_cell_after(_only_linear_solved(), LINEAR, code)
    how = {}
    for student, nb in notebooks.items():
        write(nb, folder, student, NOTEBOOK)
        how[student] = NOTEBOOK
    write(solved, folder, "renamed", "homework.ipynb")
    how["renamed"] = "homework.ipynb"
    (folder / "not-json").mkdir()
    (folder / "not-json" / NOTEBOOK).write_text('{"cells": [ this is not JSON')
    (folder / "not-notebook").mkdir()
    (folder / "not-notebook" / NOTEBOOK).write_text('{"hello": "a JSON object, but no cells"}')
    (folder / "no-notebook").mkdir()
    (folder / "no-notebook" / "README.txt").write_text("I forgot to attach it\n")
    how.update({"not-json": NOTEBOOK, "not-notebook": NOTEBOOK, "no-notebook": ""})
    return how


def reader_targets(folder: Path, course_dir: Path) -> tuple[list[str], list[str]]:
    """Files and folders the reader looks for: none may be visible from the kernel."""
    targets = [REFERENCE, SOURCE, ROOT / ".git" / "HEAD", ROOT / "_grading" / "gradebook.db",
               course_dir / "gradebook.db", course_dir / ".grading_secret",
               course_dir / "work" / ASSIGNMENT / "solution" / "submitted" / NOTEBOOK,
               course_dir / "work" / ASSIGNMENT / "solution" / "kernel" / "inputs" / "linear_forward.pt",
               folder / "solution" / NOTEBOOK, Path.home() / ".bash_history",
               ROOT / "solutions" / ASSIGNMENT / "bugs.py"]
    folders = [ROOT, ROOT / "solutions", course_dir, course_dir / "work" / ASSIGNMENT, folder, Path.home()]
    return [str(p) for p in targets], [str(p) for p in folders]


def reader_cells(url: str, folder: Path, course_dir: Path) -> list[str]:
    """The reader's cells, in order: look by name, search (resumed cell after cell), use what was found."""
    targets, folders = reader_targets(folder, course_dir)
    setup = f"TARGETS = {targets!r}\nFOLDERS = {folders!r}\nURL = {url!r}\nSLICE = {READER_SLICE}\n"
    return [setup + READER] + [READER_SEARCH] * READER_SEARCH_CELLS + [READER_USE]


def with_reader(blank, url: str, folder: Path, course_dir: Path):
    """``blank`` with the reader's cells after its set-up cell."""
    for source in reversed(reader_cells(url, folder, course_dir)):  # each goes right after the set-up
        blank = add_cell_after(blank, "setup", source)
    return blank


# ------------------------------------------------------------------ the graded batch


class _Counter(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):
        self.hits.append(self.path)
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"the host answered")

    def log_message(self, *args):
        pass


def _live_kernels(course: Path) -> set[str]:
    """Connection files of the kernels now running for ``course`` (one per submission being run)."""
    live = set()
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"ipykernel_launcher" in cmd and cmd[0] != b"bwrap" and any(str(course).encode() in w for w in cmd) \
                and _alive([int(proc.name)]):
            live |= {w.decode() for w in cmd if w.endswith(b"kernel.json")}
    return live


class _KernelWatch(threading.Thread):
    """Samples the live kernels while the batch runs: the most ever running at once."""

    def __init__(self, course: Path):
        super().__init__(daemon=True)
        self.course, self.most, self.stop = course, set(), threading.Event()

    def run(self):
        while not self.stop.wait(0.25):
            live = _live_kernels(self.course)
            if len(live) > len(self.most):
                self.most = live


def warm_folder_cache() -> None:
    """List every folder the sandbox shows (the system folders, the Python environment, the library and
    the data) once before the batch, so that the reader's search of them reads cached folders: on a fresh
    CI machine they are cold, and 40,000 folders read from disk beside the busy queue ran past the
    reader's time (a test of what the kernel can find, not of the disk). The same folders, not fewer."""
    for top in [*SYSTEM_FOLDERS, *map(str, visible_folders())]:
        for _ in os.walk(top):
            pass


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Grade every submission in one ``grader autograde`` run; then feedback and export."""
    tmp = tmp_path_factory.mktemp("grading")
    subs, course, marker = tmp / "submissions", tmp / "course", tmp / "unpickled-payload-ran"
    subs.mkdir()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Counter)
    _Counter.hits = []
    threading.Thread(target=server.serve_forever, daemon=True).start()
    watch = _KernelWatch(course)
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/secret"
        how = build_submissions(subs, marker, url, course)
        warm_folder_cache()
        start = time.monotonic()
        watch.start()
        proc = grader_cli("autograde", ASSIGNMENT, "--submissions", str(subs), *GRADE_OPTIONS, course_dir=course)
        seconds = time.monotonic() - start
    finally:
        watch.stop.set()
        server.shutdown()
        server.server_close()
    leftover = _live_kernels(course)
    print(f"graded {len(how)} submissions in {seconds:.0f} s")
    # exit 2: the feedback of history-printer is withheld (its own cell printed the hidden tests)
    fb = grader_cli("feedback", ASSIGNMENT, course_dir=course, check=False)
    assert fb.returncode in (0, 2), fb.stdout + fb.stderr
    csv_path = tmp / "grades.csv"
    grader_cli("export", ASSIGNMENT, "--csv", str(csv_path), course_dir=course)
    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {"tmp": tmp, "subs": subs, "course": course, "marker": marker, "how": how, "stdout": proc.stdout,
            "stderr": proc.stderr, "feedback": fb, "csv": csv_path, "rows": rows,
            "hits": list(_Counter.hits), "most_kernels": watch.most, "leftover_kernels": leftover}


def result(batch, student: str) -> dict:
    return json.loads((batch["course"] / "work" / ASSIGNMENT / student / "result.json").read_text())


def cell_scores(batch, student: str) -> dict[str, float]:
    return {cell: s["score"] for cell, s in result(batch, student)["cells"].items()}


def full_except(*lost: str, lost_score: float = 0.0) -> dict[str, float]:
    return {cell: (lost_score if cell in lost else pts) for cell, pts in POINTS.items()}


def executed_notebook(batch, student: str):
    """The notebook as nbgrader's autograde left it: course/autograded/<student>/<assignment>/."""
    path = batch["course"] / "autograded" / student / ASSIGNMENT / NOTEBOOK
    assert path.is_file(), f"no autograded notebook for {student}"
    return nbformat.read(str(path), as_version=4)


def stdout_of_cells(nb) -> str:
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
                   if o.get("output_type") == "stream")


def no_forbidden_verdict(r: dict) -> None:
    """The points were lost on the verdict, not through the forbidden-name scan."""
    for cell, s in r["cells"].items():
        assert "does not allow" not in s["message"], f"{cell}: {s['message']}"


# ------------------------------------------------------------------ 1. solution and blank


def test_every_student_folder_gets_a_result(batch):
    work = batch["course"] / "work" / ASSIGNMENT
    assert sorted(p.name for p in work.iterdir() if p.is_dir()) == sorted(batch["how"])
    for student in batch["how"]:
        assert (work / student / "result.json").is_file(), student
        assert (work / student / "recorded.json").is_file(), student
        r = result(batch, student)
        assert r["status"] in STATUSES, (student, r["status"])
        assert r["max_score"] == MAX_AUTOGRADED, (student, r["max_score"])
        assert set(r["cells"]) == set(POINTS), student
    assert "warning: bubblewrap" not in batch["stderr"] or not sandbox_available()


def test_kernels_do_not_outlive_their_submission(batch):
    """Each worker runs one kernel at a time and shuts it down after its submission; none is left."""
    workers = int(GRADE_OPTIONS[GRADE_OPTIONS.index("--workers") + 1])
    assert batch["most_kernels"], "no kernel was ever seen running"
    assert len(batch["most_kernels"]) <= workers, sorted(batch["most_kernels"])
    assert not batch["leftover_kernels"], sorted(batch["leftover_kernels"])


def _gradebook():
    from nbgrader.api import Gradebook

    return Gradebook


def test_gradebook_agrees_with_results(batch):
    """nbgrader's gradebook holds, for every executed submission, the grader's score of every test cell;
    the written answer waits for a human in the solution, and is 0 (unchanged stub) in the blank."""
    from nbgrader.api import MissingEntry

    Gradebook = _gradebook()
    executed = [s for s in batch["how"] if result(batch, s)["executed"]]
    assert "solution" in executed and "blank" in executed
    with Gradebook(f"sqlite:///{batch['course'] / 'gradebook.db'}", COURSE_ID) as gb:
        assert gb.find_assignment(ASSIGNMENT).max_score == MAX_AUTOGRADED + MAX_MANUAL  # + the written answers
        for student in executed:
            nb = gb.find_submission_notebook(NOTEBOOK.removesuffix(".ipynb"), ASSIGNMENT, student)
            auto = {g.name: g.auto_score for g in nb.grades if g.name in POINTS}
            assert auto == pytest.approx(cell_scores(batch, student)), student
            maxes = {g.name: g.max_score for g in nb.grades if g.name in POINTS}
            assert maxes == POINTS, student  # points from the source, whatever the submission said
        good = gb.find_submission(ASSIGNMENT, "solution")
        assert good.needs_manual_grade is True
        assert good.code_score == pytest.approx(MAX_AUTOGRADED)
        bad = gb.find_submission(ASSIGNMENT, "blank")
        assert bad.needs_manual_grade is False
        assert bad.score == 0
        for student in ("not-json", "not-notebook", "no-notebook"):
            with pytest.raises(MissingEntry):
                gb.find_submission(ASSIGNMENT, student)


# ------------------------------------------------------------------ 3. hostile submissions


def test_infinite_loop_in_a_function_times_out_that_part_only(batch):
    r = result(batch, "loop-in-function")
    assert r["status"] == "timeout", r["message"]
    assert f"ran past {CELL_TIMEOUT} s" in r["message"]
    assert cell_scores(batch, "loop-in-function") == full_except(SGD)
    assert "no result was recorded" in r["cells"][SGD]["message"]


def test_infinite_loop_at_top_level_times_out_that_cell(batch):
    r = result(batch, "loop-top-level")
    assert r["status"] == "timeout", r["message"]
    assert "logsoftmax-solution" in r["message"] and f"ran past {CELL_TIMEOUT} s" in r["message"]
    # log_softmax never got defined: the parts that need it get 0 (the classifier, trained with the loss,
    # too); of the MLP, only the logits (weight 1 of 3), which need no log_softmax, pass; the rest keeps
    # full marks
    assert cell_scores(batch, "loop-top-level") == {**full_except(LOGSOFTMAX, LOSS, TRAIN), MLP: 1.0}
    assert re.search(r"mlp_logits: (\d+)/\1 cases passed", r["cells"][MLP]["message"]), r["cells"][MLP]["message"]


@pytest.mark.parametrize("student", sorted(WEDGES))
def test_kernel_that_stops_answering_costs_the_cell_timeout_not_the_notebook_timeout(batch, student):
    """The interrupt is ignored (SIGINT ignored or swallowed), never looked at (a C loop), or never even
    received (the kernel's own messaging is broken): the watchdog stops the kernel INTERRUPT_GRACE
    seconds after the interrupt. The status is timeout, what was recorded before counts (part 1), the
    cells after it never ran, and the submission took well under twice the cell timeout (the notebook
    timeout is 150 s)."""
    r = result(batch, student)
    assert r["status"] == "timeout", r["message"]
    assert "stopped answering" in r["message"] and f"ran past {CELL_TIMEOUT} s" in r["message"], r["message"]
    assert cell_scores(batch, student) == {c: (POINTS[c] if c == LINEAR else 0.0) for c in POINTS}
    assert r["seconds"] <= 2 * CELL_TIMEOUT, r["seconds"]


def test_memory_bomb_gains_nothing(batch):
    """The memory the kernel writes is limited: the bomb fails inside the kernel (graded, the genuine part 1
    keeps its 2 points), or the kernel dies (crashed, with a message that names the memory limit)."""
    r = result(batch, "memory-bomb")
    assert r["status"] in ("graded", "crashed"), r["message"]
    assert r["score"] <= POINTS[LINEAR]
    if r["status"] == "crashed":
        assert "memory" in r["message"]
    else:
        assert cell_scores(batch, "memory-bomb") == {c: (POINTS[c] if c == LINEAR else 0.0) for c in POINTS}
        out = stdout_of_cells(executed_notebook(batch, "memory-bomb"))
        assert "huge tensor: RuntimeError" in out or "huge tensor: MemoryError" in out


def test_os_exit_crashes_and_scores_only_what_ran_before(batch):
    """The gradient check and the linear layer ran before the cell that exits; nothing after it."""
    r = result(batch, "os-exit")
    assert r["status"] == "crashed", r["message"]
    assert "kernel died" in r["message"]
    assert cell_scores(batch, "os-exit") == {c: (POINTS[c] if c in (GRADCHECK, LINEAR) else 0.0) for c in POINTS}
    assert r["score"] < MAX_AUTOGRADED


def test_sys_exit_gains_nothing(batch):
    r = result(batch, "sys-exit")
    assert r["status"] == "graded", r["message"]
    assert r["score"] == 0
    assert "SystemExit" in r["cells"][LINEAR]["message"]


def test_deleted_test_cells_change_nothing(batch):
    r = result(batch, "tests-deleted")
    assert r["status"] == "graded", r["message"]
    assert r["score"] == 0 and r["max_score"] == MAX_AUTOGRADED
    assert "NotImplementedError" in r["cells"][SGD]["message"]  # the hidden tests ran all the same


def test_edited_tests_and_metadata_change_nothing(batch):
    """Test cells replaced by ``pass`` (which nbgrader alone would score as passed), points raised to
    100, a test cell marked as an answer, a new 'graded' cell: the genuine part 1 earns its 2 points,
    nothing else counts, and the maximum stays 17."""
    r = result(batch, "tests-edited")
    assert r["status"] == "graded", r["message"]
    assert cell_scores(batch, "tests-edited") == {c: (POINTS[c] if c == LINEAR else 0.0) for c in POINTS}
    assert r["max_score"] == MAX_AUTOGRADED and "bonus-test" not in r["cells"]
    nb = executed_notebook(batch, "tests-edited")
    for cell in nb.cells:  # the notebook that was run and recorded is the instructor's
        m = cell.metadata.get("nbgrader", {})
        if m.get("grade_id") in POINTS:
            assert m["points"] == POINTS[m["grade_id"]] and not m.get("solution")
            assert cell.source.strip() != "pass"
        assert m.get("grade_id") != "bonus-test"


def test_monkeypatching_in_the_kernel_gains_nothing(batch):
    """torch.allclose, torch.testing, numpy.testing, nlpcourse.checking (compare, check_close, record)
    and IPython's traceback hooks, all patched in the kernel: the verdict is not reached there."""
    r = result(batch, "monkeypatch")
    assert r["status"] == "graded", r["message"]
    assert r["score"] == 0
    for cell, s in r["cells"].items():
        assert "no result was recorded" in s["message"], (cell, s["message"])
    no_forbidden_verdict(r)


def _genuine_equivalent(batch, student: str, value_of) -> dict[str, float]:
    """The scores that answers returning ``value_of(first argument)`` on every case would get: the
    grader's own judge on recordings made here, from this student's seed."""
    import tempfile

    from grader.judging import make_cases
    from grader.worker import grade_cells
    from nlpcourse.checking import _map  # noqa: F401 - used by value_of

    a = load_assignment(ASSIGNMENT)
    reference = load_reference(a)
    seed = json.loads((batch["course"] / "work" / ASSIGNMENT / student / "job.json").read_text())["seed"]
    cases = make_cases(reference, seed)
    source = nbformat.read(str(SOURCE), as_version=4)
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "outputs").mkdir()
        for part, cs in cases.items():
            torch.save([{"ok": True, "value": value_of(c.args[0]), "devices": ["cpu"]} for c in cs],
                       Path(tmp) / "outputs" / f"{part}.pt")
        return {cell: s.score for cell, s in grade_cells(a, reference, source, source, Path(tmp), seed).items()}


def test_forged_record_earns_no_more_than_the_same_values_returned_genuinely(batch):
    from nlpcourse.checking import _map

    r = result(batch, "record-forged")
    assert r["status"] == "graded", r["message"]
    genuine = _genuine_equivalent(batch, "record-forged", lambda x: _map(x, torch.zeros_like))
    assert cell_scores(batch, "record-forged") == pytest.approx(genuine)
    assert r["score"] < 1, "zeros pass only the degenerate hidden cases"
    no_forbidden_verdict(r)


def test_forged_output_files_earn_no_more_than_the_same_values_returned_genuinely(batch):
    """Recordings written by the notebook itself, after the hidden tests: copies of the inputs are judged
    like any answer returning them; a pickle that would run code on loading is refused (and did not
    run); an oversized file is not read."""
    r = result(batch, "outputs-forged")
    assert r["status"] == "graded", r["message"]
    assert not batch["marker"].exists(), "the grader unpickled code from a recording"
    assert "cannot be read" in r["cells"][LINEAR]["message"]
    assert "too large" in r["cells"][LINEAR]["message"]
    assert r["cells"][LINEAR]["score"] == 0
    genuine = _genuine_equivalent(batch, "outputs-forged", lambda x: x)
    expected = {cell: (0.0 if cell == LINEAR else s) for cell, s in genuine.items()}
    assert cell_scores(batch, "outputs-forged") == pytest.approx(expected)
    assert r["score"] < 1
    assert "forged" in stdout_of_cells(executed_notebook(batch, "outputs-forged"))  # the forging cell did run


def test_autograd_in_an_answer_is_refused(batch):
    """The static scan of the code each part reaches (a heuristic) refuses torch.autograd in linear_backward,
    and names that function; linear_forward, in the same cell, is clean and keeps its share. The parts whose
    code calls that linear_backward (the MLP's gradients, the trainer) reach it and lose too; the MLP's logits,
    which call only linear_forward, do not."""
    r = result(batch, "autograd")
    assert r["status"] == "graded", r["message"]
    share = {LINEAR: round(POINTS[LINEAR] / 2, 2), MLP: round(POINTS[MLP] / 3, 2)}  # weights 1:1 and 1:2
    assert cell_scores(batch, "autograd") == {**full_except(LINEAR, MLP, TRAIN), **share}
    message = r["cells"][LINEAR]["message"]
    assert "linear_backward: uses torch.autograd (in linear_backward)" in message and "does not allow" in message
    assert "linear_forward: " in message and "linear_forward: uses" not in message
    assert "(in linear_backward)" in r["cells"][MLP]["message"] and "mlp_logits: uses" not in r["cells"][MLP]["message"]


def test_own_cells_cost_nothing_and_keep_their_outputs(batch):
    """Cells of the student's own: every forbidden name in a function no graded code calls, a cell that runs
    past the cell timeout (interrupted; the status stays graded, the message says so), and after the last graded
    cell one that would loop forever, which is not run: its outputs are those handed in."""
    r = result(batch, "own-cells")
    assert r["status"] == "graded", r["message"]
    assert cell_scores(batch, "own-cells") == POINTS
    assert "your own cell the one after activation-test ran past" in r["message"], r["message"]
    assert "timed_out" not in r
    last = executed_notebook(batch, "own-cells").cells[-1]
    assert last.get("execution_count") is None and "while True" in last.source
    assert [o.get("text") for o in last.outputs] == [OWN_OUTPUT + "\n"]


def _found(batch) -> dict:
    out = stdout_of_cells(executed_notebook(batch, "reader"))
    line = next((ln for ln in out.splitlines() if ln.startswith("FOUND=")), None)
    assert line is not None, f"the reader cell printed nothing usable:\n{out[:2000]}"
    return json.loads(line.removeprefix("FOUND="))


def test_reader_finds_nothing_private_and_gains_nothing(batch):
    need_sandbox()
    r = result(batch, "reader")
    assert r["status"] == "graded", r["message"]
    assert r["score"] == 0
    found = _found(batch)
    own = Path(found["cwd"])  # the kernel's folder: work/A/reader/kernel, or the kernel nursery's slot
    assert own.name == "kernel" and own.is_relative_to(batch["course"] / "work"), own
    targets, folders = reader_targets(batch["subs"], batch["course"])
    for path in targets:
        assert found["paths"][path] == "absent", f"the kernel can see {path}"
    private = {p.read_bytes() for p in [REFERENCE, SOURCE, ROOT / "_grading" / "gradebook.db",
                                        batch["subs"] / "solution" / NOTEBOOK] if p.exists()}
    import hashlib

    private_sha = {hashlib.sha256(b).hexdigest() for b in private}
    assert found["globbed"], "the search found nothing at all: it did not run"
    private_dirs = [ROOT / "solutions", ROOT / "_grading", ROOT / ".git", batch["subs"], batch["course"]]
    for path, sha in found["globbed"].items():
        assert sha not in private_sha, f"the kernel found a private file at {path}"
        assert not any(Path(path).is_relative_to(d) for d in private_dirs) or Path(path).is_relative_to(own), path
    assert not found["stolen"], found["stolen"]  # no file defining the answers was found
    # The repository shows only the library, the data and the venv (mounted read-only), and the way to
    # the kernel's own folder; solutions/ is not there at all; the course folder and the submissions
    # show nothing but the way to the kernel's own folder.
    back = [ROOT / "nlpcourse", ROOT / "data", Path(sys.prefix), Path(sys.base_prefix),
            Path(sys.executable).resolve().parent, own]
    allowed = {q for b in back for q in (b, *b.parents)}
    for folder in folders:
        listing = found["listings"][folder]
        if folder not in {str(q) for q in allowed}:  # not on the way to anything mounted: absent
            assert listing == "error: FileNotFoundError", (folder, listing)
            continue
        assert isinstance(listing, list), (folder, listing)
        visible = {Path(folder) / name for name in listing}
        assert visible <= allowed, f"the kernel sees {sorted(map(str, visible - allowed))} in {folder}"
    assert found["listings"][str(ROOT / "solutions")] == "error: FileNotFoundError"

    # the grader's own processes are out of sight (separate pid namespace)
    for cmd in found["processes"]:
        assert not any("grader.worker" in w or "grader.cli" in w or w.endswith("pytest") for w in cmd), cmd
    assert found["search_done"], f"the search did not finish in {found['search_seconds']} s"


def test_kernel_cannot_reach_the_host_network(batch):
    need_sandbox()
    found = _found(batch)
    assert found["network"].startswith("failed"), found["network"]
    assert batch["hits"] == [], "the kernel reached the test's HTTP server"


def test_history_printer_sees_only_what_holds_no_secret(batch):
    """IPython's input history shows the kernel every cell it ran, hidden tests included: they hold no
    secret (only record() calls; the inputs come from the grader, the verdict is reached outside).
    The points stay 0, and the feedback is withheld (test_feedback_for_every_graded_student)."""
    r = result(batch, "history-printer")
    assert r["status"] == "graded" and r["score"] == 0, r
    assert "record(" in stdout_of_cells(executed_notebook(batch, "history-printer"))


def test_kernel_cannot_forge_nor_redirect_the_graders_files(batch):
    """A notebook writes a full-marks result.json and recorded.json where the grader keeps its own, and
    plants symlinks where the grader writes its temporary files: the kernel sees only a folder of its
    own, so the grader's files are its own, and nothing on the host is written through a symlink."""
    r = result(batch, "state-forger")
    assert r["status"] == "graded" and r["score"] == 0, r
    folder = batch["course"] / "work" / ASSIGNMENT / "state-forger"
    for name in ("result.json", "recorded.json", "executed.ipynb", "job.json", "job.run.json"):
        assert not (folder / name).is_symlink() and (folder / name).is_file(), name
    assert not list(batch["tmp"].glob("written-through-symlink-*"))
    assert "forged grader state" in stdout_of_cells(executed_notebook(batch, "state-forger"))
    row = next(r for r in batch["rows"] if r["student_id"] == "state-forger")
    assert float(row["score"]) == 0


def test_malformed_notebooks_are_invalid(batch):
    for student in ("not-json", "not-notebook"):
        r = result(batch, student)
        assert r["status"] == "invalid", (student, r)
        assert r["score"] == 0 and "not a notebook" in r["message"], (student, r["message"])
        assert not r["executed"]


def test_renamed_notebook_is_graded_with_a_note(batch):
    r = result(batch, "renamed")
    assert r["status"] == "graded", r["message"]
    assert r["score"] == MAX_AUTOGRADED
    assert "renamed" in r["message"] and "homework.ipynb" in r["message"]


def test_folder_without_notebook_is_missing(batch):
    r = result(batch, "no-notebook")
    assert r["status"] == "missing", r
    assert r["score"] == 0


# ------------------------------------------------------------------ 5. feedback, and no leak anywhere


HIDDEN_LINES, SOLUTION_LINES = secret_lines()


def _feedback_files(batch) -> dict[str, Path]:
    return feedback_files(batch["course"], ASSIGNMENT)


def test_feedback_for_every_graded_student(batch):
    """One HTML file per executed submission, with the verdicts, loading nothing from the network; but
    none for history-printer, whose own cell printed IPython's input history (the hidden tests' source
    among it): that file is withheld, the command says so (exit 2), and the batch's others are written."""
    files = _feedback_files(batch)
    executed = {s for s in batch["how"] if result(batch, s)["executed"]}
    assert set(files) == executed - {"history-printer"}
    fb = batch["feedback"]
    assert fb.returncode == 2 and "withheld" in fb.stderr and "history-printer" in fb.stderr, fb.stderr
    assert not (batch["course"] / "feedback" / "history-printer" / ASSIGNMENT / "backprop.html").exists()
    for student, path in files.items():
        text = path.read_text()
        assert "cases passed" in text or "no result was recorded" in text or "not allow" in text, student
        assert not re.search(r"<script[^>]*\bsrc\s*=\s*[\"']?(https?:)?//", text, re.I), student
        assert not re.search(r"<link[^>]*\bhref\s*=\s*[\"']?(https?:)?//", text, re.I), student
        assert not re.search(r"@import\s+(url\()?[\"']?(https?:)?//", text, re.I), student
    assert "cases passed" in files["solution"].read_text()
    assert "NotImplementedError" in files["blank"].read_text()


def test_feedback_shows_no_hidden_test(batch):
    bad = {s: leaks(p, HIDDEN_LINES) for s, p in _feedback_files(batch).items()}
    assert not {s: v for s, v in bad.items() if v}


def test_feedback_of_blank_shows_no_solution(batch):
    assert leaks(_feedback_files(batch)["blank"], SOLUTION_LINES | HIDDEN_LINES) == []


# ------------------------------------------------------------------ 7. export


def test_export_has_one_row_per_student_folder(batch):
    rows = batch["rows"]
    assert [r["student_id"] for r in rows] == sorted(batch["how"])
    assert {"student_id", "score", "max_score", "status", "message"} <= set(rows[0])
    for row in rows:
        assert row["status"] in STATUSES, row
        r = result(batch, row["student_id"])
        assert row["status"] == r["status"]
        assert float(row["max_score"]) == MAX_AUTOGRADED + MAX_MANUAL
        assert float(row["score"]) == pytest.approx(r["score"]), row  # no manual grades entered yet
    by_id = {r["student_id"]: r for r in rows}
    assert float(by_id["solution"]["score"]) == MAX_AUTOGRADED
    assert by_id["solution"]["needs_manual_grade"] == "True" and by_id["blank"]["needs_manual_grade"] == "False"
    assert by_id["no-notebook"]["status"] == "missing" and by_id["not-json"]["status"] == "invalid"
    # what the grader ignored is flagged for the instructor (grader.notebook.tampering), and nothing else is
    edited = by_id["tests-edited"]["flags"]
    assert "edited the locked cell" in edited and "changed points" in edited, edited
    assert "deleted the test cells" in by_id["tests-deleted"]["flags"]
    for forger in ("record-forged", "outputs-forged"):
        assert "forging a hidden test" in by_id[forger]["flags"], by_id[forger]
    for honest in ("solution", "blank", "own-cells", "autograd", "renamed"):
        assert by_id[honest]["flags"] == "", by_id[honest]


# ------------------------------------------------------------------ 4. resume after a kill


def _children(parent: int, word: bytes) -> list[int]:
    """Pids of the live child processes of ``parent`` whose command line contains ``word``."""
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            stat = (proc / "stat").read_text()
            cmd = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent and word in cmd:
            pids.append(int(proc.name))
    return pids


def _alive(pids: list[int]) -> list[int]:
    out = []
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.append(pid)
    return out


def test_killed_batch_resumes_without_regrading_or_duplicates(tmp_path):
    from nbgrader.api import Gradebook

    subs, course = tmp_path / "submissions", tmp_path / "course"
    expected = {"s1-solution": MAX_AUTOGRADED, "s3-blank": 0.0, "s4-nothing": 0.0}
    write(submission(ASSIGNMENT), subs, "s1-solution", NOTEBOOK)
    # sgd_step steps the wrong way: loses the sgd point and the classifier it trains, nothing else
    bug = load_bugs(load_assignment(ASSIGNMENT))[-1]
    assert bug.loses == {SGD, TRAIN}, bug.name
    # s2 takes a while, so that it is surely in flight when the grader is killed
    # and forges the grader's state (a full-marks result.json) that a resumed run would otherwise trust
    slow = add_cell_after(with_bug(ASSIGNMENT, bug), "setup", "import time\ntime.sleep(6)\n")
    slow = add_cell_after(slow, "setup", state_forger(tmp_path / "written-through-symlink-"))
    write(slow, subs, "s2-bug", NOTEBOOK)
    write(release_notebook(ASSIGNMENT), subs, "s3-blank", NOTEBOOK)
    (subs / "s4-nothing").mkdir()
    cmd = [sys.executable, "-m", "grader.cli", "--course-dir", str(course), "autograde", ASSIGNMENT,
           "--submissions", str(subs), "--workers", "1", "--cell-timeout", "15", "--notebook-timeout", "150",
           "--memory-gib", "3"]
    work = course / "work" / ASSIGNMENT
    proc = subprocess.Popen(cmd, env=grader_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 300
        # kill it once s1 is recorded and s2 (in flight) has forged the grader's state
        while not (list(work.glob("*/recorded.json")) and list(work.glob("s2-bug*/**/forged.flag"))) \
                and time.monotonic() < deadline:
            assert proc.poll() is None, f"the batch ended before it could be killed:\n{proc.stdout.read()}"
            time.sleep(0.05)
        first = [p.parent.name.removesuffix("+new") for p in work.glob("*/recorded.json")]
        assert first == ["s1-solution"], first
        workers = _children(proc.pid, b"grader.worker")
        assert workers, "no grading worker was running"
    finally:
        try:  # the grader's own process group: its workers are in sessions of their own
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:  # it had already ended (the assertion above says why)
            pass
        proc.wait()
        proc.stdout.close()
    killed_at = time.time()
    first_result = work / "s1-solution" / "result.json"
    mtime = first_result.stat().st_mtime_ns
    assert not (work / "s3-blank" / "recorded.json").exists()
    # nothing of the killed batch goes on running: a worker left alone would go on writing into s2-bug's
    # folder while the rerun grades it again; its workers die with it, and their kernels with them
    deadline = time.monotonic() + 2.5  # s2-bug alone would take longer than that to finish
    while (_alive(workers) or _live_kernels(course)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(workers), "a grading worker outlived the killed grader"
    assert not _live_kernels(course), "a kernel outlived the killed grader"

    rerun = subprocess.run(cmd, env=grader_env(), capture_output=True, text=True, timeout=400, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert "s1-solution:" not in rerun.stdout, "the rerun graded again what was recorded"
    for student in ("s2-bug", "s3-blank", "s4-nothing"):
        assert f"{student}:" in rerun.stdout, rerun.stdout
    assert first_result.stat().st_mtime_ns == mtime
    for p in work.glob("*/result.json"):
        if p.parent.name != "s1-solution":
            assert p.stat().st_mtime > killed_at, f"{p} is left over from the killed run"

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", COURSE_ID) as gb:
        subs_in_gb = gb.assignment_submissions(ASSIGNMENT)
        names = sorted(s.student.id for s in subs_in_gb)
        assert names == ["s1-solution", "s2-bug", "s3-blank"], names  # one each; none for the empty folder
        for s in subs_in_gb:
            r = json.loads((work / s.student.id / "result.json").read_text())
            assert s.code_score == pytest.approx(r["score"]), s.student.id
    for student, score in expected.items():
        assert json.loads((work / student / "result.json").read_text())["score"] == pytest.approx(score), student
    bugged = json.loads((work / "s2-bug" / "result.json").read_text())
    assert {c for c, s in bugged["cells"].items() if s["score"] < POINTS[c]} == bug.loses, bugged
    assert not list(tmp_path.glob("written-through-symlink-*"))
    # a third run has nothing left to do
    again = subprocess.run(cmd, env=grader_env(), capture_output=True, text=True, timeout=200, cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert not re.search(r"^\S+: (graded|timeout|crashed|invalid|missing) ", again.stdout, re.M), again.stdout
    _killed_regrade_keeps_the_grades(cmd, course, tmp_path)


def _killed_regrade_keeps_the_grades(cmd: list[str], course: Path, tmp_path: Path) -> None:
    """A regrade (``--force``) killed while s2 is in flight: the results in force stay until new ones replace
    them, so ``export`` during the interruption lists every student as before, and the rerun gives the same CSV."""
    def exported(name: str) -> str:
        subprocess.run([sys.executable, "-m", "grader.cli", "--course-dir", str(course), "export", ASSIGNMENT,
                        "--csv", str(tmp_path / name)], env=grader_env(), check=True, capture_output=True)
        return (tmp_path / name).read_text()

    before, work = exported("before.csv"), course / "work" / ASSIGNMENT
    proc = subprocess.Popen(cmd + ["--force"], env=grader_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 300
        while not list(work.glob("s2-bug+new/**/forged.flag")) and time.monotonic() < deadline:
            assert proc.poll() is None, "the regrade ended before it could be killed"
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert exported("during.csv") == before
    rerun = subprocess.run(cmd + ["--force"], env=grader_env(), capture_output=True, text=True, timeout=400,
                           cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    assert exported("after.csv") == before
    assert sorted(p.name for p in work.iterdir()) == ["s1-solution", "s2-bug", "s3-blank", "s4-nothing"]
