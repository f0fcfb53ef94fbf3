"""``grader collect``: turn a Canvas or Moodle "download all submissions" archive into the folders that
``grader autograde`` reads, ``<submissions>/<student_id>/<assignment>/<notebook>`` (nbgrader's layout).

The archive's file names say whose each file is:

- **Canvas** (a flat archive): ``<lastfirst>_[LATE_]<user id>_<upload id>_<file name>``, e.g.
  ``smithjane_LATE_12345_67890_word2vec-1.ipynb``. Canvas appends ``-1``, ``-2``... to a file handed in
  again under the same name, and gives every upload a new, larger upload (attachment) id.
- **Moodle**: ``<Full Name>_<participant id>_assignsubmission_file/<file name>`` (Moodle 4.1 and later),
  ``..._assignsubmission_file_/<file name>`` (3.1 to 4.0) or ``..._assignsubmission_file_<file name>``
  (folders turned off). Moodle writes the name with its ``_`` replaced by spaces, and each file's upload
  time as the member's modification time. Other plugins' files (``assignsubmission_onlinetext``) are ignored.

Which notebook of a student is collected (:func:`choose`): the uploads whose name, once a copy suffix is
taken off (Canvas's ``-N``, a browser's `` (N)``), is the assignment's notebook; if there is none and all
the student's notebooks are one file under another name (``Untitled.ipynb``), that one. Of several uploads
of the same notebook the latest wins: the larger Canvas upload id, then the later modification time, then
the larger copy number. A notebook inside a ``.zip`` the student uploaded counts like any other. Anything
else (several different notebooks, none, two uploads that nothing orders) is reported, never guessed.

Errors: an archive that cannot be trusted as a whole (not a zip, empty, a member path with ``..`` or an
absolute one, a member or the whole over the size limits, Canvas and Moodle names mixed) raises
:class:`CollectError` and nothing is written. A problem of one student's (no notebook, an ambiguous
choice, a damaged zip of theirs, a notebook that ``grader autograde`` would refuse, an id missing from
the roster, a folder collected before that differs) skips that student with a reason in the
:class:`Report`. Everything is written into a temporary folder beside the destination first and moved
into place at the end; a failed move puts back what was there.

Beside the notebook (or the note, :data:`COLLECT_NOTE`) each student's folder gets :data:`LMS_NOTE`, what
the LMS said of the hand-in, for ``grader autograde`` to pass on and ``grader export --format canvas|moodle``
to send the grades back: ``{"lms": "canvas" | "moodle", "lms_id": "12345", "name": ..., "late_flag": true |
false | null, "submitted_at": "2024-03-01T09:00:00" | null, "file": <archive member> | null, "roster": {...}}``.
``submitted_at`` is the archive member's date and time (of the student's zip, for a notebook inside one): the
LMS server's local time, without a time zone. ``late_flag`` is Canvas's ``LATE_`` marker (null for Moodle).
``roster`` holds the roster's other columns (``name``, ``sis_user_id``, ``sis_login_id``, ``section``,
``email``, and any more) for that student; ``{}`` without a roster.
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import tempfile
import zipfile
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path, PurePosixPath

from nlpcourse.errors import FormatError

from .course import Assignment, GraderError, load_assignment, safe_id
from .notebook import InvalidSubmission, read_submission

MIB = 2**20
CANVAS = re.compile(r"^(?P<name>[^_/]+)_(?:(?P<late>(?i:late))_)?(?P<id>\d+)_(?P<upload>\d+)_(?P<file>[^/]+)$")
MOODLE = re.compile(r"^(?P<name>[^_/]+)_(?P<id>\d+)_assignsubmission_(?P<plugin>[a-z]+)"
                    r"(?:_?/(?P<path>.+)|_(?P<file>[^/]+))$")
_COPY = re.compile(r"^(?P<stem>.+?)(?:-(?P<dash>\d+)| \((?P<paren>\d+)\))$")  # word2vec-1, word2vec (1)
_READ_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError, ValueError, OSError)
ROSTER_COLUMNS = ("lms_id", "student_id")
#: Optional roster columns that ``grader export --format canvas|moodle`` uses (any other column is kept too).
ROSTER_OPTIONAL = ("name", "sis_user_id", "sis_login_id", "section", "email")
#: In ``<submissions>/<student>/<assignment>/`` instead of a notebook: ``{"status": "invalid" | "missing",
#: "why": ...}``, so that a student whose hand-in could not be collected still gets a row with 0 points.
COLLECT_NOTE = "not-collected.json"
#: Beside each collected notebook (or note): what the archive said of the hand-in (grader.autograde.handed_in).
LMS_NOTE = "lms.json"


class CollectError(GraderError, FormatError):
    """The archive, the roster or a limit cannot be used: nothing was written."""


class _Damaged(Exception):
    """A student's own zip cannot be read: that student is skipped, the others are collected."""


@dataclass(frozen=True)
class ArchiveLimits:
    """How much the archive may expand to: one file read from it, and all of them together."""

    max_file_bytes: int = 64 * MIB
    max_total_bytes: int = 2048 * MIB

    def check(self) -> None:
        for option, value in (("--max-file-mib", self.max_file_bytes), ("--max-total-mib", self.max_total_bytes)):
            if value <= 0:
                raise CollectError(f"{option} must be positive, got {value / MIB:g}")


@dataclass(frozen=True)
class Upload:
    """One notebook a student handed in, where it is in the archive, and what orders it among theirs."""

    member: str  # the archive member: the notebook, or the student's zip that holds it
    inner: str | None  # the notebook's name inside the student's zip
    path: str  # the notebook's name as the student gave it (the LMS's prefix removed)
    order: tuple  # larger is later
    late: bool = False
    container: str = ""  # the student's zip, as they named it
    submitted_at: str | None = None  # the archive member's date_time, naive ISO (the LMS server's local time)

    @property
    def filename(self) -> str:
        return PurePosixPath(self.path).name

    @property
    def label(self) -> str:
        return f"{self.path} (in {self.container})" if self.inner else self.path


@dataclass
class LmsStudent:
    """Everything the archive holds for one LMS id."""

    lms_id: str
    name: str
    uploads: list[Upload] = field(default_factory=list)
    others: list[str] = field(default_factory=list)  # files that are not notebooks
    damaged: list[str] = field(default_factory=list)  # the student's zips that could not be read
    layout: str = ""  # "Canvas" or "Moodle"


@dataclass
class Report:
    """What ``collect`` did, student by student."""

    assignment: str
    destination: Path
    collected: list[tuple[str, str]] = field(default_factory=list)  # (student id, note)
    unchanged: list[str] = field(default_factory=list)  # collected before, the same notebook
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (who, why)
    unrecognised: list[str] = field(default_factory=list)  # members named neither the Canvas nor the Moodle way
    absent: list[str] = field(default_factory=list)  # roster students with nothing in the archive
    #: (student id, status, why) of each student known by id whose folder holds no notebook but a note
    #: (COLLECT_NOTE) that `grader autograde` turns into a row: invalid (what they handed in cannot be graded)
    #: or missing (a roster student with nothing in the archive)
    noted: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def exit_status(self) -> int:
        """0 when every file of the archive was accounted for, 1 when something was skipped."""
        return 1 if self.skipped or self.unrecognised else 0


# ------------------------------------------------------------------ the roster


def read_roster(path: Path) -> dict[str, str]:
    """LMS id -> course student id, from a CSV file with the columns ``lms_id,student_id``."""
    return {lms_id: row["student_id"] for lms_id, row in read_roster_rows(path).items()}


def read_roster_rows(path: Path) -> dict[str, dict[str, str]]:
    """LMS id -> the roster's row (every column, stripped), from a CSV file with at least the columns
    ``lms_id,student_id``; the optional ones (:data:`ROSTER_OPTIONAL`) and any other are kept."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise CollectError(f"roster {path} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise CollectError(f"roster {path} is not UTF-8 text") from None
    rows = csv.DictReader(io.StringIO(text))
    rows.fieldnames = [name.strip() for name in rows.fieldnames or []]
    if not set(ROSTER_COLUMNS) <= set(rows.fieldnames):
        raise CollectError(f"roster {path} needs the columns {','.join(ROSTER_COLUMNS)}; its header is "
                           f"{','.join(rows.fieldnames) or 'empty'}")
    mapping: dict[str, str] = {}
    full: dict[str, dict[str, str]] = {}
    for row in rows:
        lms_id, student = ((row.get(c) or "").strip() for c in ROSTER_COLUMNS)
        _add_roster_row(mapping, path, rows.line_num, lms_id, student)
        if lms_id:
            full[lms_id] = {k: (v or "").strip() for k, v in row.items() if k}
    if not mapping:
        raise CollectError(f"roster {path} maps no student")
    return full


def _add_roster_row(mapping: dict[str, str], path: Path, line: int, lms_id: str, student: str) -> None:
    where = f"roster {path}, line {line}"
    if not lms_id and not student:
        return  # a blank line
    if not lms_id or not student:
        raise CollectError(f"{where}: both lms_id and student_id are needed")
    try:
        safe_id(student, "student id")
    except GraderError as exc:
        raise CollectError(f"{where}: {exc}") from None
    if mapping.get(lms_id, student) != student:
        raise CollectError(f"{where}: lms_id {lms_id} is mapped twice, to {mapping[lms_id]} and {student}")
    other = next((lms for lms, sid in mapping.items() if sid == student and lms != lms_id), None)
    if other is not None:
        raise CollectError(f"{where}: student_id {student} is given to two LMS ids, {other} and {lms_id}")
    mapping[lms_id] = student


# ------------------------------------------------------------------ reading the archive


def _unsafe_name(name: str) -> bool:
    """A member path that is absolute, names a drive, or climbs out with ``..``."""
    parts = re.split(r"[/\\]", name)
    return name.startswith(("/", "\\")) or bool(re.match(r"^[A-Za-z]:", name)) or ".." in parts


def _junk(name: str) -> bool:
    """A folder entry, or what a zip tool adds: ``__MACOSX/``, ``._x``, ``.ipynb_checkpoints/``, ``.DS_Store``."""
    parts = PurePosixPath(name).parts
    return name.endswith("/") or any(p.startswith(".") or p == "__MACOSX" for p in parts)


def _copy_number(filename: str) -> tuple[str, int]:
    """``word2vec-2.ipynb`` and ``word2vec (2).ipynb`` -> (``word2vec.ipynb``, 2); other names -> (name, 0)."""
    path = PurePosixPath(filename)
    m = _COPY.match(path.stem)
    if not m:
        return filename, 0
    return m["stem"] + path.suffix, int(m["dash"] or m["paren"])


def _is(name: str, suffix: str) -> bool:
    return name.lower().endswith(suffix)


class _Reader:
    """Reads members of the archive, and of the zips students uploaded, within the size limits."""

    def __init__(self, zf: zipfile.ZipFile, archive: Path, limits: ArchiveLimits):
        self.zf, self.archive, self.limits = zf, archive, limits
        self.total = 0
        self._counted: set[tuple[str, str | None]] = set()

    def read(self, zf: zipfile.ZipFile, info: zipfile.ZipInfo, key: tuple[str, str | None]) -> bytes:
        """The member's bytes; over a limit: :class:`CollectError`; damaged: :class:`_Damaged`."""
        where = f"{self.archive}: {key[0]}" + (f" -> {key[1]}" if key[1] else "")
        if info.file_size > self.limits.max_file_bytes:
            raise self._too_large(where, info.file_size)
        try:
            with zf.open(info) as fh:
                data = fh.read(self.limits.max_file_bytes + 1)  # a header that lies about the size reads no further
        except _READ_ERRORS as exc:
            raise _Damaged(f"{PurePosixPath(key[1] or key[0]).name} cannot be read ({exc})") from None
        if len(data) > self.limits.max_file_bytes:
            raise self._too_large(where, len(data))
        if key not in self._counted:
            self._counted.add(key)
            self.total += len(data)
        if self.total > self.limits.max_total_bytes:
            raise CollectError(f"{self.archive} expands to more than {self.limits.max_total_bytes / MIB:g} MiB "
                               f"(a zip bomb?); --max-total-mib raises the limit")
        return data

    def _too_large(self, where: str, size: int) -> CollectError:
        return CollectError(f"{where} is {size / MIB:.1f} MiB uncompressed, more than the limit of "
                            f"{self.limits.max_file_bytes / MIB:g} MiB (a zip bomb?); --max-file-mib raises it")

    def outer(self, info: zipfile.ZipInfo) -> bytes:
        try:
            return self.read(self.zf, info, (info.filename, None))
        except _Damaged as exc:  # the LMS's archive itself is damaged
            raise CollectError(f"{self.archive} is damaged: {exc}") from None

    def nested(self, info: zipfile.ZipInfo, shown: str) -> zipfile.ZipFile:
        """The zip a student uploaded (``shown``: its name as they gave it), opened; its member names checked."""
        data = self.outer(info)
        try:
            inner = zipfile.ZipFile(io.BytesIO(data))
        except _READ_ERRORS as exc:
            raise _Damaged(f"{shown} is not a readable zip ({exc})") from None
        bad = [i.filename for i in inner.infolist() if _unsafe_name(i.filename)]
        if bad:
            raise _Damaged(f"{shown} holds a path outside itself: {bad[0]!r}")
        return inner

    def load(self, upload: Upload) -> bytes:
        info = self.zf.getinfo(upload.member)
        if upload.inner is None:
            return self.outer(info)
        inner = self.nested(info, upload.container)
        return self.read(inner, inner.getinfo(upload.inner), (upload.member, upload.inner))


def _open_archive(archive: Path) -> zipfile.ZipFile:
    if not archive.is_file():
        raise CollectError(f"archive {archive} does not exist or is not a file")
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise CollectError(f"{archive} is not a zip archive ({exc})") from None
    bad = [info.filename for info in zf.infolist() if _unsafe_name(info.filename)]
    if bad:
        zf.close()
        raise CollectError(f"{archive} holds a member path outside the archive: {bad[0]!r} (nothing was written)")
    if not any(not _junk(info.filename) for info in zf.infolist()):
        zf.close()
        raise CollectError(f"{archive} is empty: it holds no file")
    return zf


def _match(name: str) -> tuple[str, re.Match] | None:
    m = MOODLE.match(name)
    if m:
        return "Moodle", m
    m = CANVAS.match(name)
    return ("Canvas", m) if m else None


def scan(reader: _Reader) -> tuple[dict[str, LmsStudent], list[str]]:
    """LMS id -> what the archive holds for that student, and the members no LMS named."""
    students: dict[str, LmsStudent] = {}
    unrecognised, layouts = [], set()
    for info in reader.zf.infolist():
        if _junk(info.filename):
            continue
        hit = _match(info.filename)
        if hit is None:
            unrecognised.append(info.filename)
            continue
        layout, m = hit
        layouts.add(layout)
        student = students.setdefault(m["id"], LmsStudent(m["id"], m["name"], layout=layout))
        if layout == "Moodle" and m["plugin"] != "file":
            continue  # online text and other plugins: no notebook there
        _add_member(reader, student, info, m["file"] or m["path"], layout, m)
    if len(layouts) > 1:
        raise CollectError(f"{reader.archive} mixes Canvas and Moodle file names: it is not one LMS's download")
    if not students:
        shown = ", ".join(unrecognised[:3])
        raise CollectError(f"{reader.archive} holds no file named the way Canvas or Moodle name submissions "
                           f"(e.g. smithjane_12345_67890_word2vec.ipynb, Jane Smith_4242_assignsubmission_file/"
                           f"word2vec.ipynb); it holds {shown}")
    return students, unrecognised


def _add_member(reader: _Reader, student: LmsStudent, info: zipfile.ZipInfo, path: str, layout: str,
                m: re.Match) -> None:
    seq = int(m["upload"]) if layout == "Canvas" else 0
    late = layout == "Canvas" and bool(m["late"])
    when = datetime(*info.date_time).isoformat()
    if _is(path, ".ipynb"):
        order = (seq, info.date_time, info.date_time, _copy_number(PurePosixPath(path).name)[1])
        student.uploads.append(Upload(info.filename, None, path, order, late, submitted_at=when))
    elif _is(path, ".zip"):
        try:
            inner = reader.nested(info, path)
        except _Damaged as exc:
            student.damaged.append(str(exc))
            return
        for i in inner.infolist():
            if _is(i.filename, ".ipynb") and not _junk(i.filename):
                order = (seq, info.date_time, i.date_time, _copy_number(PurePosixPath(i.filename).name)[1])
                student.uploads.append(Upload(info.filename, i.filename, i.filename, order, late, path, when))
    else:
        student.others.append(path)


# ------------------------------------------------------------------ choosing each student's notebook


def choose(student: LmsStudent, notebook: str) -> tuple[Upload | None, str]:
    """The upload to collect and a note on it, or None and the reason (see the module's docstring)."""
    if not student.uploads:
        why = "; ".join(student.damaged) or "no notebook in the archive"
        return None, why + (f" (other files: {', '.join(sorted(student.others))})" if student.others else "")
    groups: dict[str, list[Upload]] = defaultdict(list)
    for upload in student.uploads:
        groups[_copy_number(upload.filename)[0].lower()].append(upload)
    if notebook.lower() in groups:
        chosen = groups[notebook.lower()]
    elif len(groups) == 1:
        chosen = next(iter(groups.values()))
    else:
        names = ", ".join(sorted(u.label for u in student.uploads))
        return None, f"{len(student.uploads)} notebooks and none named {notebook}: {names} (not guessed)"
    return _latest(chosen, notebook)


def _latest(uploads: list[Upload], notebook: str) -> tuple[Upload | None, str]:
    ranked = sorted(uploads, key=lambda u: u.order, reverse=True)
    if len(ranked) > 1 and ranked[0].order == ranked[1].order:
        return None, (f"{len(ranked)} uploads of {notebook} and nothing tells which is the latest: "
                      f"{', '.join(sorted(u.label for u in ranked))} (not guessed)")
    best, notes = ranked[0], []
    if best.filename != notebook:
        notes.append(f"{best.label} collected as {notebook}")
    elif best.inner:
        notes.append(f"from {best.container}")
    if len(ranked) > 1:
        notes.append(f"the latest of {len(ranked)} uploads")
    if best.late:
        notes.append("late (Canvas)")
    return best, "; ".join(notes)


def lms_record(layout: str, lms_id: str, name: str | None, upload: Upload | None,
               roster_row: dict[str, str] | None) -> dict:
    """The content of :data:`LMS_NOTE` for one student of an archive of ``layout`` ("Canvas" or "Moodle");
    ``upload`` None when no notebook was chosen (nothing handed in, or nothing usable)."""
    row = roster_row or {}
    canvas = layout == "Canvas"
    return {"lms": layout.lower(), "lms_id": lms_id, "name": name or row.get("name") or None,
            "late_flag": (upload.late if upload is not None else None) if canvas else None,
            "submitted_at": upload.submitted_at if upload is not None else None,
            "file": upload.member if upload is not None else None,
            "roster": {k: v for k, v in row.items() if k not in ROSTER_COLUMNS}}


def _lms_bytes(record: dict) -> bytes:
    return (json.dumps(record, indent=1) + "\n").encode()


# ------------------------------------------------------------------ writing


@dataclass(frozen=True)
class _Planned:
    student: str
    who: str
    upload: Upload
    note: str


def _plan(students: dict[str, LmsStudent], rows: dict[str, dict[str, str]] | None, roster_path: Path | None,
          notebook: str, report: Report, records: dict[str, dict]) -> list[_Planned]:
    """The notebook to collect of each student; ``records`` gets each student's :data:`LMS_NOTE` content."""
    roster = None if rows is None else {lms: row["student_id"] for lms, row in rows.items()}
    layout = next(iter(students.values())).layout
    plan = []
    for lms_id in sorted(students, key=lambda i: (len(i), i)):
        st = students[lms_id]
        student = lms_id if roster is None else roster.get(lms_id)
        if student is None:
            report.skipped.append((f"{lms_id}, {st.name}", f"LMS id {lms_id} is not in the roster {roster_path}"))
            continue
        who = (student if student == lms_id else f"{student} (LMS id {lms_id})") + f", {st.name}"
        upload, note = choose(st, notebook)
        records[student] = lms_record(layout, lms_id, st.name, upload, (rows or {}).get(lms_id))
        if upload is None:
            report.skipped.append((who, note))
            report.noted.append((safe_id(student, "student id"), "invalid", note))
            continue
        plan.append(_Planned(safe_id(student, "student id"), who, upload, note))
    if roster is not None:
        absent = {sid: lms for lms, sid in roster.items() if lms not in students}
        report.absent = sorted(absent)
        records.update({sid: lms_record(layout, absent[sid], None, None, rows[absent[sid]]) for sid in absent})
        report.noted += [(safe_id(sid, "student id"), "missing", "nothing handed in (not in the LMS archive)")
                         for sid in report.absent]
    return plan


def _stage(reader: _Reader, p: _Planned, a: Assignment, tmp: Path, destination: Path, force: bool,
           report: Report, record: dict) -> bool:
    """Write ``p``'s notebook under ``tmp``; False (and a line in the report) when it is not to be moved."""
    try:
        data = reader.load(p.upload)
    except _Damaged as exc:
        report.skipped.append((p.who, str(exc)))
        report.noted.append((p.student, "invalid", str(exc)))
        return False
    path = tmp / p.student / a.name / a.notebook
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    try:
        read_submission(path)  # what `grader autograde` would refuse as invalid is refused here
    except InvalidSubmission as exc:
        report.skipped.append((p.who, f"{p.upload.label}: {exc}"))
        report.noted.append((p.student, "invalid", f"{p.upload.label}: {exc}"))
        shutil.rmtree(path.parent)
        return False
    if not _replaceable(destination / p.student / a.name, a.notebook, data, force, p.who, report):
        return False
    (path.parent / LMS_NOTE).write_bytes(_lms_bytes(record))
    report.collected.append((p.student, p.note))
    return True


def _replaceable(target: Path, name: str, data: bytes, force: bool, who: str, report: Report) -> bool:
    """Whether ``target`` (a student's assignment folder) may take the collected file ``name`` holding
    ``data``: it is absent, or differs and ``force`` is given; the same file is ``unchanged``."""
    if not os.path.lexists(target):
        return True
    old = target / name
    if old.is_file() and not old.is_symlink() and old.read_bytes() == data:
        report.unchanged.append(target.parent.name)
        return False
    if not force:
        report.skipped.append((who, f"{target} was collected before and differs: kept (--force replaces it)"))
        return False
    return True


def _stage_notes(report: Report, a: Assignment, tmp: Path, destination: Path, force: bool,
                 records: dict[str, dict]) -> list[str]:
    """Write the note (:data:`COLLECT_NOTE`) and :data:`LMS_NOTE` of each student who gets no notebook under
    ``tmp``; return those to move (a folder collected before is kept unless ``force``)."""
    ready = []
    for student, status, why in report.noted:
        data = (json.dumps({"status": status, "why": why}, indent=1) + "\n").encode()
        target = destination / student / a.name
        if os.path.lexists(target):
            note = target / COLLECT_NOTE
            if note.is_file() and not note.is_symlink() and note.read_bytes() == data:
                continue  # noted so before
            if not force:
                report.skipped.append((student, f"{target} was collected before: kept (--force replaces it)"))
                continue
        (tmp / student / a.name).mkdir(parents=True)
        (tmp / student / a.name / COLLECT_NOTE).write_bytes(data)
        if student in records:
            (tmp / student / a.name / LMS_NOTE).write_bytes(_lms_bytes(records[student]))
        ready.append(student)
    return ready


def _commit(tmp: Path, students: list[str], destination: Path, assignment: str) -> None:
    """Move ``tmp/<student>/<assignment>`` into ``destination``; on failure undo every move made."""
    done: list[tuple[Path, Path | None]] = []
    created_destination = not destination.exists()
    try:
        destination.mkdir(parents=True, exist_ok=True)
        for student in students:
            target = destination / student / assignment
            target.parent.mkdir(exist_ok=True)
            aside = None
            if os.path.lexists(target):  # --force: the earlier collection waits in tmp until the end
                aside = tmp / ".replaced" / student
                aside.parent.mkdir(exist_ok=True)
                os.rename(target, aside)
            done.append((target, aside))
            os.rename(tmp / student / assignment, target)
    except OSError as exc:
        _undo(done, destination, created_destination)
        raise CollectError(f"could not move the collected notebooks into {destination} ({exc}); "
                           f"it was left as it was") from None


def _undo(done: list[tuple[Path, Path | None]], destination: Path, created_destination: bool) -> None:
    for target, aside in reversed(done):
        if os.path.lexists(target):
            shutil.rmtree(target, ignore_errors=True)
        if aside is not None:
            os.rename(aside, target)
        _rmdir_if_empty(target.parent)
    if created_destination:
        _rmdir_if_empty(destination)


def _rmdir_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # not empty, or already gone


def collect(assignment: str, archive: Path, destination: Path, roster: Path | None = None, force: bool = False,
            limits: ArchiveLimits | None = None) -> Report:
    """Collect ``assignment`` from an LMS archive into ``destination/<student>/<assignment>/<notebook>``."""
    a = load_assignment(assignment)
    limits = limits or ArchiveLimits()
    limits.check()
    rows = read_roster_rows(roster) if roster is not None else None
    if destination.exists() and not destination.is_dir():
        raise CollectError(f"destination {destination} is not a folder")
    report = Report(a.name, destination)
    with _open_archive(archive) as zf:
        reader = _Reader(zf, archive, limits)
        students, report.unrecognised = scan(reader)
        records: dict[str, dict] = {}
        plan = _plan(students, rows, roster, a.notebook, report, records)
        if not plan and not report.noted:
            return report
        destination.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".collect-{a.name}-", dir=destination.parent))
        try:
            ready = [p.student for p in plan
                     if _stage(reader, p, a, tmp, destination, force, report, records[p.student])]
            ready += _stage_notes(report, a, tmp, destination, force, records)
            _commit(tmp, ready, destination, a.name)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return report


def summary(report: Report) -> list[str]:
    """The lines ``grader collect`` prints."""
    a, dest = report.assignment, report.destination
    n = len(report.collected)
    lines = [f"collected {n} student{'' if n == 1 else 's'} for {a} into {dest}/<student>/{a}/"]
    lines += [f"  {student}: {note}" for student, note in report.collected if note]
    if report.unchanged:
        lines.append(f"unchanged (collected before, the same notebook): {len(report.unchanged)}")
    if report.skipped:
        lines.append(f"skipped {len(report.skipped)}:")
        lines += [f"  {who}: {why}" for who, why in report.skipped]
    if report.unrecognised:
        shown = ", ".join(report.unrecognised[:5]) + (", ..." if len(report.unrecognised) > 5 else "")
        lines.append(f"ignored {len(report.unrecognised)} files named neither the Canvas nor the Moodle way: {shown}")
    if report.absent:
        lines.append(f"in the roster, nothing in the archive: {', '.join(report.absent)}")
    if report.noted:
        lines.append(f"no notebook for {len(report.noted)}, each graded as 0 with the reason "
                     f"({COLLECT_NOTE} in their folder): "
                     + ", ".join(f"{student} ({status})" for student, status, _ in report.noted))
    return lines
