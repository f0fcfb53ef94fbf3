"""Grade one submission: run it in a sandboxed kernel, then reach the verdict outside the kernel.

Run by ``grader autograde`` as ``python -m grader.worker --serve``: a few long-lived worker
processes, each grading one submission at a time, each submission in a kernel of its own (a crash,
a hang or a memory bomb takes down that kernel, at worst this worker, which is then replaced). The verdict is
computed here, in the grader's process, from what the hidden tests recorded; the kernel's own
idea of which tests passed is never read. :func:`finalize` is also called by the orchestrator when
it had to kill a worker, so a submission always ends with a result.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import torch
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError
from nbclient.util import ensure_async

from nlpcourse.checking import Case, save_cases
from nlpcourse.threads import use_threads

from .course import Assignment, load_assignment, load_reference
from .judging import judge_part, make_cases
from .notebook import (
    InvalidSubmission,
    StudentCode,
    cell_timeout,
    copied_from_library,
    forbidden_in_reach,
    is_autograded_test,
    is_solution,
    is_student_added,
    left_out,
    library_fingerprints,
    merge,
    nbgrader_meta,
    not_run,
    read_submission,
    recorded_names,
    skip_reason,
    tampering,
)
from .nursery import nursery_for, restore_after_kill
from .release import LEAK_MARKERS
from .sandbox import kernel_env, new_kernel_manager, sandbox_available, socket_folder

MAX_OUTPUT_BYTES = 64 * 2**20  # a recording larger than this is not read


@dataclass
class Job:
    """What one worker grades."""

    assignment: str  # assignment name
    student: str  # student id
    submission: str | None  # path of the submitted notebook (None: nothing submitted)
    workdir: str  # private folder for this submission; the kernel sees and writes only its kernel/ subfolder
    seed: int  # seeds the hidden-test inputs: the same for a given course, assignment and student
    cell_timeout: int = 60  # seconds per cell before the kernel is interrupted
    interrupt_grace: float = 10.0  # seconds an interrupted cell has to stop before the kernel is stopped
    memory_bytes: int = 4 * 2**30  # data-memory limit of the kernel (RLIMIT_DATA)
    hide: list[str] = field(default_factory=list)  # folders the kernel must not see
    note: str = ""  # remark carried into the message (e.g. "notebook was renamed from x.ipynb")
    #: the parts to grade (``grader autograde --parts``), whole test cells: None grades every part. The other test
    #: cells (visible and hidden tests) are not run and their cases not drawn: their scores are kept from ``kept_from``
    parts: list[str] | None = None
    kept_from: str | None = None  # work folder of the grading in force of this same notebook, or None: none to keep
    kept_why: str = ""  # why nothing is kept, for the message (``kept_from`` None under ``parts``)

    @classmethod
    def load(cls, path: Path) -> Job:
        return cls(**json.loads(path.read_text()))


@dataclass
class CellScore:
    score: float  # points earned
    max_score: float  # points available
    message: str  # what passed and what failed, for the feedback
    #: each part of the cell -> ``{"fraction": cases passed / cases, "failure": the first failing case's verdict, or
    #: why nothing was judged; "" when every case passed}``, for ``grader report`` (results written before it lack it)
    parts: dict[str, dict] = field(default_factory=dict)


def _load_recording(path: Path) -> tuple[list[dict] | None, str]:
    """Read what the kernel recorded for one part. The kernel owns the folder, so the file may be
    anything it made: it is read only if it is a regular file, reached through no symbolic link (a
    link could point at another student's recording, which the grader, outside the sandbox, could
    read), and small enough."""
    missing = "no result was recorded (the hidden test did not run, or stopped before the end)"
    if os.path.islink(path.parent) or not path.parent.is_dir():
        return None, "the outputs folder was replaced: no recording is read"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None, missing
    except OSError:
        return None, "the recorded result is not a regular file (a link?): it is not read"
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None, "the recorded result is not a regular file: it is not read"
        if info.st_size > MAX_OUTPUT_BYTES:
            return None, "the recorded result is too large to read"
        try:
            data = torch.load(fh, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - a damaged or hostile file
            return None, f"the recorded result cannot be read ({type(exc).__name__})"
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        return None, "the recorded result has the wrong format"
    return data, ""


def grade_cells(assignment: Assignment, reference, source_nb, merged_nb, workdir: Path,
                seed: int, cases: dict[str, list[Case]] | None = None,
                cells: set[str] | None = None) -> dict[str, CellScore]:
    """Score every autograded test cell (those of ``cells`` only, if given) from the recordings in
    ``workdir/outputs``."""
    points = {nbgrader_meta(c)["grade_id"]: float(nbgrader_meta(c).get("points", 0))
              for c in source_nb.cells if is_autograded_test(c)}
    if cells is not None:
        points = {cell: p for cell, p in points.items() if cell in cells}
    if cases is None:
        cases = make_cases(reference, seed, [n for n, part in reference.PARTS.items() if part.test_cell in points])
    code = student_code(merged_nb)
    roots = recorded_names([c.source for c in merged_nb.cells if cell_kind(c) == "hidden"])
    parts_by_cell: dict[str, list[tuple[str, Any]]] = {}
    for name, part in reference.PARTS.items():
        parts_by_cell.setdefault(part.test_cell, []).append((name, part))
    scores = {}
    for cell_id, max_points in points.items():
        lines, total, weight, outcomes = [], 0.0, 0.0, {}
        for name, part in parts_by_cell.get(cell_id, []):
            banned = forbidden_in_reach(code, name, tuple(part.solution_cells), tuple(part.forbidden),
                                        roots.get(name)) if part.forbidden else {}
            if banned:
                frac, msg = 0.0, f"uses {forbidden_message(banned)}, which this exercise does not allow"
            else:
                recording, why = _load_recording(workdir / "outputs" / f"{name}.pt")
                frac, msg = judge_part(part, cases[name], recording, why)
            total += part.weight * frac
            weight += part.weight
            lines.append(f"{name}: {msg}")
            # judge_part's "k/n cases passed; first failure: ..." (the first "; first failure: " is the judge's own:
            # what follows may be the student's), or why nothing was judged
            outcomes[name] = {"fraction": round(frac, 4),
                              "failure": "" if frac >= 1 else msg.partition("; first failure: ")[2] or msg}
        earned = round(max_points * total / weight, 2) if weight else 0.0
        scores[cell_id] = CellScore(earned, max_points, "\n".join(lines) or "no hidden tests", outcomes)
    return scores


def student_code(merged_nb) -> StudentCode:
    """The student's code of a merged notebook (answer cells and cells of their own), with the instructor's
    other code cells as the given code that the reach follows through (:class:`~grader.notebook.StudentCode`);
    the hidden tests are followed through too, never reported."""
    answers, given = {}, {}
    for i, c in enumerate(merged_nb.cells):
        if c.cell_type != "code":
            continue
        if c.get("metadata", {}).get("grader", {}).get("hidden_of"):
            given[f"hidden {i}"] = c.source  # its helpers are followed, like the given cells'
        elif is_solution(c) and not is_student_added(c):
            answers[str(nbgrader_meta(c).get("grade_id"))] = c.source
        elif is_student_added(c):
            answers[f"cell {i}"] = c.source
        elif not is_autograded_test(c):
            given[f"given {i}"] = c.source
    return StudentCode(answers, given)


def submission_flags(release, student, merged) -> list[str]:
    """What the instructor should look at, though it changed no score: tampering with the notebook
    (:func:`~grader.notebook.tampering`) and functions copied from the course library under other names
    (:func:`~grader.notebook.copied_from_library`)."""
    return tampering(release, student) + copied_from_library(student_code(merged), library_fingerprints())


def forbidden_message(banned: dict[str, list[str]]) -> str:
    """``torch.autograd (in numerical_gradient), .backward (in train, helper)``: each name with the
    student's statements that use it."""
    return ", ".join(f"{name} (in {', '.join(dict.fromkeys(where))})" for name, where in banned.items())


def _clean(text: str) -> str:
    """Kernel-written text for the feedback: one short line, nothing that looks like a hidden test."""
    lines = [ln for ln in str(text).splitlines() if not any(m in ln for m in LEAK_MARKERS)]
    return " ".join(lines)[:500]


def annotate(merged_nb, scores: dict[str, CellScore]) -> None:
    """Replace each test cell's outputs with the verdict: a stdout text (visible-test message, then
    the hidden-test result) and the score, which nbgrader reads (an error output means 0)."""
    for cell in merged_nb.cells:
        if not is_autograded_test(cell):
            continue
        s = scores.get(nbgrader_meta(cell)["grade_id"])
        if s is not None:
            annotate_one(cell, s)


def annotate_one(cell, s: CellScore) -> None:
    """One test cell's outputs: its visible tests' errors, then the verdict and the score."""
    visible = [f"Visible test: {_clean(o.get('ename', 'Error'))}: {_clean(o.get('evalue', ''))}"
               for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    text = "\n".join(visible + [f"Hidden tests ({s.score:g}/{s.max_score:g} points):", s.message]) + "\n"
    outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
    if s.score > 0:
        outputs.append(nbformat.v4.new_output("execute_result", data={"text/plain": repr(float(s.score))},
                                              execution_count=cell.get("execution_count")))
    else:
        outputs.append(nbformat.v4.new_output("error", ename="HiddenTestsFailed",
                                              evalue="no hidden test passed", traceback=[]))
    cell.outputs = outputs


class _Client(NotebookClient):
    """nbclient, noting which cells ran past the timeout, and stopping a kernel that does not answer.

    On a cell timeout nbclient interrupts the kernel (a message on the control channel) and waits on.
    A kernel that ignores SIGINT, runs a C loop that never checks for signals, or has broken its own
    message handling never answers, and would hold the worker until the notebook timeout. So each
    interrupt also starts a watchdog: if the same cell is still running ``grace`` seconds later, the
    kernel is shut down at once; nbclient then reports a dead kernel and the cells left do not run."""

    timed_out: list[int]  # indexes of the cells that ran past the timeout
    wedged: int | None  # index of the cell whose interrupt was not answered (the kernel was stopped)
    grace: float  # seconds an interrupted cell has to stop before its kernel is stopped
    cell_seconds: dict[int, float]  # index of each cell that ran -> its wall-clock seconds
    kernel_seconds: float  # from the start of execute to the first cell: the kernel's start-up
    _running: int | None  # index of the cell running now
    _watchdogs: list[asyncio.Task]
    _started: float

    def start_watching(self, grace: float) -> None:
        self.timed_out, self.wedged, self.grace, self._running, self._watchdogs = [], None, grace, None, []
        self.cell_seconds, self.kernel_seconds, self._started = {}, 0.0, time.monotonic()

    async def async_execute_cell(self, cell, cell_index, execution_count=None, store_history=True):
        if skip_reason(cell) or not_run(cell) or left_out(cell):  # a source cell the grader does not run (its
            # outputs say why), a cell of the student's own after the last graded cell (its outputs are the
            # student's), or a test cell of a part that this run does not grade (autograde --parts)
            return cell
        if not self.cell_seconds and not self.kernel_seconds:
            self.kernel_seconds = time.monotonic() - self._started
        self._running = cell_index
        start = time.monotonic()
        try:
            return await super().async_execute_cell(cell, cell_index, execution_count, store_history)
        finally:
            self._running = None
            self.cell_seconds[cell_index] = time.monotonic() - start

    async def _async_handle_timeout(self, timeout, cell=None):
        index = self._running if self._running is not None else -1
        if index not in self.timed_out:  # the first interrupt of this cell (nbclient may repeat it)
            self.timed_out.append(index)
            self._watchdogs.append(asyncio.ensure_future(self._stop_if_unanswered(index)))
        return await super()._async_handle_timeout(timeout, cell)

    async def _stop_if_unanswered(self, index: int) -> None:
        await asyncio.sleep(self.grace)
        if self._running == index and self.wedged is None:
            self.wedged = index
            await ensure_async(self.km.shutdown_kernel(now=True))
            # nbclient stopped polling the kernel's life at the timeout: end the wait for the reply as its
            # poller would, which makes nbclient report the dead kernel now rather than a timeout later
            if self.task_poll_for_reply is not None:
                self.task_poll_for_reply.cancel()

    async def async_execute(self, reset_kc: bool = False, **kwargs):
        try:
            return await super().async_execute(reset_kc=reset_kc, **kwargs)
        finally:
            for task in self._watchdogs:
                task.cancel()


def write_result(workdir: Path, job: Job, status: str, message: str, scores: dict[str, CellScore],
                 executed=None, seconds: float | None = None, timing: dict[str, float] | None = None,
                 timed_out: list[str] | None = None, flags: list[str] | None = None,
                 by_part: dict | None = None) -> dict:
    """Write ``executed.ipynb`` then ``result.json``, each atomically (result last: it marks completion).
    ``timed_out``: the cells that ran past their time limit, for ``grader report`` (absent when none did, and
    from results written before it). ``flags``: what the submission changed that the grader ignored
    (:func:`~grader.notebook.tampering`; absent when nothing). ``by_part``: a run of some parts only
    (:func:`keep_the_others`), whose ``parts``, ``kept`` and ``not_graded`` cells the result lists (absent in a
    full run)."""
    if executed is not None:
        tmp = workdir / "executed.ipynb.tmp"
        nbformat.write(executed, str(tmp))
        tmp.replace(workdir / "executed.ipynb")
    result = {
        "student": job.student, "assignment": job.assignment, "status": status,
        "message": (job.note + "; " if job.note else "") + message,
        "score": round(sum(s.score for s in scores.values()), 2),
        "max_score": round(sum(s.max_score for s in scores.values()), 2),
        "cells": {k: asdict(v) for k, v in scores.items()},
        "executed": executed is not None,
    }
    if seconds is not None:
        result["seconds"] = round(seconds, 1)  # the worker's time on this submission, kernel start included
    if timing:
        result["timing"] = {k: round(v, 2) for k, v in timing.items()}  # where those seconds went
    if timed_out:
        result["timed_out"] = timed_out
    if flags:
        result["flags"] = flags
    if by_part is not None:
        result.update(by_part)
    tmp = workdir / "result.json.tmp"
    tmp.write_text(json.dumps(result, indent=1))
    tmp.replace(workdir / "result.json")
    return result


def finalize(job: Job, status: str, message: str) -> dict:
    """Result for a submission whose run did not finish (killed for time or memory): score what was
    recorded before it stopped; the notebook is the rebuilt one, without outputs."""
    a = load_assignment(job.assignment)
    reference = load_reference(a)
    workdir = Path(job.workdir)
    restore_after_kill(workdir / "kernel")
    source = nbformat.read(str(a.source), as_version=4)
    merged, flags = source, []
    if job.submission:
        try:
            release, student = nbformat.read(str(a.release), as_version=4), read_submission(Path(job.submission))
            merged, _ = merge(source, release, student)
            flags = submission_flags(release, student, merged)
        except InvalidSubmission:
            pass
    graded = graded_cells(reference, job.parts)
    scores = grade_cells(a, reference, source, merged, workdir / "kernel", job.seed, cells=graded)
    annotate(merged, scores)
    scores, by_part, note = keep_the_others(job, merged, scores, graded)
    return write_result(workdir, job, status, "; ".join(filter(None, [message, note])), scores, merged, flags=flags,
                        by_part=by_part)


def zero_scores(a: Assignment) -> dict[str, CellScore]:
    source = nbformat.read(str(a.source), as_version=4)
    return {nbgrader_meta(c)["grade_id"]: CellScore(0.0, float(nbgrader_meta(c).get("points", 0)), "not graded")
            for c in source.cells if is_autograded_test(c)}


def _kernel_folder(workdir: Path) -> Path:
    """``workdir/kernel``, the only folder the kernel sees and writes: never the grader's own files next
    to it (result.json, job.json...), which it could otherwise forge for a resumed run, or plant
    symlinks in that the grader would write through."""
    kdir = workdir / "kernel"
    (kdir / "outputs").mkdir(parents=True, exist_ok=True)
    os.chmod(kdir, 0o777)  # the sandboxed kernel runs as another user
    os.chmod(kdir / "outputs", 0o777)
    return kdir


def execute(merged, job: Job, kdir: Path) -> tuple[str, str, dict[str, float], list[str]]:
    """Run the merged notebook in a sandboxed kernel; return the status, what went wrong (if anything), where
    the time went (:func:`cell_times`) and the cells that ran past their time limit (:func:`_timed_out_cell`).
    The kernel is forked by this worker's nursery where it has one (``kdir`` moves into the nursery's slot for
    the run, then back), else started by bwrap."""
    nursery = nursery_for(Path(job.workdir).parent.parent, [Path(h) for h in job.hide])
    if nursery is None:
        sockets = socket_folder()
        try:
            return _execute(merged, job, kdir, sockets, None)
        finally:
            shutil.rmtree(sockets, ignore_errors=True)
    inside = nursery.enter(kdir)
    try:
        return _execute(merged, job, inside, nursery.sockets, nursery)
    finally:
        nursery.leave()


def _execute(merged, job: Job, kdir: Path, sockets: Path, nursery) -> tuple[str, str, dict[str, float], list[str]]:
    env = kernel_env(kdir, {"NLPCOURSE_GRADER_INPUTS": str(kdir / "inputs"),
                            "NLPCOURSE_GRADER_OUTPUTS": str(kdir / "outputs")})
    km = new_kernel_manager(kdir, [Path(h) for h in job.hide], job.memory_bytes, sockets, nursery)
    client = _Client(merged, km=km, timeout=job.cell_timeout, allow_errors=True, interrupt_on_timeout=True,
                     timeout_func=lambda cell: cell_timeout(cell, job.cell_timeout),
                     record_timing=False, shutdown_kernel="immediate", startup_timeout=120,
                     resources={"metadata": {"path": str(kdir)}})
    client.start_watching(job.interrupt_grace)
    status, message = "graded", ""
    try:
        # cleanup_kc: nbclient shuts down only kernels it started itself; this worker lives on after
        # the submission, so without it every kernel would outlive its submission.
        client.execute(env=env, stdout=open(os.devnull, "w"), stderr=open(os.devnull, "w"), cleanup_kc=True)
    except DeadKernelError:
        status = "crashed"
        ran = sum(1 for c in merged.cells if c.cell_type == "code" and c.get("execution_count"))
        message = (f"the kernel died after {ran} code cells (os._exit, a crash, or the "
                   f"{job.memory_bytes / 2**30:g} GiB memory limit); later cells did not run")
    except Exception as exc:  # noqa: BLE001 - nbclient/kernel start-up failures
        status = "crashed"
        message = f"the notebook could not be run: {type(exc).__name__}: {str(exc)[:300]}"
    return (*_timeout_status(merged, job, client, status, message), cell_times(merged, client),
            [_timed_out_cell(merged, i) for i in client.timed_out if i < 0 or not is_student_added(merged.cells[i])])


def cell_kind(cell) -> str:
    """What a cell of a merged notebook is, for the time profile: ``hidden`` (a test cell's hidden part),
    ``visible`` (its visible tests), ``answer``, ``added`` (by the student) or ``given`` (set-up, helpers)."""
    if cell.get("metadata", {}).get("grader", {}).get("hidden_of"):
        return "hidden"
    if is_autograded_test(cell):
        return "visible"
    if is_student_added(cell):
        return "added"
    return "answer" if is_solution(cell) else "given"


def cell_times(merged, client: _Client) -> dict[str, float]:
    """Seconds of the kernel's start-up, then of each kind of cell (:func:`cell_kind`), summed."""
    times = {"kernel": client.kernel_seconds}
    for index, seconds in client.cell_seconds.items():
        kind = cell_kind(merged.cells[index])
        times[kind] = times.get(kind, 0.0) + seconds
        if os.environ.get("GRADER_PROFILE_CELLS"):
            cell = merged.cells[index]
            gid = nbgrader_meta(cell).get("grade_id") or cell.get("metadata", {}).get("grader", {}).get("hidden_of", "")
            times[f"{index}:{kind}:{gid}"] = seconds
    return times


def _own_cell_name(merged, index: int) -> str:
    """A cell of the student's own, named by the instructor's cell before it (``the one after linear-test``)."""
    before = next((nbgrader_meta(c).get("grade_id") for c in reversed(merged.cells[:index])
                   if nbgrader_meta(c).get("grade_id")), None)
    return f"the one after {before}" if before else "the one before the first answer"


def _cell_name(merged, index: int) -> str:
    return str(nbgrader_meta(merged.cells[index]).get("grade_id") or f"cell {index}") if index >= 0 else "a cell"


def _timed_out_cell(merged, index: int) -> str:
    """A cell that ran past its limit, for ``result.json``'s ``timed_out``: its ``grade_id``, that of the test cell
    whose hidden tests it runs (``"train-test (hidden tests)"``), else ``cell N``."""
    hidden_of = merged.cells[index].get("metadata", {}).get("grader", {}).get("hidden_of") if index >= 0 else None
    return f"{hidden_of} (hidden tests)" if hidden_of else _cell_name(merged, index)


def _timeout_status(merged, job: Job, client: _Client, status: str, message: str) -> tuple[str, str]:
    """The status once the timeouts are taken into account: a kernel stopped by the watchdog did not
    crash; its cell timed out and the kernel stopped answering."""
    if client.wedged is not None:
        limit = cell_timeout(merged.cells[client.wedged], job.cell_timeout) if client.wedged >= 0 else job.cell_timeout
        return "timeout", (f"{_cell_name(merged, client.wedged)} ran past {limit} s and did not stop "
                           f"within {job.interrupt_grace:g} s of the interrupt: the kernel stopped answering and "
                           "was stopped; later cells did not run")
    graded = [i for i in client.timed_out if i < 0 or not is_student_added(merged.cells[i])]
    own = [i for i in client.timed_out if i not in graded]
    if own:  # a cell of the student's own never changes the status: it was interrupted, the grading went on
        note = (f"your own cell{'s' if len(own) > 1 else ''} {', '.join(_own_cell_name(merged, i) for i in own)} ran "
                f"past {job.cell_timeout} s and {'were' if len(own) > 1 else 'was'} interrupted (not graded)")
        message = "; ".join(filter(None, [message, note]))
    if graded and status == "graded":
        names = ", ".join(f"{_cell_name(merged, i)} ran past {cell_timeout(merged.cells[i], job.cell_timeout)} s"
                          for i in graded if i >= 0)
        return "timeout", f"{names or f'a cell ran past {job.cell_timeout} s'} and was interrupted"
    return status, message


def _summary(scores: dict[str, CellScore], message: str, report: dict, note: str = "") -> str:
    """The result's message: points, then what went wrong and what was noticed (``note``: what a run of some
    parts only graded, kept and left ungraded)."""
    details = [d for d in (message, note) if d]
    if report["missing"]:
        details.append(f"answer cells missing from the submission: {', '.join(report['missing'])}")
    if not sandbox_available():
        details.append("graded without the bubblewrap sandbox")
    total = sum(s.score for s in scores.values())
    max_total = sum(s.max_score for s in scores.values())
    return "; ".join([f"{total:g}/{max_total:g} autograded points"] + details)


def run(job: Job) -> dict:
    """Grade one submission: merge it into the source notebook, run it, judge what it recorded."""
    started = time.monotonic()
    a = load_assignment(job.assignment)
    reference = load_reference(a)
    workdir = Path(job.workdir)
    kdir = _kernel_folder(workdir)
    if job.submission is None:
        return write_result(workdir, job, "missing", f"no {a.notebook} submitted", zero_scores(a))
    try:
        student = read_submission(Path(job.submission))
    except InvalidSubmission as exc:
        return write_result(workdir, job, "invalid", str(exc), zero_scores(a))
    source, release = nbformat.read(str(a.source), as_version=4), nbformat.read(str(a.release), as_version=4)
    merged, report = merge(source, release, student)
    flags = submission_flags(release, student, merged)
    graded = graded_cells(reference, job.parts)
    cases = make_cases(reference, job.seed, None if graded is None else job.parts)
    save_cases(kdir / "inputs", cases)
    if graded is not None:
        leave_out(merged, graded)
    for path in [*(kdir / "inputs").iterdir(), kdir / "inputs"]:
        os.chmod(path, 0o555 if path.is_dir() else 0o444)
    prepared = time.monotonic()
    status, message, timing, timed_out = execute(merged, job, kdir)
    ran = time.monotonic()
    scores = grade_cells(a, reference, source, merged, kdir, job.seed, cases, graded)
    annotate(merged, scores)
    scores, by_part, note = keep_the_others(job, merged, scores, graded)
    timing.update(prepare=prepared - started, judge=time.monotonic() - ran)
    return write_result(workdir, job, status, _summary(scores, message, report, note), scores, merged,
                        seconds=time.monotonic() - started, timing=timing, timed_out=timed_out, flags=flags,
                        by_part=by_part)


# ------------------------------------------------------------------ a run of some parts only (autograde --parts)


def graded_cells(reference, parts: list[str] | None) -> set[str] | None:
    """The test cells that a run grades: those of ``parts`` (None: every cell)."""
    return None if parts is None else {reference.PARTS[p].test_cell for p in parts}


def leave_out(merged, graded: set[str]) -> None:
    """Mark every test cell not in ``graded``, and the cell of its hidden tests, not to be run (:func:`left_out`)."""
    for cell in merged.cells:
        meta = cell.get("metadata", {}).get("grader", {})
        gid = meta.get("hidden_of") if isinstance(meta, dict) and meta.get("hidden_of") else \
            nbgrader_meta(cell).get("grade_id") if is_autograded_test(cell) else None
        if gid is not None and gid not in graded:
            cell.metadata.setdefault("grader", {})["left_out"] = True
            cell.outputs, cell.execution_count = [], None


def _earlier(folder: str | None) -> tuple[dict, dict[str, list]]:
    """The result in force in ``folder`` and the outputs of each test cell of its executed notebook."""
    if not folder:
        return {}, {}
    try:
        earlier = json.loads((Path(folder) / "result.json").read_text())
        shown = Path(folder) / "executed.ipynb"
        cells = nbformat.read(str(shown), as_version=4).cells if shown.is_file() else []
    except (OSError, ValueError):
        return {}, {}
    return earlier, {nbgrader_meta(c)["grade_id"]: c.outputs for c in cells if is_autograded_test(c)}


def keep_the_others(job: Job, merged_nb, scores: dict[str, CellScore],
                    graded: set[str] | None) -> tuple[dict[str, CellScore], dict | None, str]:
    """Every test cell's score once a run of some parts only is done: the graded cells' ``scores``, the others'
    kept from the grading in force (``job.kept_from``: its score, and its verdict as its executed notebook shows
    it), else recorded as not graded (0 points here, no score in the gradebook). Returns the scores in the
    notebook's order, the result's ``parts``/``kept``/``not_graded`` (None for a full run) and the message's note."""
    if graded is None:
        return scores, None, ""
    earlier, shown = _earlier(job.kept_from)
    before, ungraded_before = earlier.get("cells") or {}, set(earlier.get("not_graded") or [])
    why = job.kept_why or "no earlier grading of this notebook to keep it from"
    out, kept, not_graded = {}, [], []
    fields = set(CellScore.__dataclass_fields__)
    for cell in merged_nb.cells:
        if not is_autograded_test(cell):
            continue
        gid, max_points = nbgrader_meta(cell)["grade_id"], float(nbgrader_meta(cell).get("points", 0))
        if gid in graded:
            out[gid] = scores[gid]
        elif gid in before and gid not in ungraded_before:
            out[gid] = CellScore(**{k: v for k, v in before[gid].items() if k in fields})
            kept.append(gid)
            if gid in shown:
                cell.outputs = shown[gid]
            else:
                annotate_one(cell, out[gid])
        else:
            text = before[gid]["message"] if gid in before else f"not graded: this run graded other parts ({why})"
            out[gid] = CellScore(0.0, max_points, text)
            not_graded.append(gid)
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text + "\n")]
    note = f"graded {', '.join(sorted(graded))} only (autograde --parts)"
    if kept:
        note += f"; kept {', '.join(kept)} from the grading before"
        if earlier.get("status") not in (None, "graded"):
            note += f", which ended '{earlier['status']}'"
    if not_graded:
        note += f"; not graded: {', '.join(not_graded)} ({why})"
    return out, {"parts": list(job.parts or []), "kept": kept, "not_graded": not_graded}, note


def serve() -> None:
    """Grade the jobs whose paths arrive one per line on stdin; answer ``done`` for each on stdout.

    One process serves many submissions, so that Python, torch and nbclient are imported once per
    worker rather than once per submission. Whatever the job does, the reply comes: an unexpected
    error becomes a ``crashed`` result.
    """
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything else printed goes to the log, not into the replies
    for line in sys.stdin:
        path = Path(line.strip())
        if not line.strip():
            continue
        job = Job.load(path)
        try:
            run(job)
        except Exception as exc:  # noqa: BLE001 - the batch goes on
            finalize(job, "crashed", f"the grader failed on this submission: {type(exc).__name__}: {exc}")
        reply.write("done\n")
        reply.flush()


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    # The workers run side by side, one per core, beside their kernels (one thread each): a judge with
    # torch's default thread pool fights them for the cores, and a long sequential check (a 30,000-step
    # LSTM over a test text) then runs ~50x slower than on one thread (nlpcourse/threads.py).
    use_threads("judge")
    if args == ["--serve"]:
        serve()
        return 0
    if len(args) != 1:
        print("usage: python -m grader.worker JOB.json | --serve", file=sys.stderr)
        return 2
    run(Job.load(Path(args[0])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
