"""``grader feedback``: one HTML file per student, through nbgrader's GenerateFeedback, without hidden tests.

Each test cell of the feedback shows the visible tests (as released), the grader's verdict on the
hidden tests (which part, which input case, expected vs got shape, max abs/rel error and where),
but neither the hidden tests' source nor any traceback through them. The page loads nothing from
the network: MathJax is copied next to the feedback files and linked relatively.
"""
from __future__ import annotations

import logging
import re
import shutil
from pathlib import Path

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor, Preprocessor
from nbgrader.converters import GenerateFeedback
from nbgrader.converters.base import NbGraderException
from nbgrader.coursedir import CourseDirectory
from nbgrader.preprocessors import ClearHiddenTests, GetGrades
from traitlets import Bool, Dict

from .course import REPO, GraderError, load_assignment, load_reference, nbgrader_config
from .release import LEAK_MARKERS

MATHJAX = REPO / "node_modules" / "mathjax" / "es5" / "tex-svg-full.js"
#: The course's feedback template (templates/course_feedback/), which extends nbgrader's own.
TEMPLATES = Path(__file__).resolve().parent / "templates"


class CourseGrades(GetGrades):
    """nbgrader's grades, and for each graded cell what the page calls it (``nbgrader.label``: a test cell by its
    parts, ``linear-test: linear_forward, linear_backward``) and whether it still waits for a hand grade
    (``nbgrader.waiting``: then the page says so instead of showing 0 points)."""

    labels = Dict(help="grade_id -> the cell's name on the page").tag(config=True)

    def _get_score(self, cell, resources) -> None:
        super()._get_score(cell, resources)
        grade = self.gradebook.find_grade(cell.metadata["nbgrader"]["grade_id"], self.notebook_id,
                                          self.assignment_id, self.student_id)
        cell.metadata.nbgrader["waiting"] = bool(grade.needs_manual_grade)
        gid = cell.metadata["nbgrader"]["grade_id"]
        cell.metadata.nbgrader["label"] = self.labels.get(gid, gid)


class DropHiddenTestCells(Preprocessor):
    """Remove the cells in which the grader ran the hidden tests, and tracebacks of test cells."""

    # nbconvert's Preprocessor is disabled by default, and nbgrader registers this one by class: without
    # this, it would never run (and a hidden cell's traceback would show the hidden tests' source).
    enabled = Bool(True)

    def preprocess(self, nb, resources):
        nb.cells = [c for c in nb.cells if not c.get("metadata", {}).get("grader", {}).get("hidden_of")]
        for cell in nb.cells:
            for out in cell.get("outputs", []):
                if out.get("output_type") == "error":
                    out["traceback"] = []
        return nb, resources


def feedback(assignment: str, course_dir: Path) -> list[Path]:
    a = load_assignment(assignment)
    autograded = course_dir / "autograded"
    students = sorted(p.name for p in autograded.iterdir() if (p / a.name / a.notebook).exists()) \
        if autograded.exists() else []
    if not students:
        raise GraderError(f"nothing autograded for {a.name} in {course_dir}: run `grader autograde` first")
    assets = course_dir / "feedback" / "_assets"
    assets.mkdir(parents=True, exist_ok=True)
    if MATHJAX.exists():
        shutil.copy(MATHJAX, assets / "tex-svg-full.js")
    _generate(a, course_dir)
    written, withheld, missing = [], [], []
    for student in students:
        html = course_dir / "feedback" / student / a.name / f"{a.notebook_id}.html"
        if not html.exists():  # nbgrader failed on this one (its error is logged) and went on with the others
            missing.append(student)
            continue
        _make_offline(html)
        text = html.read_text(errors="replace")
        leaked = [marker for marker in LEAK_MARKERS if marker in text]
        if leaked:  # e.g. the student's own cell printed IPython's input history: withhold this file only
            html.unlink()
            withheld.append(f"{student} ({leaked[0]!r})")
            continue
        written.append(html)
    if missing:
        raise GraderError(f"nbgrader wrote no feedback for {', '.join(missing)}; the other {len(written)} "
                          f"feedback files were written")
    if withheld:
        raise GraderError(f"feedback withheld (it would show hidden tests) for {', '.join(withheld)}; "
                          f"the other {len(written)} feedback files were written")
    return written


def labels(a) -> dict[str, str]:
    """grade_id -> what the feedback calls each graded cell: a test cell by the parts it grades; a written
    answer as the written answer."""
    parts: dict[str, list[str]] = {}
    for name, part in load_reference(a).PARTS.items():
        parts.setdefault(part.test_cell, []).append(name)
    return {cell: f"{cell}: {', '.join(names)}" for cell, names in parts.items()}


def _generate(a, course_dir: Path) -> None:
    """One nbgrader GenerateFeedback run over every student's autograded notebook: its templates are compiled
    once, not once a student. Where it fails for a student, it logs why and goes on with the others."""
    c = nbgrader_config(course_dir)
    c.CourseDirectory.assignment_id = a.name
    c.CourseDirectory.student_id = "*"
    c.CourseDirectory.notebook_id = a.notebook_id
    c.GenerateFeedback.force = True
    c.GenerateFeedback.preprocessors = [CourseGrades, ClearHiddenTests, DropHiddenTestCells, CSSHTMLHeaderPreprocessor]
    c.CourseGrades.labels = labels(a)
    c.HTMLExporter.template_name = "course_feedback"
    c.HTMLExporter.extra_template_basedirs = [str(TEMPLATES)]
    c.ClearHiddenTests.enforce_metadata = False
    app = GenerateFeedback(coursedir=CourseDirectory(config=c), config=c)
    app.log.setLevel(logging.ERROR)
    try:
        app.start()
    except NbGraderException:  # raised at the end, once every other student's feedback is written
        pass


_SCRIPT_SRC = re.compile(r'<script[^>]*\bsrc="https?://[^"]*"[^>]*>\s*</script>', re.I)
_LINK_HREF = re.compile(r'<link[^>]*\bhref="https?://[^"]*"[^>]*>', re.I)
_MATHJAX_CONFIG = """<script>window.MathJax = {tex: {inlineMath: [['$', '$'], ['\\\\(', '\\\\)']],
displayMath: [['$$', '$$'], ['\\\\[', '\\\\]']], processEscapes: true}, svg: {fontCache: 'global'}};</script>
<script src="../../_assets/tex-svg-full.js" async></script>
<style>
/* a verdict or a long line wraps instead of running off the page */
div.output_area pre, div.output_text pre { white-space: pre-wrap; overflow-wrap: anywhere; }
/* a markdown table gets its rules and its spacing */
.rendered_html table { border-collapse: collapse; margin: 0.6em 0; }
.rendered_html th, .rendered_html td { border: 1px solid #bbb; padding: 0.25em 0.6em; }
.rendered_html tr:nth-child(even) { background: #f6f6f6; }
</style>"""


def _make_offline(html: Path) -> None:
    """Drop every script and stylesheet the page would fetch from the network; load local MathJax."""
    text = html.read_text(errors="replace")
    text = _SCRIPT_SRC.sub("", text)
    text = _LINK_HREF.sub("", text)
    text = re.sub(r"<script[^>]*>\s*(?:init_mathjax|MathJax\.Hub\.Config)[\s\S]*?</script>", "", text)
    text = text.replace("</head>", _MATHJAX_CONFIG + "\n</head>", 1)
    tmp = html.with_suffix(".html.tmp")
    tmp.write_text(text)
    tmp.replace(html)
