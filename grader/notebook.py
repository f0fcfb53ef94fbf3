"""Reading a submission and rebuilding the notebook the grader runs.

The grader never trusts the submitted notebook's structure: it runs the instructor's notebook
(instructions, set-up, visible and hidden tests, all from the source) with only the student's
answer cells taken from the submission, matched by nbgrader ``grade_id``. Deleting, editing or
adding test cells, or changing cell metadata (points, grade flags), therefore changes nothing.
"""
from __future__ import annotations

import ast
import copy
import json
from pathlib import Path

import nbformat
from nbformat import NotebookNode

MAX_NOTEBOOK_BYTES = 20 * 2**20  # a larger "notebook" is refused as invalid
HIDDEN_BEGIN = "### BEGIN HIDDEN TESTS"
#: What an answer cell holds when neither the submission nor the release has it (nbgrader's stubs).
CODE_STUB = "# YOUR CODE HERE\nraise NotImplementedError()"
TEXT_STUB = "YOUR ANSWER HERE"


class InvalidSubmission(Exception):
    """The submission cannot be read as a notebook; the message says why."""


def read_submission(path: Path) -> NotebookNode:
    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        raise InvalidSubmission(f"{path.name} is {size / 2**20:.1f} MiB, more than a notebook can be "
                                f"({MAX_NOTEBOOK_BYTES // 2**20} MiB)")
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidSubmission(f"{path.name} is not a notebook (not valid JSON: {exc})") from None
    if not isinstance(raw, dict) or "cells" not in raw or not isinstance(raw["cells"], list):
        raise InvalidSubmission(f"{path.name} is not a notebook (no list of cells)")
    try:
        nb = nbformat.reads(json.dumps(raw), as_version=4)
    except Exception as exc:  # noqa: BLE001 - nbformat raises many kinds
        raise InvalidSubmission(f"{path.name} is not a valid notebook: {exc}") from None
    for i, cell in enumerate(nb.cells):
        if not isinstance(cell.get("source", ""), str) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            raise InvalidSubmission(f"{path.name}: cell {i} is malformed")
    return nb


def nbgrader_meta(cell: NotebookNode) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader", {})
    return meta if isinstance(meta, dict) else {}


def _key(cell: NotebookNode) -> str | None:
    gid = nbgrader_meta(cell).get("grade_id")
    return gid if isinstance(gid, str) else None


def is_solution(cell: NotebookNode) -> bool:
    return bool(nbgrader_meta(cell).get("solution"))


def is_student_added(cell: NotebookNode) -> bool:
    return bool(cell.get("metadata", {}).get("grader", {}).get("student_added"))


def skip_reason(cell: NotebookNode) -> str:
    """Why the grader does not run this cell (``metadata.grader.skip`` of a source cell: the notebook's own
    run of a trained part, which the hidden test repeats on the grader's own seed), or "" if it runs it.
    A cell the student added never carries one: :func:`merge` rewrites their metadata."""
    meta = cell.get("metadata", {}).get("grader", {})
    if not isinstance(meta, dict) or meta.get("student_added"):
        return ""
    reason = meta.get("skip")
    return reason if isinstance(reason, str) else ""


def is_autograded_test(cell: NotebookNode) -> bool:
    m = nbgrader_meta(cell)
    return bool(m.get("grade")) and not m.get("solution") and cell.cell_type == "code"


def merge(source: NotebookNode, release: NotebookNode, student: NotebookNode) -> tuple[NotebookNode, dict]:
    """The notebook to run: source cells, with the student's answers in the answer cells.

    Returns the notebook and a report: ``{"missing": [grade_ids of answer cells not found],
    "extra": number of cells the student added}``. Cells the student added are kept (without any
    nbgrader metadata) after the instructor cell they followed.
    """
    master_keys = [_key(c) for c in source.cells]
    solution_keys = {k for k, c in zip(master_keys, source.cells) if k and is_solution(c)}
    release_by_key = {_key(c): c for c in release.cells if _key(c)}
    answers: dict[str, NotebookNode] = {}
    extras: dict[str | None, list[NotebookNode]] = {}
    last: str | None = None
    for cell in student.cells:
        k = _key(cell)
        if k in master_keys and k not in answers and (k not in solution_keys or cell.cell_type != "raw"):
            if k in solution_keys:
                answers[k] = cell
            last = k
            continue
        extra = copy.deepcopy(cell)
        extra.metadata.pop("nbgrader", None)
        extra.metadata["grader"] = {"student_added": True}
        if extra.cell_type == "code":
            extra.outputs, extra.execution_count = [], None
        extras.setdefault(last, []).append(extra)
    cells: list[NotebookNode] = []
    placed_leading = False
    for key, master in zip(master_keys, source.cells):
        if key in solution_keys and not placed_leading:
            cells.extend(extras.get(None, []))  # cells added before any instructor cell
            placed_leading = True
        cell = copy.deepcopy(master)
        if key in solution_keys:
            given = answers.get(key) or release_by_key.get(key)
            if given is None:  # never the instructor's solution: the stub a release would have
                cell.source = CODE_STUB if cell.cell_type == "code" else TEXT_STUB
            else:
                cell.source = given.source if isinstance(given.source, str) else "".join(given.source)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            if skip_reason(cell):  # what the feedback shows in place of its outputs
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout",
                                                       text=f"Not run by the grader: {skip_reason(cell)}\n")]
        cells.append(cell)
        if is_autograded_test(cell) and HIDDEN_BEGIN in cell.source:
            # The hidden tests run in a cell of their own, so that they record even when a visible
            # test above them fails (partial credit per part, not all or nothing per cell).
            visible, _, hidden = cell.source.partition(HIDDEN_BEGIN)
            cell.source = visible.rstrip() + "\n"
            own = {k: v for k, v in master.get("metadata", {}).get("grader", {}).items() if k == "timeout"}
            cells.append(nbformat.v4.new_code_cell(HIDDEN_BEGIN + hidden, metadata={"grader": {"hidden_of": key,
                                                                                               **own}}))
        if key is not None:
            cells.extend(extras.get(key, []))
    if not placed_leading:
        cells.extend(extras.get(None, []))
    out = copy.deepcopy(source)
    out.cells = cells
    for i, cell in enumerate(out.cells):  # ids must be unique
        cell.id = f"c{i:03d}-{cell.get('id', 'x')}"[:64]
    report = {"missing": sorted(solution_keys - set(answers)),
              "extra": sum(len(v) for v in extras.values())}
    return out, report


def cell_timeout(cell: NotebookNode, default: int) -> int:
    """Seconds ``cell`` may run: the grader's ``default``, or more where the instructor's source notebook gives
    the cell its own (``metadata.grader.timeout``: a test cell that trains a model, and the cell of its hidden
    tests, which :func:`merge` gives the same). Every cell of a merged notebook carries the source's metadata
    except those the student added, whose ``grader`` metadata merge rewrites: a student cannot lengthen one."""
    meta = cell.get("metadata", {}).get("grader", {})
    own = meta.get("timeout") if not meta.get("student_added") else None
    return max(default, int(own)) if isinstance(own, (int, float)) and not isinstance(own, bool) else default


# ------------------------------------------------------------------ forbidden names in the student's code


def python_source(cells: list[str]) -> str:
    """The Python that IPython would run for these cell sources: magics (``%time``, ``!ls``) turned into
    calls by IPython's own transformer; a cell that still does not parse is left out (IPython would
    refuse to run it, so it defines nothing). One cell's error never hides the other cells' code."""
    from IPython.core.inputtransformer2 import TransformerManager

    tm = TransformerManager()
    kept = []
    for src in cells:
        try:
            code = tm.transform_cell(src)
            ast.parse(code)
        except (SyntaxError, ValueError, IndexError):  # IndexError: a cell IPython cannot split
            continue
        kept.append(code)
    return "\n".join(kept)


#: Calls whose string arguments are Python code (exec, eval, IPython magics such as %time / %%timeit).
_CODE_IN_STRINGS = ("exec", "eval", "compile", "run_line_magic", "run_cell_magic", "run_cell", "system")


def name_chains(source: str, _depth: int = 0) -> list[tuple[str, ...]]:
    """Every dotted name the code uses, as tuples of components, with import aliases resolved
    (``F.softmax`` after ``import torch.nn.functional as F`` gives ``("torch", "nn", "functional",
    "softmax")``). An attribute of an expression starts with ``"<expr>"`` (``f(x).backward`` gives
    ``("<expr>", "backward")``); keyword arguments and the strings given to ``getattr``, ``__import__`` and
    ``import_module`` appear too, the strings as attributes."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    aliases: dict[str, str] = {}
    chains: list[tuple[str, ...]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.split(".")[0]
                aliases[a.asname or top] = a.name if a.asname else top
                chains.append(tuple(a.name.split(".")))
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                chains.append(tuple(f"{node.module}.{a.name}".split(".")))

    def chain(node) -> tuple[str, ...]:
        if isinstance(node, ast.Name):
            return tuple(aliases.get(node.id, node.id).split("."))
        if isinstance(node, ast.Attribute):
            return chain(node.value) + (node.attr,)
        return ("<expr>",)

    for node in ast.walk(tree):
        if isinstance(node, (ast.Attribute, ast.Name)):
            chains.append(chain(node))
        elif isinstance(node, ast.keyword) and node.arg:
            chains.append((node.arg,))
        elif isinstance(node, ast.Call) and chain(node.func)[-1] in ("getattr", "__import__", "import_module"):
            for arg in node.args:  # getattr(torch, "autograd"), __import__("torch.autograd")
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    chains.append(("<str>",) + tuple(arg.value.split(".")))
        if isinstance(node, ast.Call) and chain(node.func)[-1] in _CODE_IN_STRINGS and _depth < 3:
            for arg in node.args:  # exec("torch.autograd.grad(...)"), %time torch.autograd.grad(...)
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    chains += name_chains(python_source([arg.value]), _depth + 1)
    return chains


def forbidden_uses(source: str | list[str], forbidden: tuple[str, ...]) -> list[str]:
    """Which ``forbidden`` entries the code (a cell source, or a list of them) uses, after IPython's
    transformations (:func:`python_source`). An entry matches a used dotted name when its
    components appear in it as a run of whole components; an entry that begins with a dot matches
    attributes only (``.softmax`` forbids ``torch.softmax`` and ``Z.softmax()``, not a function of the
    student's own called ``softmax``)."""
    chains = name_chains(python_source([source] if isinstance(source, str) else list(source)))
    hits = []
    for entry in forbidden:
        comps = tuple(entry.lstrip(".").split("."))
        attribute_only = entry.startswith(".")
        n = len(comps)
        for ch in chains:
            if any(ch[i:i + n] == comps and (i >= 1 or not attribute_only) for i in range(len(ch) - n + 1)):
                hits.append(entry)
                break
    return hits
