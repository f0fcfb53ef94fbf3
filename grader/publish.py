"""``grader publish DEST``: the public copy of the course, a new git repository with one commit that holds the
public files of a commit of this one (``HEAD`` by default) and nothing else: no ``solutions/``, no
``_grading/``, no history that ever held them. Push it where students and readers may look.

What is public is decided from the committed tree (``git ls-tree``), by an allow-list of its top-level
entries (:data:`PUBLIC`) and a list of what stays private (:data:`PRIVATE`); a top-level entry on neither list
stops the command, so that nothing new becomes public without someone deciding it. Uncommitted changes are
never published: the copy is made of the commit's blobs, byte for byte.

Before anything is moved into place, the copy is checked: its one tree lists exactly the public files of the
commit (same blobs, same modes), its released notebooks pass the release's own leak check
(:func:`grader.release.check_no_leak`), and no object of its repository holds a line of a solution, a hidden
test or a reference (:func:`secret_lines`, :func:`find_leaks`). It is built in a temporary folder beside
``DEST`` and renamed to ``DEST`` at the end: a failure leaves nothing behind.
"""
from __future__ import annotations

import ast
import hashlib
import json
import keyword
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from .course import REPO, GraderError

#: The top-level entries of the course repository that are published (an allow-list: a new entry is private
#: until it is added here).
PUBLIC = frozenset({
    "book", "notebooks", "nlpcourse", "grader", "tests", "data", "scripts", "benchmarks", ".github", ".ci",
    "_config.yml", "_toc.yml", "environment.yml", "README.md", "Makefile", "pyproject.toml", "package.json",
    "package-lock.json", "LICENSE", "references.bib", ".gitignore",
    "binder", "setup.py", "MANIFEST.in",  # the student install: Binder's environment, the wheel's data
})
#: The top-level entries that are never published: the instructors' side (solutions, hidden tests, references,
#: planted bugs) and the grading workspace (gradebook, submissions, the seeds' secret).
PRIVATE = frozenset({"solutions", "_grading"})
#: Names that are private wherever they are: the grading workspace's secret and database, and folders named
#: like the private top-level ones.
PRIVATE_NAMES = frozenset({".grading_secret", "gradebook.db", "solutions", "_grading"})

#: The folder of the private sources the leak check reads its secret lines from.
SOURCES = "solutions"
#: The public files that the course publishes on purpose, whose text gives nothing away even where a private
#: file holds it too: the released notebooks (nbgrader's own output: signatures, docstrings, visible tests), the
#: book's pages, the course library and the grader (its shared pieces, grader/gradcheck.py and grader/spec.py,
#: are imported by every reference, and its README shows a hidden test). A secret line found in their text is
#: no secret; anywhere else in the copy, it is a leak.
PUBLIC_BY_DESIGN = (r"notebooks/.*\.ipynb", r"book/[^/]*\.md", r"nlpcourse/.*\.py", r"grader/.*")
#: A line with fewer names and numbers than this (Python's keywords aside) says nothing of a solution and occurs
#: everywhere: ``return out``, ``windows = []``, ``return model.eval()``, ``|---|---|``; so does an import.
MIN_SECRET_WORDS = 3
#: A secret line at least this long is looked for anywhere in a text; a shorter one (``dX = dY @ W``) only as a
#: whole line, since inside a longer line (``dX = dY @ W_hh``) it need not be the same code.
SUBSTRING_CHARS = 12
#: Secret lines that a public file holds on purpose, by file, as the SHA-256 of the stripped line (the line itself
#: here would make it public by design, grader/ being so): the hostile-submission tests stand in for a student's
#: answer with two backprop solutions of one line each, ``linear_forward``'s return and ``sgd_step``'s, which the
#: released notebook spells out ("Y = X W^T + b", "multiply by the transpose of W, add b to every row"; "a NEW
#: dict with params[k] - lr * grads[k] for every key k"). Anything else found there is a leak.
ACCEPTED = {
    "tests/test_grading_hostile.py": frozenset({
        "7a6f0b753acf2475cd3fd2cf1acec0a4c4b19479ec8edbbb7685575782674121",
        "aa20190d5ced97fddff14e1672a85675aa6de7e00b132941d06387dddbd4ee65",
    }),
}
_WORD = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|[0-9]+")
_IMPORT = re.compile(r"(from\s+[\w.]+\s+)?import\s")

_REGIONS = (("### BEGIN SOLUTION", "### END SOLUTION"), ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"))


@dataclass(frozen=True)
class Entry:
    """One file of a git tree."""

    mode: str
    sha: str
    path: str


@dataclass
class Published:
    dest: Path
    commit: str  # the public repository's one commit
    source: str  # the commit of this repository it was made from
    files: int
    private: list[str] = field(default_factory=list)  # the files of ``source`` that were left out
    uncommitted: list[str] = field(default_factory=list)  # changes of the working tree that are NOT published


# ------------------------------------------------------------------ git


def _git(repo: Path, *args: str, stdin: bytes | None = None, env: dict | None = None, check: bool = True) -> bytes:
    proc = subprocess.run(["git", "-C", str(repo), *args], input=stdin, capture_output=True, env=env)
    if proc.returncode != 0 and check:
        raise GraderError(f"git {' '.join(args[:3])} failed in {repo}: {proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without git's own variables (GIT_DIR, GIT_INDEX_FILE... set when run from a hook), which
    would point the new repository's commands at this one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(extra)
    return env


def tree(repo: Path, rev: str) -> list[Entry]:
    """Every file of ``rev``'s tree, recursively."""
    entries = []
    for line in _git(repo, "ls-tree", "-r", "-z", "--full-tree", rev).decode().split("\0"):
        if line:
            meta, path = line.split("\t", 1)
            mode, _kind, sha = meta.split()
            entries.append(Entry(mode, sha, path))
    return entries


def read_blobs(repo: Path, shas: list[str]) -> list[bytes]:
    """The contents of ``shas`` (objects of ``repo``), in order, through one ``git cat-file --batch``."""
    if not shas:
        return []
    out = _git(repo, "cat-file", "--batch", stdin="".join(f"{s}\n" for s in shas).encode())
    contents, pos = [], 0
    for sha in shas:
        header_end = out.index(b"\n", pos)
        name, kind, size = out[pos:header_end].decode().split()
        if name != sha:
            raise GraderError(f"git cat-file answered {name} for {sha}")
        start = header_end + 1
        contents.append(out[start:start + int(size)])
        pos = start + int(size) + 1
    return contents


def all_objects(repo: Path) -> list[tuple[str, str, bytes]]:
    """(sha, type, content) of every object in ``repo``'s object store, reachable or not."""
    out = _git(repo, "cat-file", "--batch-all-objects", "--batch")
    objects, pos = [], 0
    while pos < len(out):
        header_end = out.index(b"\n", pos)
        sha, kind, size = out[pos:header_end].decode().split()
        start = header_end + 1
        objects.append((sha, kind, out[start:start + int(size)]))
        pos = start + int(size) + 1
    return objects


# ------------------------------------------------------------------ public or private


def split_public(entries: list[Entry]) -> tuple[list[Entry], list[Entry]]:
    """(public, private) files of a tree, by :data:`PUBLIC`, :data:`PRIVATE` and :data:`PRIVATE_NAMES`. A
    top-level entry on neither list, or a submodule, stops the command."""
    public, private, unknown = [], [], set()
    for e in entries:
        parts = e.path.split("/")
        if parts[0] in PRIVATE or PRIVATE_NAMES.intersection(parts):
            private.append(e)
        elif parts[0] not in PUBLIC:
            unknown.add(parts[0])
        elif e.mode == "160000":
            raise GraderError(f"{e.path} is a submodule: its files cannot be checked, publish without it")
        else:
            public.append(e)
    if unknown:
        raise GraderError(f"neither public nor private: {', '.join(sorted(unknown))}; add each to PUBLIC or "
                          "PRIVATE in grader/publish.py (only what PUBLIC names is published)")
    return public, private


# ------------------------------------------------------------------ the leak check


def _regions(text: str) -> list[str]:
    lines, inside = [], False
    for line in text.splitlines():
        if any(begin in line for begin, _ in _REGIONS):
            inside = True
        elif any(end in line for _, end in _REGIONS):
            inside = False
        elif inside:
            lines.append(line)
    return lines


def _cell_source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _notebook_secrets(raw: bytes) -> list[str]:
    """What nbgrader keeps from students: the solution and hidden-test regions of every cell, and the whole of
    an answer cell without markers (nbgrader replaces it whole: the model text of a written answer)."""
    lines = []
    for cell in json.loads(raw)["cells"]:
        source = _cell_source(cell)
        if cell.get("metadata", {}).get("nbgrader", {}).get("solution") and "BEGIN SOLUTION" not in source:
            lines += source.splitlines()
        else:
            lines += _regions(source)
    return lines


def _reference_secrets(raw: bytes) -> list[str]:
    """The code of every function of a ``reference.py`` (the references and the hidden cases' generators),
    without docstrings; its module level only declares (``NOTEBOOK``, imports, ``PARTS`` wiring)."""
    text = raw.decode()
    lines, source = [], text.splitlines()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body[1:] if ast.get_docstring(node) is not None else node.body
            if body:
                lines += source[body[0].lineno - 1:node.end_lineno]
    return lines


def _notebook_sources(raw: bytes) -> str:
    try:
        return "\n".join(_cell_source(c) for c in json.loads(raw)["cells"])
    except (ValueError, KeyError, TypeError, AttributeError):
        return ""


def _readable_forms(raw: bytes) -> list[str]:
    """What a reader sees of a text: the text, a notebook's cell sources, and string escapes undone (a line
    inside a JSON or Python string)."""
    text = raw.decode("utf-8", errors="replace")
    forms = [text]
    if b'"cells"' in raw:
        forms.append(_notebook_sources(raw))
    if "\\" in text:
        forms.append(text.replace('\\"', '"').replace("\\n", "\n").replace("\\'", "'").replace("\\\\", "\\"))
    return forms


def trivial(line: str) -> bool:
    """A line that gives nothing away wherever it is: an import, or fewer than :data:`MIN_SECRET_WORDS` names
    and numbers besides Python's keywords (``return model.eval()``, ``windows = []``, a table rule)."""
    words = [w for w in _WORD.findall(line) if not keyword.iskeyword(w)]
    return len(words) < MIN_SECRET_WORDS or _IMPORT.match(line) is not None


class _Text:
    """One text as a reader sees it (:func:`_readable_forms`), to look for secret lines in."""

    def __init__(self, forms: list[str]):
        self.forms = forms
        self.lines = {line.strip() for form in forms for line in form.splitlines()}

    def holds(self, secret: str) -> bool:
        if len(secret) < SUBSTRING_CHARS:
            return secret in self.lines
        return any(secret in form for form in self.forms)


def secret_lines(repo: Path = REPO, rev: str = "HEAD") -> dict[str, str]:
    """``{line: the private file it comes from}``: the lines of ``rev``'s ``solutions/`` that must not be
    published. Of each assignment: its source notebook's solution and hidden-test lines and the model answers
    of its written questions, and the code of the functions of its ``reference.py``. Stripped, without
    :func:`trivial` lines and without those that the course publishes by design (:data:`PUBLIC_BY_DESIGN`: a
    signature the release shows, a line of the library). ``bugs.py`` adds none: what each bug replaces is the
    solution's own text, what it puts there is wrong code, and its names are in benchmarks/results/gpu.json."""
    entries = tree(repo, rev)
    readers = {".ipynb": _notebook_secrets, "/reference.py": _reference_secrets}
    sources = [(e, read) for e in entries if e.path.startswith(SOURCES + "/")
               for suffix, read in readers.items() if e.path.endswith(suffix)]
    found: dict[str, str] = {}
    for (e, read), raw in zip(sources, read_blobs(repo, [e.sha for e, _ in sources]), strict=True):
        for line in read(raw):
            line = line.strip()
            if not trivial(line):
                found.setdefault(line, e.path)
    by_design = re.compile("|".join(f"(?:{p})" for p in PUBLIC_BY_DESIGN))
    published = [e for e in entries if by_design.fullmatch(e.path)]
    corpus = _Text([form for raw in read_blobs(repo, [e.sha for e in published]) for form in _readable_forms(raw)])
    return {line: origin for line, origin in found.items() if not corpus.holds(line)}


# ------------------------------------------------------------------ answers, whatever their names

#: A function smaller than this (AST nodes, its docstring aside) says too little to be an answer: ``return x @ W.T``
#: can be written in the same shape by anyone, and a line check covers it.
MIN_ANSWER_NODES = 25


class _Anonymous(ast.NodeTransformer):
    """Every name a function binds or reads, its own included, by order of first appearance (``v0``, ``v1``...):
    renaming variables and arguments gives the same tree. Attributes (``torch.tanh``, ``.sum``) and keywords
    stay, since they are what the code does."""

    def __init__(self):
        self.names: dict[str, str] = {}

    def _new(self, name: str) -> str:
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(self._new(node.id), node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return ast.copy_location(ast.arg(self._new(node.arg)), node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        node.name = self._new(node.name)
        node.returns = None
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]  # the docstring says what, not how
        self.generic_visit(node)
        return node


def fingerprints(source: str) -> dict[str, str]:
    """``{fingerprint: function name}`` of every function in ``source`` (Python, IPython's syntax seen through)
    of at least :data:`MIN_ANSWER_NODES` nodes: its tree with every name replaced by its order of appearance."""
    from .notebook import python_source

    try:
        tree = ast.parse(python_source([source]))
    except SyntaxError:
        return {}
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            anonymous = _Anonymous().visit(ast.parse(ast.unparse(node)).body[0])
            if sum(1 for _ in ast.walk(anonymous)) >= MIN_ANSWER_NODES:
                found.setdefault(ast.dump(anonymous, annotate_fields=False), node.name)
    return found


def _code_of(path: str, raw: bytes) -> list[str]:
    """The Python a public file holds: a ``.py`` file, a notebook's code cells, a MyST page's code cells."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return []
    if path.endswith(".py"):
        return [text]
    if path.endswith(".ipynb"):
        try:
            return [_cell_source(c) for c in json.loads(text).get("cells", []) if c.get("cell_type") == "code"]
        except (json.JSONDecodeError, AttributeError):
            return []
    if path.endswith(".md"):
        return re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```", text, re.M | re.S)
    return []


def answer_fingerprints(repo: Path = REPO, rev: str = "HEAD") -> dict[str, str]:
    """``{fingerprint: "solutions/A/A.ipynb: name"}`` of every function the answer cells of ``rev``'s source
    notebooks define (the solutions, every part's), for :func:`find_answers`; less those the released notebooks
    show in their given cells (a helper the answer repeats, such as seq2seq's decoder ``step``): public by design."""
    entries = tree(repo, rev)
    sources = [e for e in entries if e.path.startswith(SOURCES + "/") and e.path.endswith(".ipynb")]
    released = [e for e in entries if re.fullmatch(r"notebooks/.*\.ipynb", e.path)]
    shown = {fp for raw in read_blobs(repo, [e.sha for e in released]) for code in _code_of(".ipynb", raw)
             for fp in fingerprints(code)}
    found: dict[str, str] = {}
    for e, raw in zip(sources, read_blobs(repo, [e.sha for e in sources]), strict=True):
        for cell in json.loads(raw).get("cells", []):
            if cell.get("cell_type") == "code" and cell.get("metadata", {}).get("nbgrader", {}).get("solution"):
                for fp, name in fingerprints(_cell_source(cell)).items():
                    if fp not in shown:
                        found.setdefault(fp, f"{e.path}: {name}")
    return found


def find_answers(repo: Path, answers: dict[str, str], rev: str = "HEAD") -> dict[str, list[str]]:
    """``{path: ["name (= solutions/A/A.ipynb: answer)"]}``: the functions of ``rev``'s files in ``repo`` (Python
    files, notebooks' and pages' code cells) that are an answer of ``answers`` under other names (same tree once
    every name is replaced: :func:`fingerprints`). A line check misses such a copy; this does not."""
    entries = [e for e in tree(repo, rev) if e.mode != "120000" and e.path.endswith((".py", ".ipynb", ".md"))]
    found: dict[str, list[str]] = {}
    for e, raw in zip(entries, read_blobs(repo, [e.sha for e in entries]), strict=True):
        for code in _code_of(e.path, raw):
            for fp, name in fingerprints(code).items():
                if fp in answers:
                    found.setdefault(e.path, []).append(f"{name} (= {answers[fp]})")
    return found


def find_leaks(repo: Path, secrets: Iterable[str]) -> dict[str, list[str]]:
    """``{where: [secret lines found there]}`` over every object in the store of the git repository ``repo``,
    reachable or not; ``where`` is the file's path for a file of ``HEAD``, else ``<type> <sha>``. A text is
    searched as :class:`_Text` does, in each of its readable forms; a binary object (a NUL byte: the compressed
    corpora, the checkpoints) line by line."""
    secrets = set(secrets)
    secret_bytes = {s.encode() for s in secrets}
    paths: dict[str, str] = {}
    if _git(repo, "rev-parse", "--verify", "-q", "HEAD", check=False):
        for e in tree(repo, "HEAD"):
            paths.setdefault(e.sha, e.path)
    found: dict[str, list[str]] = {}
    for sha, kind, raw in all_objects(repo):
        if b"\0" in raw:
            hits = {s.decode() for s in secret_bytes.intersection(line.strip() for line in raw.split(b"\n"))}
        else:
            text = _Text(_readable_forms(raw))
            hits = {s for s in secrets if text.holds(s)}
        if hits:
            found[paths.get(sha, f"{kind} {sha}")] = sorted(hits)
    return found


# ------------------------------------------------------------------ publishing


def _write_files(repo: Path, entries: list[Entry], root: Path) -> None:
    for e, raw in zip(entries, read_blobs(repo, [e.sha for e in entries]), strict=True):
        path = root / e.path
        path.parent.mkdir(parents=True, exist_ok=True)
        if e.mode == "120000":
            os.symlink(raw.decode(), path)
        else:
            path.write_bytes(raw)
            path.chmod(0o755 if e.mode == "100755" else 0o644)


def _commit(root: Path, files: list[Entry], source: str, author: tuple[str, str, str], branch: str) -> str:
    """Make ``root`` a repository whose one commit holds ``files`` (already written there): the blobs are
    hashed from the files without any filter, and each must be the source's own."""
    name, email, date = author
    env = _clean_env(GIT_AUTHOR_NAME=name, GIT_AUTHOR_EMAIL=email, GIT_AUTHOR_DATE=date,
                     GIT_COMMITTER_NAME=name, GIT_COMMITTER_EMAIL=email, GIT_COMMITTER_DATE=date)
    _git(root, "init", "-q", f"--initial-branch={branch}", env=env)
    regular = [e for e in files if e.mode != "120000"]
    hashed = _git(root, "hash-object", "-w", "--no-filters", "--stdin-paths",
                  stdin="".join(f"{e.path}\n" for e in regular).encode(), env=env).decode().split()
    links = [e for e in files if e.mode == "120000"]
    hashed_links = [_git(root, "hash-object", "-w", "--stdin", stdin=os.readlink(root / e.path).encode(),
                         env=env).decode().strip() for e in links]
    for e, sha in zip([*regular, *links], [*hashed, *hashed_links], strict=True):
        if sha != e.sha:
            raise GraderError(f"{e.path} was not written as committed ({sha} is not {e.sha})")
    _git(root, "update-index", "--add", "-z", "--index-info", env=env,
         stdin="".join(f"{e.mode} {e.sha}\t{e.path}\0" for e in files).encode())
    _git(root, "update-index", "-q", "--refresh", env=env)
    tree_sha = _git(root, "write-tree", env=env).decode().strip()
    message = (f"The public copy of the course at {source[:12]}\n\n"
               f"Made by `grader publish` from commit {source}: its files but the private ones\n"
               f"({', '.join(f'{name}/' for name in sorted(PRIVATE))}).\n")
    commit = _git(root, "commit-tree", "--no-gpg-sign", tree_sha, stdin=message.encode(), env=env).decode().strip()
    _git(root, "update-ref", f"refs/heads/{branch}", commit, env=env)
    return commit


def _check(root: Path, public: list[Entry], secrets: dict[str, str], answers: dict[str, str] | None = None) -> None:
    """The copy holds exactly ``public``, one commit, no leak: no secret line, and no answer under other names."""
    from .release import check_no_leak

    got = tree(root, "HEAD")
    if sorted(got, key=lambda e: e.path) != sorted(public, key=lambda e: e.path):
        raise GraderError("the public copy's tree is not the commit's public files")
    if _git(root, "rev-list", "--count", "--all").decode().strip() != "1":
        raise GraderError("the public copy has more than one commit")
    reachable = {line.split()[0] for line in _git(root, "rev-list", "--objects", "--all").decode().splitlines()}
    stored = set(_git(root, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").decode().split())
    if stored != reachable:
        raise GraderError(f"the public copy's store holds {len(stored - reachable)} object(s) its commit does not")
    for folder in sorted((root / "notebooks").glob("*/")):
        check_no_leak(folder)
    leaks = unaccepted(find_leaks(root, secrets))
    if leaks:
        where = "; ".join(f"{path}: {', '.join(repr(line) for line in lines[:3])} (from {secrets[lines[0]]})"
                          for path, lines in sorted(leaks.items())[:5])
        raise GraderError(f"the copy would publish lines of solutions/, in {len(leaks)} file(s): {where}")
    copies = find_answers(root, answers or {})
    if copies:
        where = "; ".join(f"{path}: {', '.join(names[:3])}" for path, names in sorted(copies.items())[:5])
        raise GraderError(f"the copy would publish the answer of a graded part under other names: {where}")


def digest(line: str) -> str:
    return hashlib.sha256(line.encode()).hexdigest()


def unaccepted(leaks: dict[str, list[str]]) -> dict[str, list[str]]:
    """The leaks that :data:`ACCEPTED` does not accept."""
    rest = {where: [line for line in lines if digest(line) not in ACCEPTED.get(where, ())]
            for where, lines in leaks.items()}
    return {where: lines for where, lines in rest.items() if lines}


def uncommitted(repo: Path = REPO) -> list[str]:
    """The files whose changes are not committed, new files included: they are not published."""
    items, paths = iter(_git(repo, "status", "--porcelain", "-z", "--untracked-files=normal").decode().split("\0")), []
    for item in items:
        if item:
            paths.append(item[3:])
            if item[0] in "RC":
                next(items, None)  # a rename's or a copy's old path
    return sorted(paths)


def publish(dest: Path, rev: str = "HEAD", repo: Path = REPO, branch: str = "main") -> Published:
    """Write the public copy of commit ``rev`` of ``repo`` into ``dest``, a new git repository (it must not
    exist or be an empty folder). The commit's author and date are those of ``rev``, so that the same commit
    gives the same public commit."""
    dest = Path(dest).absolute()
    repo = Path(repo).resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise GraderError(f"{dest} exists and is not empty: publish into a new folder")
    if dest.resolve().is_relative_to(repo):
        raise GraderError(f"{dest} is inside the course repository {repo}: publish outside it")
    source = _git(repo, "rev-parse", "--verify", "--end-of-options", f"{rev}^{{commit}}").decode().strip()
    public, private = split_public(tree(repo, source))
    if not public:
        raise GraderError(f"{rev} has no public file")
    author = tuple(_git(repo, "log", "-1", "--date=raw", "--format=%an%x00%ae%x00%ad", source)
                   .decode().strip().split("\0"))
    secrets, answers = secret_lines(repo, source), answer_fingerprints(repo, source)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", suffix=".publishing", dir=dest.parent))
    try:
        _write_files(repo, public, staging)
        commit = _commit(staging, public, source, author, branch)
        _check(staging, public, secrets, answers)
        staging.chmod(0o755)  # mkdtemp made it private to its owner
        if dest.exists():
            dest.rmdir()  # empty, checked above
        staging.rename(dest)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return Published(dest, commit, source, len(public), sorted(e.path for e in private),
                     uncommitted(repo) if rev == "HEAD" else [])
