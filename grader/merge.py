"""``grader merge SHARD_DIR...``: put the results of a class graded in shards into one course folder.

A large class is graded as N shards (``grader autograde A --shard I/N --course-dir SHARD_DIR --secret FILE``),
each on a machine of its own (a pod of a Kubernetes Indexed Job, a task of a Slurm array), each into a course
folder of its own. Merging copies each recorded result (the student's work folder: ``result.json``,
``executed.ipynb``, ``handed_in.json``...) into the main course folder and writes it into the main gradebook
with the same code a one-machine run records with (:func:`grader.autograde.record_result`), which reads every
score back. So ``grader export``, ``feedback`` and ``report`` then see the class as if one machine had graded it.

Refused, before anything is written (:class:`MergeError`):

- a folder that is not a shard's course folder (no ``work/``, no grading secret);
- shards whose grading secrets differ, or differ from the main folder's (the per-student seeds would differ: the
  hidden cases of two students would not be drawn the same way as on one machine);
- two shards claiming the same slice (``shard.json``), or slices of different counts;
- a student graded by two of the folders given (an overlap: which grade counts is not for the merge to guess);
- a student whose result in the main folder differs from the shard's (graded there already, another notebook or
  another outcome); ``--force`` replaces it. The same result merged twice is left as it is: a merge can be
  run again after the last shard ends.

A shard's student whose grading did not finish (no recorded result: the pod was stopped) is not merged and is
named in the summary, with the exit status 1: rerun that shard (autograde resumes) and merge again.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from .autograde import SECRET, SHARD, STAGED, check_ready, live_folder, record_result
from .course import GraderError, load_assignment


class MergeError(GraderError):
    """The shards cannot be merged as given: nothing was written."""


@dataclass(frozen=True)
class Graded:
    """One recorded result of a shard."""

    assignment: str
    student: str
    folder: Path  # the shard's work folder in force for this student
    shard: Path  # the shard's course folder


@dataclass
class MergeReport:
    """What ``merge`` did."""

    merged: list[Graded] = field(default_factory=list)
    unchanged: list[Graded] = field(default_factory=list)  # the same result was already in the main folder
    unfinished: list[tuple[str, str, Path]] = field(default_factory=list)  # (assignment, student, shard)
    shards: list[tuple[Path, dict]] = field(default_factory=list)  # each folder and its shard.json ({} if none)

    @property
    def exit_status(self) -> int:
        return 1 if self.unfinished else 0


def _secret(folder: Path) -> str | None:
    path = folder / SECRET
    return path.read_text().strip() if path.is_file() else None


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise MergeError(f"{path} cannot be read: {exc}") from None


def check_shards(shards: list[Path], course_dir: Path) -> tuple[str, list[dict]]:
    """The one grading secret all the folders share, and each shard's ``shard.json`` (``{}`` without one)."""
    if not shards:
        raise MergeError("name the shards' course folders to merge")
    if len({s.resolve() for s in shards}) != len(shards) or course_dir.resolve() in {s.resolve() for s in shards}:
        raise MergeError("each shard folder once, and none of them the main course folder "
                         f"({course_dir}): merge them into another one")
    for s in shards:
        if not (s / "work").is_dir() or _secret(s) is None:
            raise MergeError(f"{s} is not a shard's course folder: no work/ or no {SECRET} (grade it with "
                             "`grader autograde A --shard I/N --course-dir FOLDER --secret FILE`)")
    secrets = {_secret(s) for s in shards}
    main = _secret(course_dir)
    if len(secrets) > 1 or (main is not None and main not in secrets):
        raise MergeError("the shards were graded with different grading secrets"
                         + ("" if len(secrets) > 1 else f" from {course_dir}'s") +
                         ": the hidden cases of their students were not drawn as one run would; grade every shard "
                         f"with `--secret` pointing at one file ({course_dir / SECRET})")
    claims = [_read(s / SHARD) if (s / SHARD).is_file() else {} for s in shards]
    _check_claims(shards, claims)
    return secrets.pop(), claims


def _check_claims(shards: list[Path], claims: list[dict]) -> None:
    counts = {c["of"] for c in claims if "of" in c}
    if len(counts) > 1:
        raise MergeError(f"the shards are slices of different counts ({', '.join(map(str, sorted(counts)))}): "
                         "grade every shard with the same N")
    seen: dict[int, Path] = {}
    for s, c in zip(shards, claims):
        if "shard" in c:
            if c["shard"] in seen:
                raise MergeError(f"{seen[c['shard']]} and {s} both graded shard {c['shard']}/{c['of']}")
            seen[c["shard"]] = s


def recorded_results(shard: Path, report: MergeReport) -> list[Graded]:
    """Every result a shard recorded; a student whose grading did not finish goes to ``report.unfinished``."""
    found = []
    for work in sorted(p for p in (shard / "work").iterdir() if p.is_dir() and not p.name.startswith(".")):
        students = sorted({p.name.split("+")[0] for p in work.iterdir() if p.is_dir() and not p.name.startswith(".")})
        for student in students:
            wd = live_folder(work, student)
            if (wd / "recorded.json").is_file() and (wd / "result.json").is_file():
                found.append(Graded(work.name, student, wd, shard))
            else:
                report.unfinished.append((work.name, student, shard))
    return found


def _same(a: Path, b: Path) -> bool:
    return all((a / f).is_file() and (b / f).is_file() and (a / f).read_bytes() == (b / f).read_bytes()
               for f in ("recorded.json", "result.json"))


def _plan(found: list[Graded], course_dir: Path, force: bool, report: MergeReport) -> list[Graded]:
    """What to write: refuses overlaps and conflicts with the main folder, sets aside what it already holds."""
    by_key: dict[tuple[str, str], list[Graded]] = {}
    for g in found:
        by_key.setdefault((g.assignment, g.student), []).append(g)
    overlaps = [f"{a}/{s} ({', '.join(str(g.shard) for g in gs)})" for (a, s), gs in by_key.items() if len(gs) > 1]
    if overlaps:
        raise MergeError(f"graded in more than one shard: {'; '.join(overlaps)}: which grade counts is not for the "
                         "merge to guess; merge one of the folders only, or grade the student again")
    todo, conflicts = [], []
    for g in found:
        there = live_folder(course_dir / "work" / g.assignment, g.student)
        if (there / "recorded.json").is_file() and _same(there, g.folder):
            report.unchanged.append(g)
        elif (there / "recorded.json").is_file() and not force:
            conflicts.append(f"{g.assignment}/{g.student}")
        else:
            todo.append(g)
    if conflicts:
        raise MergeError(f"{course_dir} already holds another result for {', '.join(conflicts)}: --force replaces "
                         "it with the shard's")
    return todo


def merge(shards: list[Path], course_dir: Path, force: bool = False) -> MergeReport:
    """Merge the shards' recorded results into ``course_dir`` (see the module's docstring)."""
    course_dir = course_dir.resolve()
    shards = [s.resolve() for s in shards]
    secret, claims = check_shards(shards, course_dir)
    report = MergeReport(shards=list(zip(shards, claims)))
    found = [g for s in shards for g in recorded_results(s, report)]
    assignments = {name: load_assignment(name) for name in sorted({g.assignment for g in found})}
    todo = _plan(found, course_dir, force, report)
    course_dir.mkdir(parents=True, exist_ok=True)
    if _secret(course_dir) is None:
        tmp = course_dir / (SECRET + ".tmp")
        tmp.write_text(secret)
        tmp.chmod(0o600)
        tmp.replace(course_dir / SECRET)
    for a in assignments.values():
        if any(g.assignment == a.name for g in todo):
            check_ready(a, course_dir)
    for g in todo:
        _merge_one(assignments[g.assignment], g, course_dir)
        report.merged.append(g)
    return report


def _merge_one(a, g: Graded, course_dir: Path) -> None:
    """Copy one work folder into the main folder's staging folder and record it there (then it is in force)."""
    stage = course_dir / "work" / a.name / (g.student + STAGED)
    if stage.exists():
        shutil.rmtree(stage)
    stage.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(g.folder, stage, symlinks=True)
    digest = _read(stage / "recorded.json").get("sha256", "none")
    (stage / "recorded.json").unlink()  # recorded again, in this gradebook
    record_result(a, course_dir, g.student, stage, _read(stage / "result.json"), digest)


def summary(report: MergeReport) -> list[str]:
    lines = []
    for s, claim in report.shards:
        slice_ = f"shard {claim['shard']}/{claim['of']}" if "shard" in claim else "no shard.json"
        lines.append(f"{s}: {slice_}, {sum(g.shard == s for g in report.merged)} merged, "
                     f"{sum(g.shard == s for g in report.unchanged)} already there")
    counts = {c["of"] for _, c in report.shards if "of" in c}
    if counts:
        missing = sorted(set(range(counts.pop())) - {c["shard"] for _, c in report.shards if "shard" in c})
        if missing:
            lines.append(f"not merged yet: shard(s) {', '.join(map(str, missing))}")
    if report.unfinished:
        lines.append("grading did not finish (not merged; rerun the shard, then merge again): "
                     + ", ".join(f"{a}/{s} in {sh}" for a, s, sh in report.unfinished))
    return lines
