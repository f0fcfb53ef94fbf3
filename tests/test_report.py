"""``grader report`` (grader/report.py) on a class graded without a kernel: a gradebook, ``result.json`` and
``recorded.json`` files written here, as ``grader autograde`` leaves them, for eleven students of ``backprop``
(one who passes everything, wrong values, a hostile message, a traceback quoting code, time-outs, crashes, an
invalid and a missing submission, one result in the format written before parts were stored and timings too),
with the time each grading took and a ``handed_in.json`` for two. Then the page in Chromium: nothing requested,
the histogram shown, the search box filtering the table of students (every row shown with scripts off). The
report on the planted-bug batch of every assignment is in test_grading_assignments.py
(``test_report_puts_each_bugs_parts_at_the_top``), where that batch is graded.
"""
from __future__ import annotations

import base64
import csv
import functools
import hashlib
import html
import http.server
import json
import os
import re
import shutil
import threading
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from grading_support import points

from grader.course import SOLUTIONS, GraderError, load_assignment, load_reference
from grader.report import (
    CSV_COLUMNS,
    MESSAGE_LIMIT,
    ClassResults,
    Outcome,
    Submission,
    clean_message,
    csv_safe,
    histogram,
    late_mark,
    load,
    nearest_rank,
    render_html,
    report,
    sizing,
    submission_seconds,
    summarize,
    time_figures,
    timing_line,
)

if not SOLUTIONS.is_dir():  # the public copy (`grader publish`) has no solutions/
    pytest.skip("needs solutions/ (private, not in the public copy)", allow_module_level=True)

from lms_support import backprop_gradebook  # after the skip: it reads solutions/

A = "backprop"
PARTS = {name: part.test_cell for name, part in load_reference(load_assignment(A)).PARTS.items()}
PTS = points(A)
MAX = PTS.max_auto + sum(PTS.manual.values())

NOT_RECORDED = "no result was recorded (the hidden test did not run, or stopped before the end)"
NOT_IMPLEMENTED = "case 'batch' (cpu): raised NotImplementedError: not implemented yet"
HOSTILE = "case 'small' (cpu): raised ValueError: <script>alert(1)</script>"
CODE = "return torch.where(x > 0, x, my_secret_solution_line)"
TRACEBACK = ("case 'small' (cpu): raised RuntimeError: Traceback (most recent call last):\n"
             '  File "<ipython-input-3>", line 4, in relu_forward\n'
             f"    {CODE}\n"
             "           ^^^^^^^^^^^\n"
             "ValueError: shapes differ")
MULTILINE = f"case 'one step' (cpu): raised RuntimeError: the step failed\n{CODE}"


def values_off(n: int, err: float) -> str:
    return (f"case 'batch' (cpu): output: {n} of 12 values off; max abs error {err:.3g}, max rel error {2 * err:.3g}; "
            f"worst at index (0, {n}): expected 0.2, got {0.2 + err:.6g} (rtol=1e-05, atol=1e-06, torch.float32)")


# student -> (status, {part: (fraction, first failure)}, what result.json holds besides)
CLASS = {
    "ace": ("graded", {}, {}),
    "amy": ("graded", {"linear_forward": (0.5, values_off(3, 0.5)), "mlp_logits": (0.0, values_off(12, 1.5))}, {}),
    "bob": ("graded", {"linear_forward": (0.0, values_off(5, 0.25))},
            {"flags": ["changed points of linear-test", "edited the locked cell linear-test"]}),
    "cat": ("graded", {"linear_forward": (0.25, values_off(7, 0.125)), "relu_forward": (0.0, HOSTILE)}, {}),
    "dan": ("timeout", {"relu_forward": (0.5, TRACEBACK), "train_review_classifier": (0.0, NOT_RECORDED)},
            {"timed_out": ["train-test (hidden tests)"],
             "message": "14/17 autograded points; train-test ran past 60 s and was interrupted"}),
    "eve": ("graded", {"linear_forward": (0.0, NOT_IMPLEMENTED), "sgd_step": (0.0, MULTILINE)}, {"legacy": True}),
    "fay": ("crashed", {p: (0.0, NOT_RECORDED) for p in ["mlp_logits", "mlp_loss_and_grads", "sgd_step",
                                                          "train_review_classifier"]},
            {"message": "9/17 autograded points; the kernel died after 12 code cells (os._exit, a crash, or the "
                        "3 GiB memory limit); later cells did not run"}),
    "gus": ("crashed", {p: (0.0, NOT_RECORDED) for p in PARTS if p not in ("numerical_gradient", "relative_error")},
            {"message": "2/17 autograded points; the kernel died after 7 code cells (os._exit, a crash, or the "
                        "3 GiB memory limit); later cells did not run"}),
    "hal": ("timeout", {"train_review_classifier": (0.0, NOT_RECORDED)},
            {"message": "the notebook ran past the 900 s limit and was stopped; scored on what the hidden tests "
                        "recorded before that"}),
    "ivy": ("invalid", None, {"message": "not a notebook: Expecting value: line 1 column 1 (char 0)"}),
    "jon": ("missing", None, {"message": "no backprop.ipynb in jon/"}),
}
RAN = [s for s, (status, *_) in CLASS.items() if status in ("graded", "timeout", "crashed")]
# student -> what result.json holds of the time its grading took: "seconds" (the worker's wall time), else the
# "timing" steps (cat's: 0.5 + 1 + 2 + 0.25 + 0.25 = 4 s, the per-cell entry inside "hidden" left out).
# eve's result is older (no time), ivy and jon were not run.
TIMES = {"ace": {"seconds": 4.0, "timing": {"kernel": 0.6, "hidden": 2.0}}, "amy": {"seconds": 5.0},
         "bob": {"seconds": 3.0},
         "cat": {"timing": {"kernel": 0.5, "given": 1.0, "hidden": 2.0, "prepare": 0.25, "judge": 0.25,
                            "12:hidden:activation-test": 1.9}},
         "dan": {"seconds": 61.0}, "fay": {"seconds": 12.0}, "gus": {"seconds": 8.0}, "hal": {"seconds": 900.5}}
# sorted: 3, 4, 4, 5, 8, 12, 61, 900.5; sum 997.5; mean 124.6875; p95 = the ceil(0.95 * 8) = 8th = 900.5 (hal)
HANDED_IN = {"amy": {"source": "canvas", "lms_id": "17", "name": "Amy", "late_flag": True,
                     "submitted_at": "2024-03-01T09:00:00", "file": "backprop.ipynb", "roster": {}},
             "bob": {"source": "file", "lms_id": None, "name": None, "late_flag": False,
                     "submitted_at": "2026-10-01T21:59:00+00:00", "file": None, "roster": {}}}
MANUAL_DONE = {"ace": {"written-answer": 3.0}}  # grades entered by hand in the formgrader


def outcomes(student: str) -> dict[str, tuple[float, str]]:
    status, failing, _ = CLASS[student]
    return {p: failing.get(p, (1.0, "")) for p in PARTS} if failing is not None else {}


def cell_scores(student: str) -> dict[str, float]:
    got = outcomes(student)
    if not got:
        return dict.fromkeys(PTS.auto, 0.0)
    return {cell: round(pts * sum(got[p][0] for p in PARTS if PARTS[p] == cell)
                        / sum(PARTS[p] == cell for p in PARTS), 2) for cell, pts in PTS.auto.items()}


def total(student: str) -> float:
    return round(sum(cell_scores(student).values()) + sum(MANUAL_DONE.get(student, {}).values()), 2)


def result_json(student: str) -> dict:
    """A ``result.json`` as ``grader.worker.write_result`` writes it (or wrote it before parts were stored)."""
    status, _, extra = CLASS[student]
    got, scores, cells = outcomes(student), cell_scores(student), {}
    for cell, pts in PTS.auto.items():
        mine = {p: got[p] for p in PARTS if PARTS[p] == cell} if got else {}
        lines = [f"{p}: " + (f"{round(4 * f)}/4 cases passed" + (f"; first failure: {why}" if why else "")
                             if why != NOT_RECORDED else why) for p, (f, why) in mine.items()]
        cells[cell] = {"score": scores[cell], "max_score": pts, "message": "\n".join(lines) or "not graded"}
        if got and not extra.get("legacy"):
            cells[cell]["parts"] = {p: {"fraction": f, "failure": why} for p, (f, why) in mine.items()}
    r = {"student": student, "assignment": A, "status": status, "cells": cells, "executed": bool(got),
         "message": extra.get("message", f"{sum(scores.values()):g}/{PTS.max_auto:g} autograded points"),
         "score": round(sum(scores.values()), 2), "max_score": PTS.max_auto}
    if extra.get("timed_out"):
        r["timed_out"] = extra["timed_out"]
    if extra.get("flags"):
        r["flags"] = extra["flags"]
    return {**r, **TIMES.get(student, {})}


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """The course folder ``grader autograde`` would leave behind for CLASS: the gradebook (nbgrader's own API)
    with a submission for each student whose notebook ran, and each student's work folder."""

    folder = tmp_path_factory.mktemp("report") / "course"
    for student in CLASS:
        wd = folder / "work" / A / student
        wd.mkdir(parents=True)
        (wd / "result.json").write_text(json.dumps(result_json(student), indent=1))
        (wd / "recorded.json").write_text(json.dumps({"sha256": "0" * 64}))
        if student in HANDED_IN:
            (wd / "handed_in.json").write_text(json.dumps(HANDED_IN[student]))
    a = load_assignment(A)
    with backprop_gradebook(folder) as gb:
        for student in RAN:
            gb.add_student(student)
            gb.add_submission(A, student)
            for cell, score in cell_scores(student).items():
                g = gb.find_grade(cell, a.notebook_id, A, student)
                g.auto_score, g.needs_manual_grade = score, False
            for cell, score in MANUAL_DONE.get(student, {}).items():
                g = gb.find_grade(cell, a.notebook_id, A, student)
                g.manual_score, g.needs_manual_grade = score, False
        gb.db.commit()
    return folder


@pytest.fixture(scope="module")
def summary(course):
    return summarize(load(A, course))


def row(summary, part: str):
    return next(r for r in summary.parts if r.part == part)


# ------------------------------------------------------------------ what it counts


def test_histogram_counts():
    edges, counts = histogram([0, 0, 2.5, 5, 9.99, 10, -1, 12], 10, bins=10)
    assert edges == [float(i) for i in range(11)]
    assert counts == [3, 0, 1, 0, 0, 1, 0, 0, 0, 3]  # -1 with the zeros, 12 with the tens
    assert histogram([], 0, bins=4)[1] == [0, 0, 0, 0]


def test_the_class_histogram_counts_the_gradebooks_scores(summary):
    assert summary.students == len(CLASS) and summary.max_score == MAX
    assert summary.ran_counts == histogram([total(s) for s in RAN], MAX)[1]
    assert summary.not_run_counts == [2] + [0] * 9  # invalid and missing: 0
    assert summary.statuses == {"graded": 5, "timeout": 2, "crashed": 2, "invalid": 1, "missing": 1}
    assert total("ace") == PTS.max_auto + 3  # the manual grade entered counts
    assert summary.mean == pytest.approx(sum(total(s) for s in RAN) / len(CLASS))


def test_pass_rates_worst_first(summary):
    """Only the notebooks that ran count; a part passes when every case does; the worst pass rate at the top,
    a tie broken by the mean fraction of cases passed."""
    for r in summary.parts:
        failing = [s for s in RAN if outcomes(s)[r.part][0] < 1]
        assert (r.judged, r.passed) == (len(RAN), len(RAN) - len(failing)), r.part
        assert r.mean_fraction == pytest.approx(sum(outcomes(s)[r.part][0] for s in RAN) / len(RAN))
        assert r.cell == PARTS[r.part]
    keys = [(r.pass_rate, r.mean_fraction) for r in summary.parts]
    assert keys == sorted(keys)
    assert [r.part for r in summary.parts[:2]] == ["linear_forward", "train_review_classifier"]
    assert (row(summary, "linear_forward").passed, row(summary, "train_review_classifier").passed) == (4, 5)
    assert [r.part for r in summary.parts[-2:]] == ["numerical_gradient", "relative_error"]  # all passed: in order
    assert summary.parts[-3].pass_rate == 8 / 9  # a part only gus failed


def test_messages_ranked_with_how_many_students_hit_each(summary):
    """The same message with other numbers is one (its most frequent form shown); the most frequent first."""
    lin = row(summary, "linear_forward").failures
    assert [(f.students, f.variants) for f in lin] == [(3, 3), (1, 1), (1, 1)]
    assert lin[0].message in {values_off(3, 0.5), values_off(5, 0.25), values_off(7, 0.125)}
    assert {f.message for f in lin[1:]} == {NOT_IMPLEMENTED, NOT_RECORDED}
    train = row(summary, "train_review_classifier").failures
    assert [(f.message, f.students) for f in train] == [(NOT_RECORDED, 4)]
    assert row(summary, "numerical_gradient").failures == []


def test_a_part_with_many_messages_lists_the_most_frequent(course):
    results = load(A, course)
    subs = [Submission(f"s{i}", "graded", 0.0, "", {"relu_forward": Outcome(0.0, f"case 'c{i % 7}': wrong")})
            for i in range(20)]
    r = summarize(ClassResults(A, {"relu_forward": "activation-test"}, results.max_score, subs), top=3).parts[0]
    # numbers aside, one message: its most frequent form shown (c0: i = 0, 7, 14), with how many forms it has
    assert [(f.message, f.students, f.variants) for f in r.failures] == [("case 'c0': wrong", 20, 7)]
    subs = [Submission(f"s{i}", "graded", 0.0, "", {"relu_forward": Outcome(0.0, f"case '{'abcdefg'[i % 7]}'")})
            for i in range(20)]
    r = summarize(ClassResults(A, {"relu_forward": "activation-test"}, results.max_score, subs), top=3).parts[0]
    assert [f.students for f in r.failures] == [3, 3, 3] and r.other_failures == 11


def test_timeouts_and_crashes(summary):
    """Time-outs by the cell that ran past its limit (the notebook's limit where no cell is named); crashes by
    message, numbers aside."""
    assert summary.timeouts == [
        ("the notebook ran past the 900 s limit and was stopped; scored on what the hidden tests recorded "
         "before that", ["hal"]),
        ("train-test (hidden tests)", ["dan"])]
    [(message, who)] = summary.crashes
    assert who == ["fay", "gus"] and message.startswith("the kernel died after ") and "autograded" not in message
    assert [(s, st) for s, st, _ in summary.not_run] == [("ivy", "invalid"), ("jon", "missing")]


def test_written_answers_waiting_for_a_manual_grade(summary):
    """Every submission in the gradebook waits for each written answer, but for the one graded by hand."""
    assert set(PTS.manual) == {"derivation-answer", "written-answer"}
    assert summary.waiting == {"derivation-answer": len(RAN), "written-answer": len(RAN) - 1}
    assert summary.waiting_students == len(RAN)


def test_results_written_before_parts_were_stored_read_the_same(course):
    """eve's result.json has no ``parts`` (the format before the report): her outcomes come from the cells'
    messages, one ``<part>: <verdict>`` line each, a multi-line exception kept with its part."""
    eve = next(s for s in load(A, course).submissions if s.student == "eve")
    assert "parts" not in json.dumps(result_json("eve"))
    assert {p: (o.fraction, o.failure) for p, o in eve.parts.items()} == outcomes("eve")


# ------------------------------------------------------------------ what it shows: messages only


def test_a_hostile_message_is_escaped(course, tmp_path):
    page, table, _ = report(A, course, tmp_path)
    text = page.read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert text.lower().count("<script") == 1 and "alert(1)</" not in text  # the search box's script only
    assert not re.search(r"""\b(?:src|href)\s*=\s*(?!["']?data:)""", text, re.I)  # nothing but data: to load
    assert not re.search(r"https?://|//[a-z]|@import|url\(", re.sub(r"data:image/png;base64,[\w+/=]*", "", text), re.I)


def test_a_message_quoting_code_shows_no_code(course, tmp_path):
    page, table, _ = report(A, course, tmp_path)
    for text in (page.read_text(), table.read_text()):
        assert "my_secret_solution_line" not in text and "torch.where" not in text
        assert "^^^" not in text and "ipython-input" not in text
    assert clean_message(TRACEBACK) == "case 'small' (cpu): raised RuntimeError: ValueError: shapes differ"
    assert clean_message(MULTILINE) == "case 'one step' (cpu): raised RuntimeError: the step failed [...]"


@pytest.mark.parametrize("raw, shown", [
    ("\x1b[0;31mValueError\x1b[0m: bad", "ValueError: bad"),  # terminal colours
    ("a\u2028b = secret()", "a [...]"),  # a line break by another name
    ("a\u202eb\x00c\td", "a b c d"),  # bidi overrides, NUL, tab
    ("x" * 500, "x" * (MESSAGE_LIMIT - 1) + "\u2026"),
    ("Traceback (most recent call last):\n  File 'f', line 1\n    secret()\nKeyError: 'k'", "KeyError: 'k'"),
    ("raised E: Traceback (most recent call last):\n    secret()\n  x = 1", "raised E: (a traceback, left out)"),
    ("\n\n   \n", ""),
])
def test_clean_message(raw, shown):
    assert clean_message(raw) == shown


def test_csv_columns(course, tmp_path):
    _, table, summary = report(A, course, tmp_path)
    with open(table, newline="") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
    assert reader.fieldnames == CSV_COLUMNS == [
        "part", "test_cell", "judged", "passed", "pass_rate", "mean_cases_passed",
        "failure_1", "students_1", "failure_2", "students_2", "failure_3", "students_3",
        "failure_4", "students_4", "failure_5", "students_5"]
    assert [r["part"] for r in rows] == [r.part for r in summary.parts] and len(rows) == len(PARTS)
    top = rows[0]
    assert (top["part"], top["test_cell"], top["judged"], top["passed"]) == ("linear_forward", "linear-test", "9", "4")
    assert float(top["pass_rate"]) == pytest.approx(4 / 9, abs=1e-4) and top["students_1"] == "3"
    assert rows[-1]["part"] == "relative_error" and rows[-1]["failure_1"] == rows[-1]["students_1"] == ""
    assert csv_safe("=HYPERLINK(1)") == "'=HYPERLINK(1)" and csv_safe("case 'a'") == "case 'a'"


def test_report_goes_beside_the_other_outputs_written_atomically(course):
    page, table, _ = report(A, course)
    assert page == course / "reports" / A / "report.html" and table.parent == page.parent
    assert sorted(p.name for p in page.parent.iterdir()) == ["report.csv", "report.html"]  # no temporary left
    before = page.read_text()
    report(A, course)  # replaced, the same
    assert page.read_text() == before


def test_one_students_view_puts_their_failing_parts_first(course):
    view = summarize(load(A, course).only(["amy"]))
    assert [r.part for r in view.parts[:2]] == ["mlp_logits", "linear_forward"]  # 0 cases, then half
    assert all(r.pass_rate == 1 for r in view.parts[2:])


# ------------------------------------------------------------------ the command line


@pytest.fixture
def cli(monkeypatch):
    from grader.cli import main

    monkeypatch.setenv("PATH", os.environ["PATH"])  # main() puts this Python's bin/ first; put it back after
    return main


def test_cli_writes_the_report(cli, course, tmp_path, capsys):
    assert cli(["report", A, "--course-dir", str(course), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "report.html").is_file() and (tmp_path / "out" / "report.csv").is_file()
    assert "lowest pass rate: linear_forward (4/9)" in capsys.readouterr().out


def test_cli_defaults_to_the_course_folder():
    from grader.cli import _parser
    from grader.course import DEFAULT_COURSE_DIR

    args = _parser().parse_args(["report", A])
    assert (args.course_dir, args.out) == (DEFAULT_COURSE_DIR, None)


def test_bad_input_is_a_clear_error(cli, course, tmp_path, capsys):
    assert cli(["report", "nosuch", "--course-dir", str(course)]) == 2
    assert "unknown assignment 'nosuch'" in capsys.readouterr().err
    empty = tmp_path / "empty"
    assert cli(["report", A, "--course-dir", str(empty)]) == 2
    assert "nothing graded" in capsys.readouterr().err and not (empty / "gradebook.db").exists()
    unfinished = tmp_path / "unfinished"
    shutil.copytree(course, unfinished, ignore=shutil.ignore_patterns("reports"))
    for done in unfinished.glob(f"work/{A}/*/recorded.json"):
        done.unlink()  # graded, not yet in the gradebook: nothing to report
    assert cli(["report", A, "--course-dir", str(unfinished)]) == 2
    assert "nothing graded for backprop" in capsys.readouterr().err
    shutil.rmtree(unfinished / "work")
    with pytest.raises(GraderError, match="nothing graded"):
        load(A, unfinished)
    assert not (unfinished / "reports").exists()


def test_render_html_without_results_is_a_page():
    empty = summarize(ClassResults(A, dict(PARTS), MAX, []))
    text = render_html(empty, png=b"")
    assert "0 submissions" in text and text.count("<tr data-part=") == len(PARTS)


# ------------------------------------------------------------------ in Chromium

def test_the_page_in_chromium_requests_nothing_and_shows_the_histogram(browser, course, tmp_path):
    """The report served on 127.0.0.1: every request but the page's own is recorded and aborted (a local file
    beside it would count too), the histogram is drawn, a part's row is there, the console is quiet."""
    page_path, _, _ = report(A, course, tmp_path)
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(tmp_path)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/{page_path.name}"
    context = browser.new_context(service_workers="block")
    requested, errors = [], []

    def route(r):
        if r.request.url == url:
            r.continue_()
        else:
            requested.append(r.request.url)
            r.abort("blockedbyclient")

    try:
        context.route("**/*", route)
        page = context.new_page()
        page.on("request", lambda r: r.url != url and urlsplit(r.url).scheme != "data" and requested.append(r.url))
        page.on("console", lambda m: m.type in ("error", "warning") and errors.append(m.text))
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(url, wait_until="load")
        page.wait_for_timeout(300)  # anything late
        img = page.locator("img#histogram")
        assert img.is_visible()
        assert img.evaluate("i => i.complete && i.naturalWidth > 0 && i.naturalHeight > 0")
        assert img.bounding_box()["width"] > 300
        part = page.locator('tr[data-part="linear_forward"]')
        assert part.is_visible() and "4/9" in part.inner_text() and "3\u00d7" in part.inner_text()
        first = page.locator("#parts tbody tr").first.get_attribute("data-part")
        assert first == "linear_forward"
        assert "<script>alert(1)</script>" in page.locator("body").inner_text()  # shown as text
        assert page.evaluate("document.scripts.length") == 1  # the search box's
    finally:
        context.close()
        server.shutdown()
        server.server_close()
    assert requested == [] and errors == []


def test_a_flagged_submission_is_listed_with_what_it_changed(summary, course, tmp_path):
    """What a submission changed that the grader ignores (grader.notebook.tampering) is in the report."""
    assert summary.flagged == [("bob", ["changed points of linear-test", "edited the locked cell linear-test"])]
    page, _, _ = report(A, course, tmp_path)
    text = page.read_text()
    assert 'id="flagged"' in text and "edited the locked cell linear-test" in text


# ------------------------------------------------------------------ time per submission


def test_time_figures_on_known_timings(summary):
    """Hand-computed over TIMES: ``seconds`` where stored, else the sum of the ``timing`` steps (cat: 4 s);
    eve's older result, ivy and jon have no time and do not count."""
    t = summary.timing
    assert (t.count, t.total, t.mean) == (8, 997.5, 124.6875)
    assert (t.p95, t.slowest, t.slowest_student) == (900.5, 900.5, "hal")
    seconds = {s.student: s.seconds for s in summary.submissions}
    assert seconds == {"ace": 4.0, "amy": 5.0, "bob": 3.0, "cat": 4.0, "dan": 61.0, "eve": None, "fay": 12.0,
                       "gus": 8.0, "hal": 900.5, "ivy": None, "jon": None}
    assert timing_line(summary) == ("grading time per submission (8 timed): mean 2.1 min, 95th percentile "
                                    "(nearest rank) 15.0 min, slowest 15.0 min (hal); 998 core-seconds in all")


def test_the_95th_percentile_is_the_nearest_rank():
    """The ceil(0.95 n)-th smallest: the 19th of 20 (not the largest), the 20th of 21, the only one of one."""
    assert nearest_rank([float(v) for v in range(20, 0, -1)], 95) == 19.0
    assert nearest_rank([float(v) for v in range(1, 22)], 95) == 20.0
    assert nearest_rank([7.5], 95) == 7.5 and nearest_rank([3.0, 1.0], 50) == 1.0
    for bad in ([], [1.0]):
        with pytest.raises(GraderError, match="percentile"):
            nearest_rank(bad, 0 if bad else 95)
    subs = [Submission(f"s{i:02}", "graded", 0.0, "", seconds=float(i)) for i in range(1, 21)]
    subs.append(Submission("t", "invalid", 0.0, ""))  # no time: left out
    t = time_figures(subs)
    assert (t.count, t.mean, t.p95, t.slowest, t.slowest_student, t.total) == (20, 10.5, 19.0, 20.0, "s20", 210.0)
    assert time_figures(subs[-1:]) is None


def test_sizing_turns_the_times_into_core_seconds():
    t = time_figures([Submission(s, "graded", 0.0, "", seconds=v) for s, v in (("a", 30.0), ("b", 90.0))])
    text = sizing(t, cores=(16, 2))
    assert "these 2 submissions take 120 core-seconds (0.03 core-hours)" in text
    assert "on 16 cores, at least 90.0 s" in text  # never less than the slowest submission
    assert "on 2 cores, at least 90.0 s" in text and "Each 100 more students add 1.7 h of one core" in text
    assert "on 1 core, at least 2.0 min" in sizing(replace(t, slowest=10.0), cores=(1,))  # the sum of the times


@pytest.mark.parametrize("result, seconds", [
    ({}, None),  # an older result: no time at all
    ({"timing": {}}, None),
    ({"timing": {"kernel": 0.5, "hidden": 2.0, "3:hidden:x": 1.9}}, 2.5),  # the per-cell entry is inside hidden
    ({"seconds": 7.3, "timing": {"kernel": 0.5}}, 7.3),  # the worker's own wall time first
    ({"seconds": "7", "timing": {"kernel": 1.5, "judge": True}}, 1.5),  # not numbers: not counted
    ({"seconds": float("nan")}, None),
])
def test_submission_seconds(result, seconds):
    assert submission_seconds(result) == seconds


def test_results_without_times_still_make_a_report(course, tmp_path):
    """Results written before the grader timed its runs: the page says so, the table's seconds are empty."""
    older = tmp_path / "older"
    shutil.copytree(course, older, ignore=shutil.ignore_patterns("reports"))
    for path in older.glob(f"work/{A}/*/result.json"):
        r = json.loads(path.read_text())
        path.write_text(json.dumps({k: v for k, v in r.items() if k not in ("seconds", "timing")}))
    page, _, summary = report(A, older)
    assert summary.timing is None and all(s.seconds is None for s in summary.submissions)
    assert "Not stored" in page.read_text() and timing_line(summary) == "grading time: not stored in these results"
    assert len(StudentTable.of(page.read_text()).rows) == len(CLASS)


def test_the_page_shows_the_time_figures(course, tmp_path):
    text = report(A, course, tmp_path)[0].read_text()
    assert "95th percentile (nearest rank)" in text and 'id="sizing"' in text
    assert "these 8 submissions take 998 core-seconds (0.28 core-hours)" in text
    assert re.search(r"slowest</td><td class=\"num\">15\.0 min</td><td>hal</td>", text)
    assert "3 submissions have no time" in text  # eve (older), ivy, jon


# ------------------------------------------------------------------ the table of students


class StudentTable(HTMLParser):
    """The cells of ``table#students``: its header and each row's texts (closing tags left out or not)."""

    def __init__(self):
        super().__init__()
        self.inside, self.head, self.rows, self.cell = False, [], [], None

    @classmethod
    def of(cls, text: str) -> StudentTable:
        parser = cls()
        parser.feed(text)
        parser.head = [c.strip() for c in parser.head]
        parser.rows = [[c.strip() for c in r] for r in parser.rows]
        return parser

    def handle_starttag(self, tag, attrs):
        if tag == "table" and dict(attrs).get("id") == "students":
            self.inside = True
        elif self.inside and tag == "tr":
            self.rows.append([])
        elif self.inside and tag in ("td", "th"):
            self.rows[-1].append("")

    def handle_endtag(self, tag):
        if tag == "table" and self.inside:
            self.inside = False
            self.head = self.rows.pop(0)

    def handle_data(self, data):
        if self.inside and self.rows and self.rows[-1]:
            self.rows[-1][-1] += data


def test_one_row_per_student_with_each_part(course, tmp_path):
    text = report(A, course, tmp_path)[0].read_text()
    table = StudentTable.of(text)
    assert table.head == ["student", "status", "score", *PARTS, "late", "handed in", "seconds"]
    rows = {r[0]: dict(zip(table.head, r)) for r in table.rows}
    assert list(rows) == sorted(CLASS) and len(table.rows) == len(CLASS)
    for student, (status, _, _) in CLASS.items():
        got = rows[student]
        assert got["status"] == status and got["score"] == f"{total(student):g}/{MAX:g}", student
        for part, (fraction, _) in outcomes(student).items():
            assert got[part] == ("\u2713" if fraction == 1 else "\u2717" if fraction == 0
                                 else f"{round(100 * fraction)}%"), (student, part)
    assert rows["amy"]["linear_forward"] == "50%" and rows["amy"]["mlp_logits"] == "\u2717"
    assert all(rows["ivy"][p] == "" for p in PARTS)  # invalid: nothing judged
    assert (rows["amy"]["late"], rows["amy"]["handed in"]) == ("late", "2024-03-01T09:00:00")
    assert (rows["bob"]["late"], rows["bob"]["handed in"]) == ("on time", "2026-10-01T21:59:00+00:00")
    assert (rows["cat"]["late"], rows["cat"]["handed in"]) == ("", "")  # no handed_in.json
    assert (rows["hal"]["seconds"], rows["cat"]["seconds"], rows["eve"]["seconds"]) == ("900.5", "4.0", "")


def test_a_student_id_that_needs_escaping(course):
    """Students name their folders: an id with markup shows as text in every place it appears."""
    evil = '<img src=x onerror="alert(2)">&\'"'
    results = load(A, course)
    subs = [replace_student(s, evil) if s.student == "hal" else s for s in results.submissions]
    text = render_html(summarize(ClassResults(A, results.parts, results.max_score, subs)), png=b"")
    assert "<img src=x" not in text and "alert(2)\">" not in text
    assert html.escape(evil, quote=True) in text
    assert evil in [r[0] for r in StudentTable.of(text).rows]  # one row, its id unescaped back exactly
    assert f"<td>{html.escape(evil, quote=True)}</td>" in text  # the slowest, in the time figures


def replace_student(sub: Submission, student: str) -> Submission:
    return replace(sub, student=student)


def test_the_script_is_the_only_one_and_its_hash_is_allowed(course, tmp_path):
    """The Content-Security-Policy allows the search box's script by its hash, and nothing else runs."""
    text = report(A, course, tmp_path)[0].read_text()
    [script] = re.findall(r"<script>(.*?)</script>", text, re.S)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    [csp] = re.findall(r'http-equiv="Content-Security-Policy" content="([^"]*)"', text)
    assert f"script-src 'sha256-{digest}'" in csp and "unsafe-inline'; base-uri" not in csp.split("script-src")[1]
    assert re.search(r'<input type="search" id="student-search" hidden', text)  # shown by the script only


def test_a_class_of_2000_stays_light(course):
    """2,000 students, a row each: a few hundred bytes per row."""
    results = load(A, course)
    parts = {p: Outcome(0.5, "x") for p in PARTS}
    subs = [Submission(f"student{i:04}", "graded", 7.5, "", parts, seconds=4.2) for i in range(2000)]
    text = render_html(summarize(ClassResults(A, results.parts, results.max_score, subs)), png=b"")
    assert len(StudentTable.of(text).rows) == 2000
    assert len(text.encode()) < 2000 * 300


def test_the_search_box_in_chromium(browser, course, tmp_path):
    """Typing filters the rows (every word must be in a row); emptying the box shows them all; with scripts
    off the box is hidden and every row shows. No console error (a blocked script would log one)."""
    page_path, _, _ = report(A, course, tmp_path)
    html_text = page_path.read_text()
    for scripts in (True, False):
        context = browser.new_context(java_script_enabled=scripts, service_workers="block")
        errors: list[str] = []
        try:
            context.route("**/*", lambda r: r.abort("blockedbyclient"))
            page = context.new_page()
            page.on("console", lambda m, errors=errors: m.type in ("error", "warning") and errors.append(m.text))
            page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
            page.set_content(html_text)
            rows = page.locator("#students tbody tr")
            box = page.locator("#student-search")
            assert rows.count() == len(CLASS)
            if not scripts:
                assert not box.is_visible() and all(rows.nth(i).is_visible() for i in range(len(CLASS)))
                continue
            assert box.is_visible()
            box.fill("am")
            assert page.locator("#students tbody tr:visible td:first-child").all_inner_texts() == ["amy"]
            assert page.locator("#student-count").inner_text() == f"1 of {len(CLASS)} students"
            box.fill("crashed")
            assert page.locator("#students tbody tr:visible td:first-child").all_inner_texts() == ["fay", "gus"]
            box.fill("graded late")
            assert page.locator("#students tbody tr:visible td:first-child").all_inner_texts() == ["amy"]
            box.fill("")
            assert page.locator("#students tbody tr:visible").count() == len(CLASS)
        finally:
            context.close()
        assert errors == [], errors


# ------------------------------------------------------------------ a course folder that `grader merge` filled


def test_a_merged_course_folder_reports_the_same(course, tmp_path, monkeypatch):
    """What ``grader merge`` leaves (the gradebook, and in each work folder the files it copies: result.json,
    recorded.json, handed_in.json) is all the report reads: no worker log, no executed notebook, no file of a
    local run. Every file it opens under the course folder is a result.json or a handed_in.json."""
    merged = tmp_path / "merged"
    merged.mkdir()
    shutil.copy(course / "gradebook.db", merged / "gradebook.db")
    for wd in (course / "work" / A).iterdir():
        (merged / "work" / A / wd.name).mkdir(parents=True)
        for name in ("result.json", "recorded.json", "handed_in.json"):
            if (wd / name).exists():
                shutil.copy(wd / name, merged / "work" / A / wd.name / name)
    opened = []
    real_open = Path.open

    def spy(self, *args, **kwargs):
        if merged in Path(self).absolute().parents:
            opened.append(Path(self).name)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", spy)
    again = summarize(load(A, merged))
    monkeypatch.undo()
    assert set(opened) == {"result.json", "handed_in.json"} and opened.count("handed_in.json") == len(HANDED_IN)
    first = summarize(load(A, course))
    assert again == first
    assert [(r.part, r.passed, r.judged) for r in again.parts] == [(r.part, r.passed, r.judged) for r in first.parts]


@pytest.mark.parametrize("text, why", [
    ("{not json", "is not valid JSON"),
    ("[1, 2]", "holds a list, not a JSON object"),
    ('{"late_flag": "yes"}', "late_flag is 'yes', not true, false or null"),
    ('{"late_flag": null, "submitted_at": 1700000000}', "submitted_at is 1700000000, not a date string"),
])
def test_a_broken_handed_in_json_is_a_clear_error(course, tmp_path, text, why):
    broken = tmp_path / "broken"
    shutil.copytree(course, broken, ignore=shutil.ignore_patterns("reports"))
    (broken / "work" / A / "cat" / "handed_in.json").write_text(text)
    with pytest.raises(GraderError, match=re.escape(why)) as err:
        load(A, broken)
    assert str(broken / "work" / A / "cat" / "handed_in.json") in str(err.value)


def test_the_late_policy_decides_who_is_late_and_the_page_counts_them(course, tmp_path):
    """With a deadline in the course file (grader.late), the late column is the policy's: bob's file time is
    59 minutes after it (one day started, -10%), amy's extension covers Canvas's LATE flag, and the rest have no
    time; the summary counts the late hand-ins and the page says how many."""
    graded = tmp_path / "graded"
    shutil.copytree(course, graded, ignore=shutil.ignore_patterns("reports"))
    (graded / "course.toml").write_text(
        'timezone = "Europe/London"\n[late]\nper = "day"\npenalty = 0.10\ncap = 0.50\n'
        f"[assignments.{A}]\ndeadline = 2026-10-01T21:00:00+00:00\n"
        f"[extensions.{A}]\namy = 2026-10-05T23:59:00+00:00\n")
    s = summarize(load(A, graded))
    marks = {sub.student: late_mark(sub) for sub in s.submissions}
    assert (marks["bob"], marks["amy"]) == ("late (\u221210%)", "on time") and s.late == 1
    assert '<p id="late">1 of' in render_html(s)
    (graded / "course.toml").unlink()
    assert summarize(load(A, graded)).late == 1  # without a policy, Canvas's flag: amy
