"""The ``grader`` command line: release, collect, autograde, feedback, export, report, formgrade, publish (over
nbgrader)."""
from __future__ import annotations

import argparse
import logging
import os
import sys
import warnings
from pathlib import Path

from .course import DEFAULT_COURSE_DIR, GraderError

COURSE_DIR_HELP = "grading workspace: gradebook, autograded notebooks, feedback (default: _grading/)"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="grader", description="Release, grade and return the course's assignments.")
    p.add_argument("--course-dir", type=Path, default=DEFAULT_COURSE_DIR, help=COURSE_DIR_HELP)
    # --course-dir is accepted after the command too (`grader autograde A --course-dir X`); there its
    # default is "not given", so that it does not undo a --course-dir given before the command.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--course-dir", type=Path, default=argparse.SUPPRESS, help=COURSE_DIR_HELP)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("release", parents=[common], help="generate notebooks/ASSIGNMENT from solutions/ASSIGNMENT")
    r.add_argument("assignment")
    r.add_argument("--check", action="store_true", help="only check that notebooks/ is up to date")
    c = sub.add_parser("collect", parents=[common],
                       help="unpack a Canvas or Moodle download of submissions into the folders autograde reads")
    c.add_argument("assignment")
    c.add_argument("--zip", type=Path, required=True, dest="archive", metavar="FILE",
                   help="the LMS's 'download all submissions' archive")
    c.add_argument("--roster", type=Path, metavar="FILE",
                   help="CSV with the columns lms_id,student_id (default: the LMS id is the student id)")
    c.add_argument("--submissions", type=Path, metavar="DIR",
                   help="where to write <student_id>/ASSIGNMENT/<notebook> (default: COURSE_DIR/submitted)")
    c.add_argument("--force", action="store_true", help="replace a student's folder collected before")
    c.add_argument("--max-file-mib", type=float, default=64,
                   help="largest file read from the archive, uncompressed (default 64)")
    c.add_argument("--max-total-mib", type=float, default=2048,
                   help="most the archive may expand to in all (default 2048)")
    g = sub.add_parser("autograde", parents=[common], help="grade a folder of submissions")
    g.add_argument("assignment", nargs="+",
                   help="the assignment; several are graded as one queue from nbgrader's submitted/ layout")
    g.add_argument("--submissions", type=Path, required=True,
                   help="folder of <student_id>/<notebook>.ipynb, or nbgrader's <student_id>/<assignment>/ layout "
                        "(the only one with several assignments)")
    g.add_argument("--workers", type=int, default=2, help="submissions graded at once (default 2)")
    g.add_argument("--cell-timeout", type=int, default=60, help="seconds a cell may run (default 60)")
    g.add_argument("--notebook-timeout", type=int, default=900, help="seconds a notebook may run (default 900)")
    g.add_argument("--memory-gib", type=float, default=4.0, help="memory limit of each kernel (default 4)")
    g.add_argument("--interrupt-grace", type=float, default=10.0,
                   help="seconds an interrupted cell has to stop before its kernel is stopped (default 10)")
    g.add_argument("--force", action="store_true", help="grade again what an earlier run already graded")
    g.add_argument("--parts", metavar="P[,P...]", type=lambda v: [p for p in v.split(",") if p.strip()],
                   help="grade only these parts (PART or ASSIGNMENT:PART; a part's whole test cell), for every "
                        "student; every other cell keeps the score of the grading in force, or is recorded as not "
                        "graded where there is none")
    g.add_argument("--shard", metavar="I/N", help="grade only the I-th (0-based) of N slices of the students, "
                   "into this --course-dir (a cluster's pod or array task); then `grader merge` the shards")
    g.add_argument("--secret", type=Path, metavar="FILE",
                   help="the class's grading secret, copied into --course-dir first (every shard needs the same)")
    m = sub.add_parser("merge", parents=[common], help="merge shards' course folders into --course-dir")
    m.add_argument("shards", nargs="+", type=Path, metavar="SHARD_DIR", help="a shard's --course-dir")
    m.add_argument("--force", action="store_true", help="replace a different result the course folder holds")
    f = sub.add_parser("feedback", parents=[common], help="write one HTML feedback file per student")
    f.add_argument("assignment")
    e = sub.add_parser("export", parents=[common],
                       help="write the grades as CSV, or as a file that Canvas or Moodle imports")
    e.add_argument("assignment")
    e.add_argument("--csv", "--out", type=Path, required=True, dest="csv", metavar="FILE", help="output file")
    e.add_argument("--format", choices=["csv", "canvas", "moodle"], default="csv",
                   help="csv (default): the grader's columns; canvas: Canvas's gradebook import CSV; moodle: the "
                        "assignment's offline grading worksheet")
    e.add_argument("--roster", type=Path, metavar="FILE",
                   help="the collect roster (lms_id,student_id[,name,sis_user_id,sis_login_id,section,email]), for "
                        "students whose LMS id no handed_in.json gives")
    e.add_argument("--course-file", type=Path, metavar="FILE",
                   help="deadlines, extensions, the late policy and Canvas ids (default: COURSE_DIR/course.toml)")
    e.add_argument("--lms-assignment-id", metavar="ID",
                   help="the Canvas assignment's id: the number at the end of its Canvas address")
    e.add_argument("--part-columns", action="store_true", help="add one column per part: the points it earned")
    rp = sub.add_parser("report", parents=[common],
                        help="write the class report (report.html, report.csv): scores, pass rates, failures")
    rp.add_argument("assignment")
    rp.add_argument("--out", type=Path, metavar="DIR",
                    help="where to write report.html and report.csv (default: COURSE_DIR/reports/ASSIGNMENT)")
    fg = sub.add_parser("formgrade", parents=[common],
                        help="serve nbgrader's formgrader on the gradebook, to grade the written answers by hand")
    fg.add_argument("--port", type=int, default=8890, help="port on 127.0.0.1 (default 8890)")
    fg.add_argument("--ip", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    fg.add_argument("--no-browser", action="store_true", help="do not open a browser")
    pb = sub.add_parser("publish", parents=[common],
                        help="write a new git repository of the public files only (no solutions/), ready to push")
    pb.add_argument("dest", type=Path, metavar="DEST", help="a folder that does not exist yet, or an empty one")
    pb.add_argument("--rev", default="HEAD", help="the commit to publish (default HEAD: uncommitted changes are not)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
    warnings.filterwarnings("ignore", module="nbgrader")  # SQLAlchemy notes from inside nbgrader
    # nbgrader runs alembic from PATH for its database migrations: make it the one of this Python.
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    course_dir = args.course_dir.resolve()
    try:
        if args.command == "release":
            from .release import is_up_to_date, release

            if args.check:
                ok, why = is_up_to_date(args.assignment, course_dir)
                print(why)
                return 0 if ok else 1
            out = release(args.assignment, course_dir)
            print(f"released {args.assignment} into {out}")
        elif args.command == "collect":
            from .collect import MIB, ArchiveLimits, collect, summary

            limits = ArchiveLimits(int(args.max_file_mib * MIB), int(args.max_total_mib * MIB))
            report = collect(args.assignment, args.archive, args.submissions or course_dir / "submitted",
                             args.roster, args.force, limits)
            print("\n".join(summary(report)))
            return report.exit_status
        elif args.command == "autograde":
            from .autograde import Limits, autograde
            from .sandbox import sandbox_available

            if not sandbox_available():
                print("warning: bubblewrap is not available: student code runs WITHOUT network isolation "
                      "and can read files on this machine", file=sys.stderr)

            def show(student: str, r: dict) -> None:
                print(f"{student}: {r['status']} {r['score']:g}/{r['max_score']:g}  {r['message']}", flush=True)

            limits = Limits(args.workers, args.cell_timeout, args.notebook_timeout, args.memory_gib,
                            args.interrupt_grace)
            if args.parts is not None:
                from .autograde import resolve_parts
                from .course import load_assignment

                for name, chosen in resolve_parts([load_assignment(n) for n in args.assignment], args.parts).items():
                    print(f"{name}: grading the parts {', '.join(chosen)}; the other cells keep their scores",
                          flush=True)
            shard = None
            if args.shard is not None:
                from .autograde import parse_shard

                shard = parse_shard(args.shard)
            results = autograde(args.assignment, args.submissions, course_dir, limits, args.force, progress=show,
                                parts=args.parts, shard=shard, secret=args.secret)
            print(f"{len(results)} submissions graded; results in {course_dir}")
        elif args.command == "merge":
            from .merge import merge, summary

            done = merge(args.shards, course_dir, args.force)
            print("\n".join(summary(done)))
            print(f"{len(done.merged)} results merged into {course_dir}")
            return done.exit_status
        elif args.command == "feedback":
            from .feedback import feedback

            files = feedback(args.assignment, course_dir)
            print(f"wrote {len(files)} feedback files under {course_dir / 'feedback'}")
        elif args.command == "export":
            from .lms import write

            data = write(args.assignment, course_dir, args.csv, args.format, args.roster, args.course_file,
                         args.lms_assignment_id, args.part_columns)
            print(f"wrote {len(data)} rows to {args.csv}")
            pending = [row["student_id"] for row in data if row["status"] == "pending"]
            if pending:
                print(f"grading did not finish for {len(pending)} (status pending): {', '.join(pending)}; run "
                      "`grader autograde` again", file=sys.stderr)
                return 1
        elif args.command == "formgrade":
            from .formgrade import formgrade

            return formgrade(course_dir, args.port, args.ip, browser=not args.no_browser)
        elif args.command == "report":
            from .report import report, timing_line

            page, table, summary = report(args.assignment, course_dir, args.out)
            worst = summary.parts[0] if summary.parts else None
            print(f"wrote {page} and {table}: {summary.students} submissions"
                  + (f"; lowest pass rate: {worst.part} ({worst.passed}/{worst.judged})" if worst else "")
                  + (f"; {summary.late} handed in late" if summary.late else ""))
            print(timing_line(summary))
        elif args.command == "publish":
            from .publish import publish

            done = publish(args.dest, args.rev)
            print(f"published {args.rev} ({done.source[:12]}) into {done.dest}: {done.files} files, "
                  f"{len(done.private)} private ones left out, one commit {done.commit[:12]} on main")
            if done.uncommitted:
                print(f"not published (uncommitted): {', '.join(done.uncommitted)}", file=sys.stderr)
            print(f"push it with: git -C {done.dest} push <public remote> main")
    except GraderError as exc:
        print(f"grader: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
