"""``grader report``: one assignment's class report for the instructor, ``report.html`` and ``report.csv`` in
``<course-dir>/reports/<assignment>/``.

It reads only what ``grader autograde`` stored, and grades nothing: the rows ``grader export`` writes (the
gradebook's score, manual grades included, and the status of every recorded student folder), each student's
``work/<assignment>/<student>/result.json`` (each part's fraction of cases passed and its first failure, the cells
that timed out) and the gradebook's grades that still need a manual grade. A result written before the parts were
stored (``CellScore.parts``) is read from its cells' messages, one line per part.

The page shows the score distribution (a histogram, a PNG inside the page), every part with its pass rate, the
worst at the top, and the most frequent first-failure messages of each part with how many students hit each;
time-outs, crashes, invalid and missing submissions; the written answers that wait for a manual grade; the time
grading took per submission (``result.json``'s ``seconds``, else the sum of its ``timing`` steps: mean, 95th
percentile by nearest rank, slowest) with the core-seconds the class takes; and a table with one row per
student (status, score, each part, late or not from ``handed_in.json``, seconds) with a search box.

It shows no student's code: a message is cut to its first line (the exception's line, for a traceback a student
put in an exception), to ``MESSAGE_LIMIT`` characters, and escaped. The page loads nothing: no network request,
no file beside it. Its one script is the search box's, a few lines inline, allowed by its hash in the
Content-Security-Policy (which allows inline styles and ``data:`` images besides, nothing else); with scripts
off the box stays hidden and every row shows.

It reads only the gradebook and, in each student's work folder, ``recorded.json`` (whether it exists),
``result.json`` and ``handed_in.json``: what ``grader merge`` copies into a course folder as much as what a
local ``grader autograde`` leaves, so it reports on a merged course folder the same way.
"""
from __future__ import annotations

import base64
import csv
import hashlib
import html
import io
import math
import re
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from .course import COURSE_ID, GraderError, load_assignment, load_reference, read_json_object
from .export import PENDING

REPORTS = "reports"  # <course-dir>/reports/<assignment>/report.html, report.csv
STATUSES = ("graded", "timeout", "crashed", "invalid", "missing")
RAN = ("graded", "timeout", "crashed")  # the notebook ran: its parts were judged
TOP_FAILURES = 5  # first-failure messages listed per part
MESSAGE_LIMIT = 200  # characters of a message shown
BINS = 10  # bars of the histogram
CSV_COLUMNS = ["part", "test_cell", "judged", "passed", "pass_rate", "mean_cases_passed",
               *(f"{k}_{i}" for i in range(1, TOP_FAILURES + 1) for k in ("failure", "students"))]


# ------------------------------------------------------------------ what autograde stored


@dataclass(frozen=True)
class Outcome:
    """One part of one submission: the fraction of its cases passed, and the first failure ("" if none)."""

    fraction: float
    failure: str = ""

    @property
    def passed(self) -> bool:
        return self.fraction >= 1 and not self.failure


@dataclass
class Submission:
    """One recorded student folder."""

    student: str
    status: str  # graded, timeout, crashed, invalid, missing
    score: float  # the gradebook's (manual grades included), else result.json's
    message: str  # result.json's
    parts: dict[str, Outcome] = field(default_factory=dict)
    timed_out: list[str] = field(default_factory=list)  # cells that ran past their limit (when stored)
    waiting: list[str] = field(default_factory=list)  # grades (grade_id) that wait for a manual grade
    flags: list[str] = field(default_factory=list)  # what it changed that the grader ignored (notebook.tampering)
    not_graded: list[str] = field(default_factory=list)  # test cells without a score (autograde --parts)
    seconds: float | None = None  # the grading's wall time (submission_seconds); None if not stored
    late: bool | None = None  # late by the course file's policy (grader.late), else handed_in.json's late_flag
    submitted_at: str | None = None  # handed_in.json's submitted_at, as stored (naive from an archive)
    penalty: float = 0.0  # the fraction of the maximum score the late policy takes off (0 without one)


@dataclass
class ClassResults:
    assignment: str
    parts: dict[str, str]  # part -> its test cell, in the reference's order
    max_score: float  # the gradebook's, manual points included
    submissions: list[Submission]

    def only(self, students: Iterable[str]) -> ClassResults:
        """The same report over some students only (one student's view: the parts they fail at the top)."""
        keep = set(students)
        return replace(self, submissions=[s for s in self.submissions if s.student in keep])


_COUNTS = re.compile(r"(\d+)/(\d+) cases passed")
_FIRST_FAILURE = "; first failure: "


def outcome_from_verdict(verdict: str) -> Outcome:
    """A part's outcome from its line in a cell's message (``judge_part``'s "k/n cases passed; first failure:
    ...", or why nothing was judged): what ``grade_cells`` stores since the report exists, recovered for
    results written before."""
    m = _COUNTS.match(verdict)
    fraction = int(m[1]) / int(m[2]) if m and int(m[2]) else 0.0
    return Outcome(fraction, "" if fraction >= 1 else verdict.partition(_FIRST_FAILURE)[2] or verdict)


def part_outcomes(result: dict, parts: dict[str, str]) -> dict[str, Outcome]:
    """Each part's outcome in a ``result.json``: stored in its cells (``parts``), else read from their messages."""
    out: dict[str, Outcome] = {}
    for cell in (result.get("cells") or {}).values():
        stored = cell.get("parts")
        if isinstance(stored, dict):
            for name, o in stored.items():
                out[name] = Outcome(float(o.get("fraction", 0.0)), str(o.get("failure", "")))
            continue
        lines: dict[str, list[str]] = {}  # a result written before CellScore.parts: "<part>: <verdict>" lines
        current = None
        for line in str(cell.get("message", "")).splitlines():
            name, sep, verdict = line.partition(": ")
            if sep and name in parts and name not in lines:
                current = name
                lines[name] = [verdict]
            elif current is not None:  # a verdict of several lines (a student's multi-line exception)
                lines[current].append(line)
        out.update({name: outcome_from_verdict("\n".join(text)) for name, text in lines.items()})
    return out


def submission_seconds(result: dict) -> float | None:
    """The wall time of one submission's grading, in seconds: ``result.json``'s ``seconds`` (the worker's time,
    kernel start included), else the sum of its ``timing`` steps (kernel, cells by kind, prepare, judge; the
    per-cell entries of ``GRADER_PROFILE_CELLS``, named ``index:kind:grade_id``, are inside those and left out).
    None for a result without either (invalid, missing, or written before the timings were stored)."""
    seconds = result.get("seconds")
    if _is_seconds(seconds):
        return float(seconds)
    timing = result.get("timing")
    if not isinstance(timing, dict):
        return None
    steps = [v for k, v in timing.items() if ":" not in str(k) and _is_seconds(v)]
    return float(sum(steps)) if steps else None


def _is_seconds(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


HANDED_IN = "handed_in.json"  # written by autograde into each work folder (source, late_flag, submitted_at, ...)


def handed_in(folder: Path) -> tuple[bool | None, str | None]:
    """``late_flag`` and ``submitted_at`` of ``folder``'s ``handed_in.json``; (None, None) without one."""
    data = read_json_object(folder / HANDED_IN)
    late, at = data.get("late_flag"), data.get("submitted_at")
    if late is not None and not isinstance(late, bool):
        raise GraderError(f"{folder / HANDED_IN}: late_flag is {late!r}, not true, false or null")
    if at is not None and not isinstance(at, str):
        raise GraderError(f"{folder / HANDED_IN}: submitted_at is {at!r}, not a date string or null")
    return late, at


def _waiting(course_dir: Path, a, students: list[str]) -> dict[str, list[str]]:
    """student -> the grades of their submission that nbgrader says still need a manual grade."""
    from nbgrader.api import Gradebook, MissingEntry

    out = {}
    with Gradebook(f"sqlite:///{course_dir / 'gradebook.db'}", COURSE_ID) as gb:
        for student in students:
            try:
                nb = gb.find_submission_notebook(a.notebook_id, a.name, student)
            except MissingEntry:  # invalid or missing: never entered the gradebook
                continue
            out[student] = sorted(g.name for g in nb.grades if g.needs_manual_grade)
    return out


def load(assignment: str, course_dir: Path) -> ClassResults:
    """What autograde stored for ``assignment`` in ``course_dir``; a :class:`GraderError` if nothing is."""
    from nbgrader.api import MissingEntry

    from .autograde import live_folder
    from .export import rows

    a = load_assignment(assignment)
    course_dir = Path(course_dir)
    if not (course_dir / "gradebook.db").is_file():
        raise GraderError(f"nothing graded in {course_dir} (no gradebook.db): run `grader autograde` first")
    try:
        found = rows(a.name, course_dir)
    except MissingEntry as exc:
        raise GraderError(f"the gradebook of {course_dir} has no {a.name}: run `grader autograde` first") from exc
    if all(row["status"] == PENDING for row in found):
        raise GraderError(f"nothing graded for {a.name} in {course_dir} yet (no recorded result): "
                          "run `grader autograde` first")
    parts = {name: part.test_cell for name, part in load_reference(a).PARTS.items()}
    waiting = _waiting(course_dir, a, [row["student_id"] for row in found])  # hand grading, and cells not graded
    subs = []
    for row in found:
        folder = live_folder(course_dir / "work" / a.name, row["student_id"])
        result = read_json_object(folder / "result.json")
        not_graded = [str(c) for c in result.get("not_graded") or []]
        late, submitted_at = handed_in(folder)
        subs.append(Submission(row["student_id"], row["status"], float(row["score"]), str(row["message"]),
                               part_outcomes(result, parts), [str(c) for c in result.get("timed_out") or []],
                               [g for g in waiting.get(row["student_id"], []) if g not in not_graded],
                               [str(f) for f in result.get("flags") or []], not_graded,
                               submission_seconds(result), late, submitted_at))
    _apply_late_policy(a.name, course_dir, subs)
    return ClassResults(a.name, parts, float(found[0]["max_score"]), subs)


def _apply_late_policy(assignment: str, course_dir: Path, subs: list[Submission]) -> None:
    """With a deadline in the course file (``grader.late.assess``), lateness is the policy's, not the flag's."""
    from .late import assess

    lateness = assess(assignment, course_dir)
    for sub in subs:
        if sub.student in lateness:
            sub.late, sub.penalty = lateness[sub.student].units > 0, lateness[sub.student].penalty_fraction


# ------------------------------------------------------------------ messages: no code, nothing to run


_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07?")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")  # and bidi overrides
_TRACEBACK = "Traceback (most recent call last)"
_EXCEPTION_LINE = re.compile(r"[A-Za-z_][\w.]*(?::\s|$)")  # "ValueError: ...", "KeyboardInterrupt"
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_POINTS = re.compile(r"[\d.]+/[\d.]+ autograded points(?:; )?")


def clean_message(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """A message fit to show: its first line only (a traceback's code lines are indented, its exception line
    comes last: for a message that holds a traceback, the text before it and the exception's line), without
    terminal colours and control characters, on one line, at most ``limit`` characters. Not escaped: see
    :func:`render_html` (and :func:`csv_safe` for the CSV)."""
    lines = [ln for ln in _ANSI.sub("", str(text)).splitlines() if re.search(r"\w", ln)]
    if not lines:
        return ""

    def one(line: str) -> str:
        return " ".join(_CONTROL.sub(" ", line).split())

    first = one(lines[0])
    if _TRACEBACK in first:
        head = first.partition(_TRACEBACK)[0].rstrip(" :")
        last = [ln for ln in lines[1:] if not ln[:1].isspace() and _EXCEPTION_LINE.match(ln)]
        tail = one(last[-1]) if last else "(a traceback, left out)"
        first = f"{head}: {tail}" if head else tail
    elif len(lines) > 1:
        first += " [...]"
    return first if len(first) <= limit else first[:limit - 1].rstrip() + "\u2026"


def _shape(message: str) -> str:
    """The key messages are counted under: the same message with other numbers (errors, indexes) is one."""
    return _NUMBER.sub("#", message)


def csv_safe(text: str) -> str:
    """A cell a spreadsheet shows as text, never evaluates: a leading =, +, -, @ gets a quote."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


# ------------------------------------------------------------------ the summary


@dataclass(frozen=True)
class Failure:
    message: str  # cleaned; the most frequent of its group
    students: int  # how many students' first failure it is (numbers aside)
    variants: int  # how many different messages the group holds (other numbers)


@dataclass
class PartRow:
    part: str
    cell: str
    judged: int  # submissions whose notebook ran and that hold an outcome for the part
    passed: int  # of those, every case passed
    mean_fraction: float  # of cases passed, over ``judged``
    failures: list[Failure]  # the most frequent first
    other_failures: int = 0  # students whose message is not among ``failures``

    @property
    def pass_rate(self) -> float:
        return self.passed / self.judged if self.judged else 0.0


@dataclass
class Summary:
    assignment: str
    max_score: float
    students: int
    statuses: dict[str, int]
    edges: list[float]  # BINS + 1 edges over [0, max_score]
    ran_counts: list[int]  # per bar, students whose notebook ran
    not_run_counts: list[int]  # per bar, invalid and missing
    mean: float
    median: float
    parts: list[PartRow]  # the worst pass rate first
    timeouts: list[tuple[str, list[str]]]  # (where, students), the most frequent first
    crashes: list[tuple[str, list[str]]]  # (message, students)
    not_run: list[tuple[str, str, str]]  # (student, status, message)
    waiting: dict[str, int]  # grade_id -> students whose answer waits for a manual grade
    waiting_students: int
    flagged: list[tuple[str, list[str]]] = field(default_factory=list)  # (student, flags): locked cells edited...
    not_graded: dict[str, int] = field(default_factory=dict)  # test cell -> students without a score for it
    timing: Timing | None = None  # seconds of grading per submission; None when no result stores them
    part_names: list[str] = field(default_factory=list)  # the reference's order, for the table of students
    submissions: list[Submission] = field(default_factory=list)  # one row each in the table of students

    @property
    def late(self) -> int:
        """Late hand-ins: by the course file's policy where it has a deadline, else by Canvas's flag."""
        return sum(sub.late is True for sub in self.submissions)


# ------------------------------------------------------------------ time per submission


SIZING_CORES = (16, 64)  # the machines the sizing sentence speaks of


@dataclass(frozen=True)
class Timing:
    """Wall time of grading, per submission that stored one (:func:`submission_seconds`)."""

    count: int  # submissions with a time
    mean: float
    p95: float  # the 95th percentile, nearest rank: the ceil(0.95 n)-th smallest
    slowest: float
    slowest_student: str
    total: float  # core-seconds: a worker grades one submission at a time, on about one core


def nearest_rank(values: list[float], percent: int) -> float:
    """The ``percent``-th percentile by nearest rank: the ceil(percent/100 * n)-th smallest value (at least the
    first). A :class:`GraderError` for no values or a percent outside 1..100."""
    if not values or not 0 < percent <= 100:
        raise GraderError(f"no {percent}th percentile of {len(values)} values: needs values and 0 < percent <= 100")
    rank = max(1, -(-percent * len(values) // 100))  # integer ceiling: no float error at 0.95 * 20
    return sorted(values)[rank - 1]


def time_figures(submissions: Iterable[Submission]) -> Timing | None:
    """Mean, 95th percentile (nearest rank), slowest and sum of the submissions' grading times; None if none
    has a time. The slowest's tie goes to the first submission."""
    timed = [s for s in submissions if s.seconds is not None]
    if not timed:
        return None
    seconds = [s.seconds for s in timed]
    slowest = max(timed, key=lambda s: s.seconds)
    return Timing(len(timed), statistics.fmean(seconds), nearest_rank(seconds, 95), slowest.seconds,
                  slowest.student, math.fsum(seconds))


def duration(seconds: float) -> str:
    """Seconds for a reader: "4.3 s", "12 min", "3.1 h"."""
    if seconds < 100:
        return f"{seconds:.1f} s"
    if seconds < 6000:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def timing_line(summary: Summary) -> str:
    """One line on the time grading took, for the command line."""
    t = summary.timing
    if t is None:
        return "grading time: not stored in these results"
    return (f"grading time per submission ({t.count} timed): mean {duration(t.mean)}, 95th percentile (nearest "
            f"rank) {duration(t.p95)}, slowest {duration(t.slowest)} ({t.slowest_student}); "
            f"{t.total:.0f} core-seconds in all")


def sizing(t: Timing, cores: Iterable[int] = SIZING_CORES) -> str:
    """The time figures as cluster sizing: the class's core-seconds, and the wall time on some core counts
    (never less than the slowest submission: one submission runs on one worker)."""
    on = "; ".join(f"on {n} core{'s' * (n != 1)}, at least {duration(max(t.total / n, t.slowest))}" for n in cores)
    return (f"A worker grades one submission at a time on about one core (the kernel and the judge run one "
            f"thread each), so these {t.count} submissions take {t.total:,.0f} core-seconds "
            f"({t.total / 3600:.2f} core-hours) at this rate: {on}. Each 100 more students add "
            f"{duration(100 * t.mean)} of one core.")


def histogram(scores: list[float], max_score: float, bins: int = BINS) -> tuple[list[float], list[int]]:
    """``bins`` bars of equal width over [0, max_score]; each holds its lower edge, the last also max_score.
    A score outside the range (a manual grade above the points) goes in the nearest bar."""
    top = max_score if max_score > 0 else 1.0
    edges = [round(top * i / bins, 6) for i in range(bins + 1)]
    counts = [0] * bins
    for s in scores:
        counts[min(max(int(s / top * bins + 1e-9), 0), bins - 1)] += 1
    return edges, counts


def _rank(messages: list[str], top: int) -> tuple[list[Failure], int]:
    groups: dict[str, Counter] = {}
    for m in messages:
        groups.setdefault(_shape(m), Counter())[m] += 1
    ranked = sorted(groups.values(), key=lambda c: (-sum(c.values()), c.most_common(1)[0][0]))
    shown = [Failure(c.most_common(1)[0][0], sum(c.values()), len(c)) for c in ranked[:top]]
    return shown, sum(sum(c.values()) for c in ranked[top:])


def summarize(results: ClassResults, top: int = TOP_FAILURES) -> Summary:
    subs = results.submissions
    ran = [s for s in subs if s.status in RAN]
    order = {name: i for i, name in enumerate(results.parts)}
    rows = []
    for name, cell in results.parts.items():
        got = [s.parts[name] for s in ran if name in s.parts]
        failures, other = _rank([clean_message(o.failure) or "(no message)" for o in got if not o.passed], top)
        rows.append(PartRow(name, cell, len(got), sum(o.passed for o in got),
                            statistics.fmean(o.fraction for o in got) if got else 0.0, failures, other))
    rows.sort(key=lambda r: (not r.judged, r.pass_rate, r.mean_fraction, order[r.part]))  # unjudged: no rate, last
    edges, ran_counts = histogram([s.score for s in ran], results.max_score)
    _, not_run_counts = histogram([s.score for s in subs if s.status not in RAN], results.max_score)
    timeouts: dict[str, tuple[str, list[str]]] = {}  # the message's shape -> (a message, students)
    crashes: dict[str, tuple[str, list[str]]] = {}
    for s in subs:
        problem = clean_message(_POINTS.sub("", s.message)) or s.status
        if s.status == "timeout":
            for where in [clean_message(c) for c in s.timed_out] or [problem]:
                timeouts.setdefault(_shape(where), (where, []))[1].append(s.student)
        elif s.status == "crashed":
            crashes.setdefault(_shape(problem), (problem, []))[1].append(s.student)
    waiting = Counter(g for s in subs for g in s.waiting)
    scores = [s.score for s in subs]
    statuses = {st: sum(s.status == st for s in subs) for st in STATUSES}
    if any(s.status == PENDING for s in subs):  # export's rows of gradings that did not finish
        statuses[PENDING] = sum(s.status == PENDING for s in subs)
    return Summary(
        results.assignment, results.max_score, len(subs),
        statuses, edges, ran_counts, not_run_counts,
        statistics.fmean(scores) if scores else 0.0, statistics.median(scores) if scores else 0.0, rows,
        sorted(timeouts.values(), key=lambda kv: (-len(kv[1]), kv[0])),
        sorted(crashes.values(), key=lambda kv: (-len(kv[1]), kv[0])),
        [(s.student, s.status, clean_message(s.message) or s.status) for s in subs if s.status not in RAN],
        dict(sorted(waiting.items())), sum(bool(s.waiting) for s in subs),
        [(s.student, [clean_message(f) for f in s.flags]) for s in subs if s.flags],
        dict(sorted(Counter(c for s in subs for c in s.not_graded).items())),
        time_figures(subs), list(results.parts), list(subs))


# ------------------------------------------------------------------ the page and the CSV


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _fmt(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def histogram_png(summary: Summary) -> bytes:
    """The score distribution as a PNG: students whose notebook ran, invalid and missing stacked above."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 2.8), dpi=150, layout="constrained")  # shown 700 x 280: sharp on a dense screen
    ax = fig.subplots()
    lefts, width = summary.edges[:-1], summary.edges[1] - summary.edges[0]
    ax.bar(lefts, summary.ran_counts, width=width, align="edge", color="#3b6ea5", edgecolor="white", label="graded")
    if any(summary.not_run_counts):
        ax.bar(lefts, summary.not_run_counts, width=width, align="edge", bottom=summary.ran_counts,
               color="#b8b8b8", edgecolor="white", label="invalid or missing")
        ax.legend(frameon=False)
    ax.set_xlim(0, summary.edges[-1])
    ax.set_xlabel(f"score (of {_fmt(summary.max_score)} points)")
    ax.set_ylabel("students")
    ax.yaxis.get_major_locator().set_params(integer=True)
    ax.spines[["top", "right"]].set_visible(False)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


_CSS = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; width: 100%; } th, td { text-align: left; vertical-align: top; padding: .35em .6em; }
thead th { border-bottom: 2px solid #999; } tbody tr { border-bottom: 1px solid #ddd; }
td.num { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; } td.cell { white-space: nowrap; }
.bar { display: inline-block; width: 6em; height: .8em; background: #f1d4d4; vertical-align: middle; }
.bar span { display: block; height: 100%; background: #4c956c; }
ol.msgs { margin: 0; padding-left: 1.3em; } ol.msgs li { margin: .1em 0; }
.count { font-weight: 600; white-space: nowrap; } .msg { font-family: ui-monospace, monospace; font-size: .88em;
  overflow-wrap: anywhere; } .note { color: #666; font-size: .9em; } img { max-width: 100%; height: auto; }
#students td, #students th { padding: .15em .5em; white-space: nowrap; } #students th.p { font-size: .8em; }
#timing { width: auto; } .wide { overflow-x: auto; }
#student-search { font: inherit; padding: .3em .5em; width: 24em; margin-bottom: .5em; }
"""
# The search box: shown by the script only (with scripts off every row shows); each word typed must be in a row.
_SEARCH_JS = r"""
(() => {
  const box = document.getElementById("student-search"), count = document.getElementById("student-count");
  const rows = Array.from(document.querySelectorAll("#students tbody tr"));
  const text = rows.map(r => Array.from(r.cells, c => c.textContent).join("\t").toLowerCase());
  box.hidden = false;
  box.addEventListener("input", () => {
    const words = box.value.toLowerCase().split(/\s+/).filter(Boolean);
    let shown = 0;
    rows.forEach((r, i) => { const hit = words.every(w => text[i].includes(w)); r.hidden = !hit; shown += hit; });
    count.textContent = words.length ? `${shown} of ${rows.length} students` : `${rows.length} students`;
  });
})();
"""
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(_SEARCH_JS.encode()).digest()).decode()
_CSP = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{_SCRIPT_HASH}'; base-uri 'none'; form-action 'none'")


def _messages(row: PartRow) -> str:
    if not row.failures:
        return '<span class="note">none</span>'
    items = [f'<li><span class="count">{f.students}&times;</span> <span class="msg">{_e(f.message)}</span>'
             + (f' <span class="note">(and {f.variants - 1} more with other numbers)</span>' if f.variants > 1 else "")
             + "</li>" for f in row.failures]
    if row.other_failures:
        items.append(f'<li class="note">{row.other_failures} more students, other messages</li>')
    return f'<ol class="msgs">{"".join(items)}</ol>'


def render_html(summary: Summary, png: bytes | None = None) -> str:
    """The report as one self-contained page: everything from the results is escaped."""
    png = histogram_png(summary) if png is None else png
    s = summary
    statuses = ", ".join(f"{n} {st}" for st, n in s.statuses.items() if n) or "none"
    bars = "; ".join(f"{_fmt(lo)} to {_fmt(hi)}: {a + b}" for lo, hi, a, b in
                     zip(s.edges, s.edges[1:], s.ran_counts, s.not_run_counts))
    out = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="referrer" content="no-referrer">',
        f"<title>Class report: {_e(s.assignment)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Class report: {_e(s.assignment)}</h1>",
        f"<p>{s.students} submissions ({_e(statuses)}). Score: mean {_fmt(s.mean)}, median {_fmt(s.median)} "
        f"of {_fmt(s.max_score)} points (the gradebook's, manual grades included once entered).</p>",
        "<h2>Score distribution</h2>",
        f'<img id="histogram" width="700" height="280" alt="Histogram of the scores, students per bar: {_e(bars)}" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode()}">',
        "<h2>Parts, the lowest pass rate first</h2>",
        '<p class="note">A part passes when every one of its hidden cases passes. Only submissions whose notebook '
        "ran count (graded, timed out, crashed). The messages are each student's first failing case, cut to one "
        f"line of at most {MESSAGE_LIMIT} characters; the same message with other numbers counts once.</p>",
        '<table id="parts"><thead><tr><th>part</th><th>test cell</th><th>pass rate</th>'
        "<th>passed</th><th>cases passed</th><th>most frequent first failures (students)</th></tr></thead><tbody>",
    ]
    for r in s.parts:
        pct = round(100 * r.pass_rate)
        out.append(
            f'<tr data-part="{_e(r.part)}"><td><code>{_e(r.part)}</code></td><td class="cell">{_e(r.cell)}</td>'
            f'<td class="num"><span class="bar" title="{pct}%"><span style="width:{pct}%"></span></span> {pct}%</td>'
            f'<td class="num">{r.passed}/{r.judged}</td><td class="num">{round(100 * r.mean_fraction)}%</td>'
            f"<td>{_messages(r)}</td></tr>")
    out.append("</tbody></table>")
    out.append("<h2>Time-outs and crashes</h2>")
    if not s.timeouts and not s.crashes:
        out.append("<p>None: every notebook ran to its end.</p>")
    for title, what, groups in (("Timed out", "the cell that ran past its limit (or the notebook's)", s.timeouts),
                                ("Crashed", "what happened", s.crashes)):
        if groups:
            out.append(f'<h3>{title}</h3><table class="problems"><thead><tr><th>students</th><th>{what}</th>'
                       "<th>who</th></tr></thead><tbody>")
            out += [f'<tr><td class="num">{len(who)}</td><td class="msg">{_e(what)}</td>'
                    f'<td>{_e(", ".join(who))}</td></tr>' for what, who in groups]
            out.append("</tbody></table>")
    if s.not_run:
        out.append('<h3>Not run (invalid or missing)</h3><table class="problems"><thead><tr><th>student</th>'
                   "<th>status</th><th>why</th></tr></thead><tbody>")
        out += [f'<tr><td>{_e(who)}</td><td>{_e(status)}</td><td class="msg">{_e(msg)}</td></tr>'
                for who, status, msg in s.not_run]
        out.append("</tbody></table>")
    if s.flagged:
        out.append('<h3 id="flagged">Flagged: changed what the grader ignores</h3><p>None of it changed a score '
                   "(the grader runs the instructor's cells and reads only the answers), but it is worth a look."
                   '</p><table class="problems"><thead><tr><th>student</th><th>what</th></tr></thead><tbody>')
        out += [f'<tr><td>{_e(who)}</td><td class="msg">{_e("; ".join(flags))}</td></tr>' for who, flags in s.flagged]
        out.append("</tbody></table>")
    if s.not_graded:
        out.append('<h3 id="not-graded">Not graded yet</h3><p>A run of other parts (<code>grader autograde '
                   "--parts</code>) had no earlier score to keep for these cells: they count no points until a run "
                   "grades them (the next plain <code>grader autograde</code> does).</p><ul>")
        out += [f"<li><code>{_e(c)}</code>: {n} students</li>" for c, n in s.not_graded.items()]
        out.append("</ul>")
    out += _time_section(s)
    if any(sub.late is not None for sub in s.submissions):
        out.append(f'<p id="late">{s.late} of {s.students} handed in late (the course file\'s late policy where it '
                   "gives a deadline, else Canvas's LATE flag); the table below says who, and what it costs.</p>")
    out.append("<h2>Manual grading</h2>")
    total = sum(s.waiting.values())
    if total:
        out.append(f'<p id="waiting">{total} answers of {s.waiting_students} students wait for a manual grade '
                   "(in nbgrader's formgrader):</p><ul>")
        out += [f"<li><code>{_e(g)}</code>: {n}</li>" for g, n in s.waiting.items()]
        out.append("</ul>")
    else:
        out.append('<p id="waiting">No answer waits for a manual grade.</p>')
    out += _students_section(s)
    out.append(f"<script>{_SEARCH_JS}</script>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _time_section(s: Summary) -> list[str]:
    """Time per submission: the figures and what they mean for a cluster."""
    out = ['<h2 id="time">Time per submission</h2>']
    t = s.timing
    if t is None:
        return out + ["<p>Not stored in these results (written before the grader timed its runs, or none ran).</p>"]
    untimed = s.students - t.count
    out += [
        '<table class="problems" id="timing"><tbody>',
        f'<tr><td>submissions timed</td><td class="num">{t.count}</td></tr>',
        f'<tr><td>mean</td><td class="num">{duration(t.mean)}</td></tr>',
        f'<tr><td>95th percentile (nearest rank)</td><td class="num">{duration(t.p95)}</td></tr>',
        f'<tr><td>slowest</td><td class="num">{duration(t.slowest)}</td><td>{_e(t.slowest_student)}</td></tr>',
        "</tbody></table>",
        '<p class="note">The wall time of each submission\'s grading, kernel start to verdict (result.json\'s '
        "<code>seconds</code>, else the sum of its <code>timing</code>). The 95th percentile by nearest rank: "
        "the ceil(0.95 &times; n)-th shortest of the n times; 95% of the submissions took this long or less."
        + (f" {untimed} submissions have no time (invalid, missing, or graded before times were stored)."
           if untimed else "") + "</p>",
        f'<p id="sizing">{_e(sizing(t))}</p>',
    ]
    return out


def _part_mark(outcome: Outcome | None) -> str:
    """A part in a student's row: \u2713 passed, \u2717 no case passed, else the share of cases; "" not judged."""
    if outcome is None:
        return ""
    return "\u2713" if outcome.passed else "\u2717" if outcome.fraction <= 0 else f"{round(100 * outcome.fraction)}%"


def late_mark(sub: Submission) -> str:
    """The late column: late or on time by the course file's policy (with the share it costs), else by
    ``handed_in.json``'s ``late_flag``; "" when nothing says."""
    mark = {True: "late", False: "on time", None: ""}[sub.late]
    return f"{mark} (\u2212{sub.penalty:.0%})" if sub.penalty else mark


def _students_section(s: Summary) -> list[str]:
    """One row per student, light enough for 2,000 rows (closing tags left out, as HTML allows), searchable."""
    heads = "".join(f'<th class="p">{_e(p)}' for p in s.part_names)
    out = ['<h2 id="students-title">Students</h2>',
           '<p><input type="search" id="student-search" hidden aria-label="Search the students" '
           'placeholder="Search: a student, a status, late, \u2717 ..."> '
           f'<span id="student-count" class="note">{len(s.submissions)} students</span></p>',
           '<p class="note">Each part: \u2713 every case passed, \u2717 none, else the share of cases passed; '
           "empty when it was not judged (the notebook did not run). Score: the gradebook's.</p>",
           '<div class="wide"><table id="students"><thead><tr><th>student<th>status<th>score'
           f"{heads}<th>late<th>handed in<th>seconds</thead><tbody>"]
    for sub in s.submissions:
        marks = "".join(f"<td>{_part_mark(sub.parts.get(p))}" for p in s.part_names)
        secs = "" if sub.seconds is None else f"{sub.seconds:.1f}"
        out.append(f"<tr><td>{_e(sub.student)}<td>{_e(sub.status)}<td class=num>{_fmt(sub.score)}/"
                   f"{_fmt(s.max_score)}{marks}<td>{late_mark(sub)}<td>{_e(sub.submitted_at or '')}"
                   f"<td class=num>{secs}")
    out.append("</tbody></table></div>")
    return out


def csv_rows(summary: Summary) -> list[dict]:
    out = []
    for r in summary.parts:
        row = {"part": r.part, "test_cell": r.cell, "judged": r.judged, "passed": r.passed,
               "pass_rate": round(r.pass_rate, 4), "mean_cases_passed": round(r.mean_fraction, 4)}
        for i, f in enumerate(r.failures, 1):
            row[f"failure_{i}"], row[f"students_{i}"] = csv_safe(f.message), f.students
        out.append(row)
    return out


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def report(assignment: str, course_dir: Path, out_dir: Path | None = None) -> tuple[Path, Path, Summary]:
    """Write ``report.html`` and ``report.csv`` (each to a temporary file, then renamed) into ``out_dir``,
    by default ``<course-dir>/reports/<assignment>/``; return their paths and the summary."""
    results = load(assignment, course_dir)
    summary = summarize(results)
    out = Path(out_dir) if out_dir is not None else Path(course_dir) / REPORTS / results.assignment
    out.mkdir(parents=True, exist_ok=True)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(csv_rows(summary))
    _write(out / "report.csv", buf.getvalue())
    _write(out / "report.html", render_html(summary))
    return out / "report.html", out / "report.csv", summary
