"""``grader autograde``: grade a folder of submissions in parallel, unattended and resumably.

For each student: a worker process runs the submission in a sandboxed kernel and reaches the
verdict outside it (:mod:`grader.worker`); then this process, and only this one, writes the grades
into nbgrader's gradebook, through nbgrader's own ``Autograde`` converter with its execution step
removed (the notebook it reads is the one the worker ran and scored). Progress is kept per student
on disk: a run that is killed and started again grades only what has no recorded result, and the
gradebook holds one submission per student, so no grade is lost or counted twice.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import logging
import os
import queue
import resource
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.converters import Autograde
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import (
    AssignLatePenalties,
    CheckCellMetadata,
    DeduplicateIds,
    LimitOutput,
    OverwriteCells,
    OverwriteKernelspec,
    SaveAutoGrades,
)

from .collect import COLLECT_NOTE, LMS_NOTE
from .course import (
    COURSE_ID,
    REPO,
    SOLUTIONS,
    Assignment,
    GraderError,
    load_assignment,
    load_reference,
    nbgrader_config,
    safe_id,
)
from .worker import Job, finalize

log = logging.getLogger("grader")


@dataclass
class Submission:
    """A student folder found in the submissions folder."""

    student: str  # student id (the folder's name)
    notebook: Path | None  # the notebook to grade, None if there is none
    status_hint: str = ""  # "invalid" / "missing" when no notebook can be graded
    note: str = ""  # e.g. "notebook renamed from hw.ipynb"
    handed_in: dict = field(default_factory=dict)  # what is known of the hand-in (HANDED_IN)


def find_submissions(a: Assignment, folder: Path, nested_only: bool = False) -> list[Submission]:
    """``folder/<student>/<notebook>`` or nbgrader's ``folder/<student>/<assignment>/<notebook>``.

    ``nested_only`` (several assignments graded from one folder): only nbgrader's layout, and a student
    folder without ``<assignment>/`` handed nothing in for this assignment (it is not listed, not missing)."""
    if not folder.is_dir():
        raise GraderError(f"submissions folder {folder} does not exist")
    subs = []
    for d in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if nested_only and not (d / a.name).is_dir():
            continue
        try:
            student = safe_id(d.name, "student id")
        except GraderError as exc:
            log.warning("skipping %s: %s", d, exc)
            continue
        subs.append(_find_notebook(a, d, student))
    return subs


def _find_notebook(a: Assignment, d: Path, student: str) -> Submission:
    base = d / a.name if (d / a.name).is_dir() else d
    sub = _which_notebook(a, d, base, student)
    sub.handed_in = handed_in(base, sub.notebook)
    return sub


def _which_notebook(a: Assignment, d: Path, base: Path, student: str) -> Submission:
    nb = base / a.notebook
    if nb.is_file():
        return Submission(student, nb)
    others = sorted(p for p in base.glob("*.ipynb") if p.is_file() and not p.name.startswith("."))
    if len(others) == 1:
        return Submission(student, others[0], note=f"notebook renamed: graded {others[0].name} as {a.notebook}")
    if others:
        return Submission(student, None, "invalid", f"{len(others)} notebooks and none named {a.notebook}: "
                                                    f"{', '.join(p.name for p in others)}")
    noted = _collect_note(base / COLLECT_NOTE)
    if noted:
        return Submission(student, None, *noted)
    return Submission(student, None, "missing", f"no {a.notebook} in {d.name}/")


#: In each work folder: what is known of the hand-in, for the late policy and the LMS exports
#: (``source``: canvas, moodle or file; ``lms_id``, ``name``, ``late_flag``, ``submitted_at``, ``file``, ``roster``).
HANDED_IN = "handed_in.json"
_HANDED_IN_KEYS = ("lms_id", "name", "late_flag", "submitted_at", "file")


def handed_in(base: Path, notebook: Path | None) -> dict:
    """What ``grader collect`` read from the LMS archive (its ``lms.json`` beside the notebook), or else the
    notebook file's own modification time (UTC): the time the late policy reads."""
    note = base / LMS_NOTE
    try:
        lms = json.loads(note.read_text()) if note.is_file() and not note.is_symlink() else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        lms = None
    if isinstance(lms, dict) and lms.get("lms") in ("canvas", "moodle"):
        roster = lms.get("roster") if isinstance(lms.get("roster"), dict) else {}
        return {"source": lms["lms"], **{k: lms.get(k) for k in _HANDED_IN_KEYS}, "roster": roster}
    when = None
    if notebook is not None:
        when = datetime.fromtimestamp(notebook.stat().st_mtime, UTC).isoformat(timespec="seconds")
    return {"source": "file", **dict.fromkeys(_HANDED_IN_KEYS), "submitted_at": when, "roster": {}}


def write_handed_in(wd: Path, info: dict) -> None:
    """``HANDED_IN`` in a work folder, rewritten only when it changes (atomically)."""
    path = wd / HANDED_IN
    if path.is_file() and _read_json(path) == info:
        return
    tmp = wd / (HANDED_IN + ".tmp")
    tmp.write_text(json.dumps(info, indent=1) + "\n")
    tmp.replace(path)


def _collect_note(path: Path) -> tuple[str, str] | None:
    """``(status, why)`` from the note ``grader collect`` leaves for a student it could collect no notebook of
    (invalid: what they handed in cannot be graded; missing: nothing handed in), None without a readable one."""
    try:
        note = json.loads(path.read_text()) if path.is_file() and not path.is_symlink() else None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(note, dict) or note.get("status") not in ("invalid", "missing"):
        return None
    return note["status"], f"not collected: {str(note.get('why', ''))[:300]}"


def _sha256(path: Path | None) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path else "none"


SECRET = ".grading_secret"


def install_secret(course_dir: Path, secret: Path) -> None:
    """Put the grading secret of ``secret`` (a file) into ``course_dir``, as every shard of a class needs the
    same one (the per-student seeds come from it); refused where the course folder holds a different one."""
    try:
        value = secret.read_text().strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise GraderError(f"--secret {secret}: cannot be read ({exc})") from None
    if not value:
        raise GraderError(f"--secret {secret} is empty")
    mine = course_dir / SECRET
    if mine.exists():
        if mine.read_text().strip() != value:
            raise GraderError(f"{mine} holds another grading secret than {secret}: the per-student seeds would "
                              "differ from the other shards'; use an empty course folder for this shard")
        return
    course_dir.mkdir(parents=True, exist_ok=True)
    tmp = mine.with_name(SECRET + ".tmp")
    tmp.write_text(value)
    os.chmod(tmp, 0o600)
    tmp.replace(mine)


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` (0 <= I < N): the I-th of N slices of the class."""
    index, _, count = text.partition("/")
    if not (index.strip().isdigit() and count.strip().isdigit()) or not 0 <= int(index) < int(count):
        raise GraderError(f"--shard {text!r}: expected I/N with 0 <= I < N (0/3, 1/3 and 2/3 are the three shards "
                          "of 3; a Kubernetes Indexed Job's $JOB_COMPLETION_INDEX and a Slurm array's "
                          "$SLURM_ARRAY_TASK_ID from --array=0-(N-1) count the same way)")
    return int(index), int(count)


def shard_students(submissions: Path, shard: tuple[int, int]) -> list[str]:
    """The students of one shard: every student folder's id in sorted order, the k-th to shard k % N, whatever
    the assignment (a student is always graded by the same shard). Deterministic, and about N equal slices."""
    index, count = shard
    every = sorted(p.name for p in submissions.iterdir()
                   if p.is_dir() and not p.name.startswith(".") and "+" not in p.name)
    return every[index::count]


SHARD = "shard.json"


def claim_shard(course_dir: Path, names: list[str], shard: tuple[int, int], students: list[str]) -> None:
    """Write ``shard.json`` (which slice this course folder grades), or check the one there is the same slice:
    a course folder grades one shard; a rerun of it (Kubernetes retries a failed pod) resumes."""
    path = course_dir / SHARD
    claim = {"shard": shard[0], "of": shard[1]}
    if path.is_file():
        held = _read_json(path)
        if {k: held.get(k) for k in claim} != claim:
            raise GraderError(f"{course_dir} grades shard {held.get('shard')}/{held.get('of')}, not "
                              f"{shard[0]}/{shard[1]}: give each shard a course folder of its own")
        names = sorted(set(held.get("assignment", [])) | set(names))
    tmp = path.with_name(SHARD + ".tmp")
    tmp.write_text(json.dumps({"assignment": names, **claim, "students": students}, indent=1) + "\n")
    tmp.replace(path)


def _seed(course_dir: Path, assignment: str, student: str) -> int:
    """Per-student seed of the hidden-test inputs, from a secret kept in the course folder."""
    secret_file = course_dir / SECRET
    if not secret_file.exists():
        secret_file.write_text(secrets.token_hex(16))
        os.chmod(secret_file, 0o600)
    digest = hashlib.sha256(f"{secret_file.read_text().strip()}:{assignment}:{student}".encode()).hexdigest()
    return int(digest[:12], 16)


try:  # Linux: prctl(PR_SET_PDEATHSIG), so that a worker dies with the grader
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):
    _prctl = None


def _limit_memory(nbytes: int) -> Callable[[], None]:
    """Run in the worker before it starts: its memory limit, and SIGKILL when the grader dies (a worker
    outliving a killed grader would go on writing into a folder that the next run is regrading)."""
    parent = os.getpid()

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_DATA, (nbytes, nbytes))  # memory written, not reserved: see sandbox.py
        if _prctl is not None:
            _prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
            if os.getppid() != parent:  # the grader died before the line above
                os._exit(1)
    return apply


class WorkerProcess:
    """A long-lived ``python -m grader.worker --serve`` with a memory limit, replaced when it dies or
    when a submission runs past the notebook time limit (its whole process group is killed)."""

    def __init__(self, memory_bytes: int, log_path: Path):
        self.memory_bytes = memory_bytes
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def _start(self) -> subprocess.Popen:
        logf = open(self.log_path, "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "grader.worker", "--serve"], cwd=str(REPO),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=logf,
                                     start_new_session=True, preexec_fn=_limit_memory(self.memory_bytes),
                                     text=True, bufsize=1)
        logf.close()
        return self.proc

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()
        self.proc = None

    def stop(self, grace: float = 10.0) -> None:
        """End the worker the gentle way (end of its input), so that it closes its kernel nursery; kill
        it if it has not ended within ``grace`` seconds."""
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(grace)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()

    def grade(self, job: Job, job_path: Path, notebook_timeout: int) -> dict:
        proc = self.proc if self.proc is not None and self.proc.poll() is None else self._start()
        reply: list[str] = []
        try:
            proc.stdin.write(f"{job_path}\n")
            proc.stdin.flush()
            reader = threading.Thread(target=lambda: reply.append(proc.stdout.readline()), daemon=True)
            reader.start()
            reader.join(notebook_timeout)
        except (BrokenPipeError, OSError):
            pass
        if reader.is_alive():
            self.kill()
            return finalize(job, "timeout", f"the notebook ran past the {notebook_timeout} s limit and was "
                                             "stopped; scored on what the hidden tests recorded before that")
        result_path = Path(job.workdir) / "result.json"
        if reply and reply[0].strip() == "done" and result_path.exists():
            return json.loads(result_path.read_text())
        code = proc.poll()
        self.kill()
        return finalize(job, "crashed", f"the grading worker stopped (exit {code}) on this submission")


def record_in_gradebook(a: Assignment, course_dir: Path, student: str, executed: Path) -> None:
    """nbgrader bookkeeping for one scored notebook: its Autograde converter without execution."""
    dest = course_dir / "executed" / student / a.name
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(executed, dest / a.notebook)
    c = nbgrader_config(course_dir)
    c.CourseDirectory.submitted_directory = "executed"
    c.CourseDirectory.assignment_id = a.name
    c.CourseDirectory.student_id = student
    c.Autograde.force = True
    c.Autograde.create_student = True
    c.Autograde.sanitize_preprocessors = [DeduplicateIds, OverwriteKernelspec, OverwriteCells, CheckCellMetadata]
    # CheckCellMetadata validates once, in the sanitize step: the steps after it change no cell's metadata
    c.Autograde.autograde_preprocessors = [LimitOutput, SaveAutoGrades, AssignLatePenalties]
    app = Autograde(coursedir=CourseDirectory(config=c), config=c)
    app.log.setLevel(logging.ERROR)
    app.start()


def mark_not_graded(course_dir: Path, a: Assignment, student: str, cells: set[str]) -> None:
    """Leave the autograded ``cells`` without a score in the gradebook (a run of other parts had none to keep
    for them): no automatic score, flagged as needing a grade, never 0 points in silence."""
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", COURSE_ID) as gb:
        for cell in sorted(cells):
            grade = gb.find_grade(cell, a.notebook_id, a.name, student)
            grade.auto_score, grade.needs_manual_grade = None, True
        gb.db.commit()


def gradebook_scores(course_dir: Path, a: Assignment, student: str) -> dict[str, float] | None:
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", COURSE_ID) as gb:
        try:
            nb = gb.find_submission_notebook(a.notebook_id, a.name, student)
        except MissingEntry:
            return None
        return {g.name: g.auto_score for g in nb.grades if g.auto_score is not None}


@dataclass
class Limits:
    """How much each submission may take."""

    workers: int = 2  # submissions graded at once, each by a worker process of its own
    cell_timeout: int = 60  # seconds a cell may run before its kernel is interrupted
    notebook_timeout: int = 900  # seconds a whole notebook may run before its worker is killed
    memory_gib: float = 4.0  # data-memory limit of each kernel (RLIMIT_DATA)
    interrupt_grace: float = 10.0  # seconds an interrupted cell has to stop before its kernel is stopped

    def check(self) -> None:
        if self.workers < 1:
            raise GraderError(f"--workers must be >= 1, got {self.workers}")
        for name in ("cell_timeout", "notebook_timeout", "memory_gib", "interrupt_grace"):
            if getattr(self, name) <= 0:
                raise GraderError(f"--{name.replace('_', '-')} must be > 0, got {getattr(self, name)}")


def check_ready(a: Assignment, course_dir: Path) -> None:
    """The gradebook knows the assignment, and ``notebooks/`` is what a release of ``solutions/`` makes
    today (answer cells missing from a submission are filled from the release: it must be current). The
    fresh release that the comparison builds is generated against this course's gradebook, which records the
    assignment there: nbgrader's autograde needs it to know the assignment's cells."""
    from .release import is_up_to_date

    fresh, why = is_up_to_date(a.name, course_dir)
    if not fresh:
        raise GraderError(f"the release is out of date with solutions/{a.name}: {why}")


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text())


def plan(a: Assignment, sub: Submission, course_dir: Path, limits: Limits, hide: list[str],
         force: bool, parts: list[str] | None = None) -> tuple[Job, Path, dict | None]:
    """Decide what to do with one student's folder: ``(job, workdir, result)``, where ``result`` is the
    earlier run's when it is already in the gradebook (nothing to do), and None when the job is pending
    (scored but not recorded yet, or to grade now: its work folder is then made afresh). ``parts``: grade
    those only (every student is graded again), keeping the other cells' scores of the grading in force when it
    graded the same notebook."""
    wd = live_folder(course_dir / "work" / a.name, sub.student, restore=True)
    stage = wd.with_name(sub.student + STAGED)
    digest = _sha256(sub.notebook)
    job = Job(a.name, sub.student, str(sub.notebook) if sub.notebook else None, str(stage),
              _seed(course_dir, a.name, sub.student), cell_timeout=limits.cell_timeout,
              interrupt_grace=limits.interrupt_grace, memory_bytes=int(limits.memory_gib * 2**30), hide=hide,
              note=sub.note, parts=parts)
    same = (wd / "recorded.json").exists() and _read_json(wd / "recorded.json").get("sha256") == digest
    unfinished = _not_graded_parts(a, wd) if same and not force and parts is None else []
    if unfinished:  # recorded by a run of other parts, with cells it had no score for: those are graded now
        job.parts = parts = unfinished
    elif not force and parts is None and same:
        shutil.rmtree(stage, ignore_errors=True)  # a regrade stopped before its end: the result in force stays
        return job, wd, _read_json(wd / "result.json")  # graded and recorded by an earlier run
    if parts is not None:
        job.kept_from = str(wd) if same else None
        job.kept_why = "" if same else "the notebook differs from the one graded before" \
            if (wd / "recorded.json").exists() else "no earlier grading of this notebook to keep it from"
    for earlier in (stage, wd):  # scored by an earlier run, not yet recorded (wd: a run before the staging)
        scored = (earlier / "result.json").exists() and not (earlier / "recorded.json").exists()
        if not force and scored and (earlier / "job.json").exists() \
                and _read_json(earlier / "job.json").get("digest") == digest \
                and _read_json(earlier / "job.json").get("parts") == parts:
            job.workdir = str(earlier)
            return job, earlier, None
    # Graded afresh in the staging folder: the result in force (wd) stays until record() replaces it.
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    if sub.status_hint:  # invalid or missing: nothing to run
        from .worker import write_result, zero_scores

        write_result(stage, replace(job, note=""), sub.status_hint, sub.note, zero_scores(a))  # the note once
        return job, stage, None
    (stage / "submitted").mkdir()
    copy = stage / "submitted" / a.notebook
    shutil.copy(sub.notebook, copy)  # the kernel never sees the submissions folder itself
    job.submission = str(copy)
    tmp = stage / "job.json.tmp"
    tmp.write_text(json.dumps({**asdict(job), "digest": digest}, indent=1))
    tmp.replace(stage / "job.json")
    return job, stage, None


def _not_graded_parts(a: Assignment, wd: Path) -> list[str]:
    """The parts of the cells that the recorded result in ``wd`` holds no score for (``not_graded``)."""
    cells = set(_read_json(wd / "result.json").get("not_graded") or [])
    return [name for name, part in load_reference(a).PARTS.items() if part.test_cell in cells]


#: Suffixes of a student's work folder while it is regraded (``+new``: the new grading, ``+old``: the result it
#: replaces, for the moment between two renames). ``+`` is not allowed in a student id (course.safe_id).
STAGED, REPLACED = "+new", "+old"


def live_folder(work: Path, student: str, restore: bool = False) -> Path:
    """The work folder whose result is in force for ``student``: ``work/<student>``, or the result it was
    replacing when a run stopped between the two renames of :func:`promote` (``<student>+old``), which
    ``restore`` moves back into place."""
    wd, aside = work / student, work / (student + REPLACED)
    if not wd.exists() and (aside / "recorded.json").exists():
        if not restore:
            return aside
        os.rename(aside, wd)
    return wd


def promote(stage: Path) -> Path:
    """Put a recorded grading from its staging folder in force, in place of the earlier one: two renames, the
    earlier result set aside first (:func:`live_folder` reads it if a run stops between them)."""
    if not stage.name.endswith(STAGED):
        return stage  # recorded in place (a run from before the staging folders)
    wd = stage.with_name(stage.name.removesuffix(STAGED))
    aside = stage.with_name(wd.name + REPLACED)
    if aside.exists():
        shutil.rmtree(aside)
    if wd.exists():
        os.rename(wd, aside)
    os.rename(stage, wd)
    shutil.rmtree(aside, ignore_errors=True)
    return wd


class WorkerPool:
    """``limits.workers`` long-lived worker processes; ``grade`` borrows one for one submission."""

    def __init__(self, course_dir: Path, limits: Limits):
        self.limits, self.course_dir = limits, course_dir
        self.idle: queue.Queue[WorkerProcess] = queue.Queue()
        for i in range(limits.workers):
            self.idle.put(WorkerProcess(int(limits.memory_gib * 2**30) + 3 * 2**30, course_dir / f"worker-{i}.log"))

    def grade(self, job: Job, wd: Path) -> dict:
        if (wd / "result.json").exists():  # scored by an earlier run: only the gradebook write is left
            return _read_json(wd / "result.json")
        clean = Job(**{k: v for k, v in _read_json(wd / "job.json").items() if k != "digest"})
        (wd / "job.run.json").write_text(json.dumps(asdict(clean)))
        worker = self.idle.get()
        try:
            return worker.grade(clean, wd / "job.run.json", self.limits.notebook_timeout)
        finally:
            self.idle.put(worker)

    def close(self) -> None:
        while not self.idle.empty():
            self.idle.get().stop()
        for root in (self.course_dir / "work").glob(".nursery-*"):  # those of workers that were killed
            if not (root / "owner").exists():  # (a kernel folder still there is finalize's to take back)
                shutil.rmtree(root, ignore_errors=True)


def resolve_parts(assignments: Sequence[Assignment], requested: Sequence[str]) -> dict[str, list[str]]:
    """assignment -> the parts that ``--parts`` grades: each part named (``part``, in every assignment that has
    one of that name, or ``assignment:part``), with the other parts graded in its test cell (a cell is scored
    whole), in the assignment's order. A name that is no part, or an assignment given none, is a
    :class:`GraderError` that lists the parts there are."""
    every = {a.name: load_reference(a).PARTS for a in assignments}
    named: dict[str, set[str]] = {a: set() for a in every}
    for item in (p.strip() for p in requested):
        where, _, name = item.rpartition(":")
        if where and where not in every:
            raise GraderError(f"--parts {item}: {where} is not among the assignments graded ({', '.join(every)})")
        hits = [a for a in ([where] if where else every) if name in every[a]]
        if not hits:
            known = "; ".join(f"{a}: {', '.join(every[a])}" for a in ([where] if where else every))
            raise GraderError(f"--parts {item}: no such part ({known})")
        for a in hits:
            named[a].add(every[a][name].test_cell)
    for a, cells in named.items():
        if not cells:
            raise GraderError(f"--parts names no part of {a} (its parts: {', '.join(every[a])}); name "
                              f"{a}:<part>, or grade {a} in a run of its own")
    return {a: [n for n, part in every[a].items() if part.test_cell in named[a]] for a in every}


def autograde(assignment: str | Sequence[str], submissions: Path, course_dir: Path, limits: Limits | None = None,
              force: bool = False, progress: Callable[[str, dict], None] | None = None,
              parts: Sequence[str] | None = None, shard: tuple[int, int] | None = None,
              secret: Path | None = None) -> list[dict]:
    """Grade every submission in ``submissions``; return one result per student (also written to disk).

    ``assignment`` may name several assignments: their submissions (nbgrader's layout,
    ``submissions/<student>/<assignment>/<notebook>``) then form one queue on one pool of workers, so that
    every worker stays busy until the last submission of the last assignment, and the results come back in
    the order of the names. ``progress`` gets ``<student>`` (``<assignment>/<student>`` for several) and
    the result as each submission is done. ``parts`` (:func:`resolve_parts`): grade only those parts, for every
    student, keeping every other cell's score of the grading in force, or recording it as not graded.

    The steps: check that each assignment is ready (:func:`check_ready`), find its student folders
    (:func:`find_submissions`), decide for each what is left to do (:func:`plan`), then grade what is
    pending on a :class:`WorkerPool` and write each result into the gradebook (:func:`grade_all`).

    ``shard`` ``(I, N)``: grade only the I-th of N slices of the students (:func:`shard_students`), into a
    course folder of this shard's own (``shard.json`` says which); ``secret``: the class's grading secret, copied
    in first (:func:`install_secret`), so that every shard draws the seeds a one-machine run would.
    ``grader merge`` (:mod:`grader.merge`) puts the shards' results together."""
    names = [assignment] if isinstance(assignment, str) else list(assignment)
    if not names or len(set(names)) != len(names):
        raise GraderError(f"name each assignment to grade once, got {names}")
    several = len(names) > 1
    limits = limits or Limits()
    limits.check()
    course_dir = course_dir.resolve()
    course_dir.mkdir(parents=True, exist_ok=True)
    if secret is not None:
        install_secret(course_dir, secret)
    if not submissions.is_dir():
        raise GraderError(f"submissions folder {submissions} does not exist")
    mine = None if shard is None else set(shard_students(submissions.resolve(), shard))
    if shard is not None:
        claim_shard(course_dir, names, shard, sorted(mine))
    hide = sorted({str(p) for p in (REPO, SOLUTIONS, course_dir, submissions.resolve(), Path.home())})
    results: dict[tuple[str, str], dict] = {}
    pending: list[tuple[Assignment, Job, Path]] = []
    order: list[tuple[str, str]] = []
    loaded = [load_assignment(n) for n in names]
    chosen = resolve_parts(loaded, parts) if parts is not None else {}
    for a in loaded:
        check_ready(a, course_dir)
        for sub in find_submissions(a, submissions.resolve(), nested_only=several):
            if mine is not None and sub.student not in mine:
                continue
            job, wd, done = plan(a, sub, course_dir, limits, hide, force, chosen.get(a.name))
            write_handed_in(wd, sub.handed_in)
            order.append((a.name, sub.student))
            if done is not None:
                results[a.name, sub.student] = done
            else:
                pending.append((a, job, wd))
    pool = WorkerPool(course_dir, limits)
    say = None if progress is None else (lambda a, s, r: progress(f"{a}/{s}" if several else s, r))
    try:
        grade_all(pending, pool, course_dir, results, say)
    finally:
        pool.close()
    return [results[key] for key in order if key in results]


def record(a: Assignment, course_dir: Path, job: Job, wd: Path, result: dict) -> None:
    """Write one result into nbgrader's gradebook, check that it reads back the same, then mark the
    student done (``recorded.json``, with the digest of what was graded)."""
    digest = _sha256(Path(job.submission)) if job.submission else "none"
    record_result(a, course_dir, job.student, wd, result, digest)


def record_result(a: Assignment, course_dir: Path, student: str, wd: Path, result: dict, digest: str) -> None:
    """:func:`record` for a result already on disk in ``wd`` (a staging folder): the gradebook, read back, then
    ``recorded.json`` and the folder put in force. ``grader merge`` records a shard's results with it."""
    if result.get("executed") and (wd / "executed.ipynb").exists():
        record_in_gradebook(a, course_dir, student, wd / "executed.ipynb")
        not_graded = set(result.get("not_graded") or [])
        if not_graded:
            mark_not_graded(course_dir, a, student, not_graded)
        recorded = gradebook_scores(course_dir, a, student) or {}
        for cell, s in result["cells"].items():
            if cell in not_graded:
                if cell in recorded:
                    raise GraderError(f"gradebook holds a score for {student}/{cell}, which was not graded")
            elif abs(recorded.get(cell, -1) - s["score"]) > 1e-6:
                raise GraderError(f"gradebook disagrees for {student}/{cell}: {recorded.get(cell)} != {s['score']}")
    tmp = wd / "recorded.json.tmp"
    tmp.write_text(json.dumps({"sha256": digest}))
    tmp.replace(wd / "recorded.json")
    promote(wd)


def grade_all(pending: list[tuple[Assignment, Job, Path]], pool: WorkerPool, course_dir: Path,
              results: dict[tuple[str, str], dict], progress: Callable[[str, str, dict], None] | None) -> None:
    """Grade the pending jobs, ``pool.limits.workers`` at a time, in the order given; record each as it
    finishes (in this process only: nbgrader's gradebook is one SQLite file)."""
    with ThreadPoolExecutor(max_workers=pool.limits.workers) as threads:
        futures = {threads.submit(pool.grade, job, wd): (a, job, wd) for a, job, wd in pending}
        for fut in as_completed(futures):
            a, job, wd = futures[fut]
            result = fut.result()
            record(a, course_dir, job, wd, result)
            results[a.name, job.student] = result
            if progress:
                progress(a.name, job.student, result)
