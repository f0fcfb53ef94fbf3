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


#: What the feedback says of a cell of the student's own after the last graded cell, which the grader does not run.
OWN_CELL_NOT_RUN = ("a cell of your own after the last graded cell: the grader does not run it (it cannot change "
                    "your grade), and it shows the outputs you handed in")


def not_run(cell: NotebookNode) -> bool:
    """Whether the grader leaves this cell of the student's own unrun: it comes after the last graded cell
    (the written questions' experiments), so it can neither cost points nor change the status, and its
    outputs stay those the student handed in (set by :func:`merge` only: a student's metadata never reaches it)."""
    meta = cell.get("metadata", {}).get("grader", {})
    return isinstance(meta, dict) and bool(meta.get("student_added")) and bool(meta.get("not_run"))


def left_out(cell: NotebookNode) -> bool:
    """Whether this test cell, or the cell of its hidden tests, belongs to a part that this run does not grade
    (``grader autograde --parts``): it is not run, and its score is kept from the earlier grading (set by the
    worker on the merged notebook's test cells only: a student's metadata never reaches them)."""
    meta = cell.get("metadata", {}).get("grader", {})
    return isinstance(meta, dict) and not meta.get("student_added") and bool(meta.get("left_out"))


def _graded(cell: NotebookNode) -> bool:
    """A cell whose run decides points: an autograded test, its hidden tests, or a code answer cell."""
    hidden = cell.get("metadata", {}).get("grader", {}).get("hidden_of")
    return bool(hidden) or is_autograded_test(cell) or (is_solution(cell) and cell.cell_type == "code")


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
        extras.setdefault(last, []).append(extra)  # outputs as handed in: cleared below for the cells that run
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
    last_graded = max((i for i, c in enumerate(cells) if _graded(c)), default=-1)
    for i, cell in enumerate(cells):
        if not is_student_added(cell) or cell.cell_type != "code":
            continue
        if i > last_graded:
            cell.metadata["grader"]["not_run"] = True
            cell.outputs = [o for o in cell.get("outputs", []) if isinstance(o, dict)]
        else:
            cell.outputs, cell.execution_count = [], None
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
    return _matches(name_chains(python_source([source] if isinstance(source, str) else list(source))), forbidden)


def _matches(chains: list[tuple[str, ...]], forbidden: tuple[str, ...]) -> list[str]:
    """The ``forbidden`` entries that some dotted name of ``chains`` matches (see :func:`forbidden_uses`)."""
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


# ------------------------------------------------------------------ the code a graded part reaches


def _bound_names(stmt: ast.stmt) -> list[str]:
    """The module-level names a top-level statement binds: a ``def``/``class``, an assignment's plain names
    (tuples unpacked), an import's names; nothing for any other statement (an expression, a loop)."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*"]
    targets = stmt.targets if isinstance(stmt, ast.Assign) else \
        [stmt.target] if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)) else []
    return [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
_COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)


def _stored(body: list[ast.AST]) -> set[str]:
    """The names a function body binds (its locals): assigned, deleted, imported, defined, caught."""
    names = set()
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
                names.add(n.id)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(n.name)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                names.update((a.asname or a.name).split(".")[0] for a in n.names)
            elif isinstance(n, ast.ExceptHandler) and n.name:
                names.add(n.name)
    return names


def free_names(node: ast.AST) -> set[str]:
    """The names ``node`` reads from the module's globals: every name it loads, less a function's parameters
    and locals (Python's scoping, so that a parameter ``h`` does not reach a global ``h`` of the student's
    experiments) and a comprehension's own variables; a function's defaults and decorators are read outside."""
    if isinstance(node, _SCOPES):
        a = node.args
        params = {x.arg for x in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if x}
        body = node.body if isinstance(node.body, list) else [node.body]
        declared = {n for b in body for s in ast.walk(b) if isinstance(s, (ast.Global, ast.Nonlocal)) for n in s.names}
        local = (params | _stored(body)) - declared
        outer = [*a.defaults, *(d for d in a.kw_defaults if d), *getattr(node, "decorator_list", [])]
        return set().union(*(free_names(b) for b in body)) - local | set().union(*(free_names(o) for o in outer))
    if isinstance(node, _COMPREHENSIONS):
        own = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        return set().union(*(free_names(c) for c in ast.iter_child_nodes(node))) - own
    if isinstance(node, ast.Name):
        return {node.id} if isinstance(node.ctx, ast.Load) else set()
    return set().union(*(free_names(c) for c in ast.iter_child_nodes(node)))


def _label(stmt: ast.stmt, code: str) -> str:
    """How a message names a statement: the function's or class's name, else its first line."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return stmt.name
    first = (ast.get_source_segment(code, stmt) or ast.unparse(stmt)).splitlines()[0]
    return first if len(first) <= 60 else first[:57] + "..."


class StudentCode:
    """The top-level statements of the student's code (answer cells and cells of their own), indexed by the
    names they bind, to find the code a graded part reaches: its answer cells' function named like the part,
    and everything that function uses by name, transitively (``reached``)."""

    def __init__(self, cells: dict[str, str], given: dict[str, str] | None = None):
        #: name -> [(cell key, label, source)] of each top-level statement that binds it
        self.binders: dict[str, list[tuple[str, str, str]]] = {}
        self.cells: dict[str, list[tuple[str, str, ast.stmt]]] = {}  # cell key -> its statements
        #: the instructor's statements (``given``: set-up and helper cells): followed, since a helper given in
        #: the notebook may call the student's functions, but never reported, whatever names they use
        self.given: set[str] = set()
        for key, src in {**(given or {}), **cells}.items():
            code = python_source([src])
            try:
                tree = ast.parse(code)
            except SyntaxError:
                continue
            for stmt in tree.body:
                seg = ast.get_source_segment(code, stmt) or ast.unparse(stmt)
                self.cells.setdefault(key, []).append((_label(stmt, code), seg, stmt))
                if given and key in given and key not in cells:
                    self.given.add(seg)
                for name in _bound_names(stmt):
                    self.binders.setdefault(name, []).append((key, _label(stmt, code), seg))

    def reached(self, entry: str, cells: tuple[str, ...], roots: set[str] | None = None) -> list[tuple[str, str]]:
        """``[(label, source)]`` of the student's statements that the part's code reaches: the bindings of
        ``roots`` (the names the hidden test's ``record`` call reads: :func:`recorded_names`), else of ``entry``
        (the part's name) where the student made one, else every statement of the part's answer ``cells``; then
        the bindings of every name those use, and of the names those use, and so on."""
        if roots:
            start = [b for name in sorted(roots) for b in self.binders.get(name, [])]
        else:
            start = self.binders.get(entry) or \
                [(k, label, seg) for k in cells for label, seg, _ in self.cells.get(k, [])]
        seen: dict[tuple[str, str], None] = {}
        todo = [(label, seg) for _, label, seg in start]
        names_done: set[str] = set(roots or {entry})
        while todo:
            label, seg = todo.pop()
            if (label, seg) in seen:
                continue
            seen[label, seg] = None
            try:
                used = free_names(ast.parse(seg))
            except SyntaxError:
                continue
            for name in sorted(used - names_done):
                names_done.add(name)
                todo += [(lab, s) for _, lab, s in self.binders.get(name, [])]
        return [(label, seg) for label, seg in seen if seg not in self.given]


def recorded_names(hidden_sources: list[str]) -> dict[str, set[str]]:
    """part -> the global names its ``record("part", fn)`` call reads in the hidden tests (``fn``'s free names:
    ``{"mlp_forward"}`` for ``lambda params, X, a: mlp_forward(params, X, a)[0]``), where the reach starts."""
    roots: dict[str, set[str]] = {}
    for src in hidden_sources:
        try:
            tree = ast.parse(python_source([src]))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "record" \
                    and len(node.args) >= 2 and isinstance(node.args[0], ast.Constant):
                roots.setdefault(str(node.args[0].value), set()).update(free_names(node.args[1]))
    return roots


def forbidden_in_reach(code: StudentCode, entry: str, cells: tuple[str, ...], forbidden: tuple[str, ...],
                       roots: set[str] | None = None) -> dict[str, list[str]]:
    """Which ``forbidden`` entries the code a part reaches uses (:meth:`StudentCode.reached`): entry -> the
    labels of the statements that use it (the function that used the name). A statement is read with the
    reached imports before it, so that ``F.softplus`` after ``import torch.nn.functional as F`` counts."""
    reached = code.reached(entry, cells, roots)
    imports = [seg for _, seg in reached if seg.startswith(("import ", "from "))]
    of_imports = set(name_chains("\n".join(imports)))
    hits: dict[str, list[str]] = {}
    for label, seg in reached:
        if seg in imports:
            chains = name_chains(seg)
        else:  # read with the imports' aliases, less the imports' own names (those are the import's to answer for)
            chains = [c for c in name_chains(python_source(["\n".join(imports + [seg])])) if c not in of_imports]
        for name in _matches(chains, forbidden):
            hits.setdefault(name, []).append(label)
    return hits


# ------------------------------------------------------------------ what a submission changed that it should not

_GRADING_FIELDS = ("grade", "solution", "locked", "points")  # the nbgrader metadata that decides grading
_RECORDING = ("NLPCOURSE_GRADER_OUTPUTS", "NLPCOURSE_GRADER_INPUTS")  # the kernel's own folders, by name


def _lines(source: str) -> list[str]:
    return [ln.rstrip() for ln in source.strip().splitlines()]


def tampering(release: NotebookNode, student: NotebookNode) -> list[str]:
    """What the submission changed that the grader ignores, for the instructor to see (``flags`` in the result,
    a column of the export, a table of the report): a locked cell edited, a graded cell deleted, grading
    metadata changed (points, flags), a cell of one's own claiming to be graded, code that records results or
    writes the grader's outputs itself. None of it changes the score: :func:`merge` runs the instructor's cells
    and reads only the answers. Trailing spaces and blank lines at either end do not count as an edit."""
    given = {_key(c): c for c in release.cells if _key(c)}
    flags: list[str] = []
    seen: set[str] = set()
    for cell in student.cells:
        key = _key(cell)
        if key is None or key in seen:
            continue
        if key not in given:
            if nbgrader_meta(cell).get("grade") or nbgrader_meta(cell).get("solution"):
                flags.append(f"a cell of their own carries nbgrader's grading metadata ({key})")
            continue
        seen.add(key)
        ours, theirs = nbgrader_meta(given[key]), nbgrader_meta(cell)
        changed = [f for f in _GRADING_FIELDS if ours.get(f) != theirs.get(f)]
        if changed:
            flags.append(f"changed {', '.join(changed)} of {key}")
        if not ours.get("solution") and _lines(cell.get("source", "")) != _lines(given[key].get("source", "")):
            flags.append(f"edited the locked cell {key}")
    deleted = [k for k, c in given.items() if k not in seen and is_autograded_test(c)]
    if deleted:
        flags.append(f"deleted the test cell{'s' if len(deleted) > 1 else ''} {', '.join(deleted)}")
    own = [c.get("source", "") for c in student.cells if c.get("cell_type") == "code"
           and (_key(c) not in given or is_solution(given[_key(c)]))]
    code = python_source(own)
    if any(ch[-1] == "record" for ch in name_chains(code)) or any(name in code for name in _RECORDING):
        flags.append("their own code records results or writes the grader's outputs (forging a hidden test)")
    return flags


def copied_from_library(code: StudentCode, library: dict[str, str]) -> list[str]:
    """The student's functions that are a function of the course library under other names (``library``:
    :func:`library_fingerprints`): a flag for the instructor, since the forbidden-name check stops a call to the
    library, not a copy of it (``train_step copies nlpcourse.models.bert.mlm_corrupt``)."""
    from .publish import fingerprints

    found = []
    for statements in code.cells.values():
        for _, seg, _ in statements:
            if seg in code.given:
                continue
            for fp, name in fingerprints(seg).items():
                if fp in library:
                    found.append(f"{name} copies {library[fp]}")
    return sorted(set(found))


def library_fingerprints() -> dict[str, str]:
    """``{fingerprint: "nlpcourse.module.function"}`` of every function of the course library (nlpcourse/), read
    once a process."""
    global _LIBRARY
    if _LIBRARY is None:
        from .publish import fingerprints

        root = Path(__file__).resolve().parents[1] / "nlpcourse"
        _LIBRARY = {}
        for path in sorted(root.rglob("*.py")):
            module = ".".join(path.relative_to(root.parent).with_suffix("").parts)
            for fp, name in fingerprints(path.read_text(encoding="utf-8")).items():
                _LIBRARY.setdefault(fp, f"{module.removesuffix('.__init__')}.{name}")
    return _LIBRARY


_LIBRARY: dict[str, str] | None = None
