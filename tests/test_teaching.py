"""The chapters that follow the course's teaching pattern (book/authoring.md): pictures of the ideas, each
with a caption and alt text, and no check of the numbers in the notebook a student opens.

The checks of a chapter's numbers live in ``book/_guards/<chapter>.py`` and run at build time after the
cells tagged for them (``scripts/chapter_guards.py``); these tests check that a chapter keeps them there,
that every guard is used, and that the mechanism inserts, runs and removes them.
"""
import ast
from pathlib import Path

import jupytext
import nbformat
import pytest
from module_support import load_script
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
#: The chapters rewritten to the pattern (issues 57 to 59).
TEACHING = ("building_blocks", "word2vec", "cnn", "rnnlm", "seq2seq", "transformer", "pretraining")
MIN_FIGURES = 6


guards = load_script("chapter_guards")


def code_cells(chapter: str):
    return [c for c in jupytext.read(ROOT / "book" / f"{chapter}.md").cells if c.cell_type == "code"]


def figure_cells(chapter: str):
    """The code cells whose output the site shows as a numbered figure (a caption from the cell's options)."""
    return [c for c in code_cells(chapter) if c.metadata.get("mystnb", {}).get("figure", {}).get("caption")]


def has_assert(source: str) -> bool:
    try:
        tree = ast.parse("\n".join(line for line in source.splitlines() if not line.startswith(("%", "!"))))
    except SyntaxError:
        return "assert " in source
    return any(isinstance(node, ast.Assert) for node in ast.walk(tree))


@pytest.mark.parametrize("chapter", TEACHING)
def test_a_student_opening_the_chapter_meets_no_check_of_its_numbers(chapter):
    cells = [c.source.splitlines()[0] for c in code_cells(chapter) if has_assert(c.source)]
    assert not cells, f"book/{chapter}.md has assert statements (move them to book/_guards/{chapter}.py): {cells}"


@pytest.mark.parametrize("chapter", TEACHING)
def test_chapter_draws_its_ideas_with_caption_and_alt_text(chapter):
    figures = figure_cells(chapter)
    assert len(figures) >= MIN_FIGURES, f"book/{chapter}.md has {len(figures)} captioned figures"
    for cell in figures:
        options = cell.metadata["mystnb"]
        alt = options.get("image", {}).get("alt", "")
        assert len(alt.split()) >= 5, f"figure {options['figure'].get('name')}: alt text {alt!r} says too little"
        assert options["figure"].get("name", "").startswith("fig-"), options["figure"]


def test_has_assert_sees_statements_not_words():
    assert has_assert("x = 1\nassert x == 1")
    assert has_assert("for i in range(2):\n    assert i < 2, i")
    assert not has_assert('print("we assert nothing")\n# assert x')
    assert not has_assert("%matplotlib inline\nx = 1")


@pytest.mark.parametrize("chapter", sorted(p.stem for p in guards.GUARDS.glob("*.py")))
def test_every_guard_runs_after_a_tagged_cell_and_every_tag_has_its_guard(chapter):
    path = ROOT / "book" / f"{chapter}.md"
    assert path.exists(), f"book/_guards/{chapter}.py belongs to no chapter"
    nb = guards.with_guards(jupytext.read(path), path)  # raises GuardError on a tag or a section left alone
    names = [c.metadata[guards.KEY] for c in nb.cells if guards.KEY in c.metadata]
    assert names and sorted(names) == sorted(guards.sections(path))


def _chapter(tmp_path, guard_text: str):
    book = tmp_path / "book"
    (book / "_guards").mkdir(parents=True)
    md = book / "toy.md"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("The answer is 42."),
        nbformat.v4.new_code_cell("answer = 6 * 7", metadata={"tags": ["guard-answer"]}),
        nbformat.v4.new_code_cell("answer + 1")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (book / "_guards" / "toy.py").write_text(guard_text)
    return md, nb


def _run(nb, md, monkeypatch):
    monkeypatch.setattr(guards, "GUARDS", md.parent / "_guards")
    run = guards.with_guards(nb, md)
    NotebookClient(run, timeout=60, kernel_name="python3").execute()
    return run


def test_guards_run_in_the_chapters_kernel_and_leave_no_trace(tmp_path, monkeypatch):
    md, nb = _chapter(tmp_path, '"""doc"""\n\n# %% guard: answer\nassert answer == 42, answer\n')
    run = _run(nb, md, monkeypatch)
    assert [c.metadata.get(guards.KEY) for c in run.cells] == [None, None, "answer", None]
    out = guards.without_guards(run)
    assert [c.source for c in out.cells] == [c.source for c in nb.cells]
    assert [c.execution_count for c in out.cells[1:]] == [1, 2]
    assert out.cells[2].outputs[0]["data"]["text/plain"] == "43"


def test_a_failing_guard_fails_the_execution(tmp_path, monkeypatch):
    md, nb = _chapter(tmp_path, "# %% guard: answer\nassert answer == 41, 'the text says 41'\n")
    with pytest.raises(CellExecutionError, match="the text says 41"):
        _run(nb, md, monkeypatch)


@pytest.mark.parametrize("guard_text, message", [
    ("# %% guard: other\nx = 1\n", "has no section '# %% guard: answer'"),
    ("# %% guard: answer\nx = 1\n# %% guard: spare\ny = 2\n", "tagged for guard-spare"),
    ("# %% guard: answer\nx = 1\n# %% guard: answer\ny = 2\n", "two sections named 'answer'"),
])
def test_a_tag_without_guard_or_a_guard_without_tag_is_an_error(tmp_path, monkeypatch, guard_text, message):
    md, nb = _chapter(tmp_path, guard_text)
    monkeypatch.setattr(guards, "GUARDS", md.parent / "_guards")
    monkeypatch.setattr(guards, "ROOT", tmp_path)
    with pytest.raises(guards.GuardError, match=message):
        guards.with_guards(nb, md)


def test_a_chapter_runs_again_when_its_guards_or_declared_inputs_change(tmp_path, monkeypatch):
    """scripts/execute_chapters.py keys a cached chapter on its code and on a digest of its guard file and of
    the files its front matter names under ``course_depends`` (the front page reads every chapter)."""
    execute = load_script("execute_chapters")
    intro = ROOT / "book" / "intro.md"
    inputs = execute.depends_on(intro)
    assert guards.guard_file(intro) in inputs and ROOT / "book" / "word2vec.md" in inputs
    md, nb = _chapter(tmp_path, "# %% guard: answer\nassert answer == 42\n")
    text = jupytext.writes(nb, fmt="md:myst")  # then the front matter names one more input:
    md.write_text(text.replace("kernelspec:", "course_depends: [data.txt]\nkernelspec:", 1))
    plain = md.with_name("plain.md")  # no guard file, no declared input
    plain.write_text(text)
    (tmp_path / "data.txt").write_text("1")
    monkeypatch.setattr(execute, "ROOT", tmp_path)
    monkeypatch.setattr(guards, "GUARDS", tmp_path / "book" / "_guards")
    monkeypatch.setattr(execute, "guard_file", guards.guard_file)
    assert execute.depends_on(plain) == [] and execute.inputs_digest(plain) == ""
    first = execute.inputs_digest(md)
    (tmp_path / "data.txt").write_text("2")
    second = execute.inputs_digest(md)
    (tmp_path / "book" / "_guards" / "toy.py").write_text("# %% guard: answer\nassert answer == 6 * 7\n")
    assert len({first, second, execute.inputs_digest(md)}) == 3


MAX_PROCEDURE_SHARE = 0.05  # book/authoring.md: how a result was measured goes in a dropdown or the benchmark


@pytest.mark.parametrize("chapter", TEACHING)
def test_chapter_main_text_is_about_ideas_not_procedure(chapter):
    share = load_script("procedure_share")
    found = share.sentences(share.main_text((ROOT / "book" / f"{chapter}.md").read_text()))
    flagged = [s for s in found if share.PROCEDURE.search(s)]
    assert len(flagged) <= MAX_PROCEDURE_SHARE * len(found), (
        f"book/{chapter}.md: {len(flagged)} of {len(found)} main-text sentences name procedure (seeds, intervals, "
        f"budgets...): move them into a dropdown; python scripts/procedure_share.py book/{chapter}.md --show")


def test_procedure_counter_flags_seeds_and_skips_dropdowns():
    share = load_script("procedure_share")
    text = ("An idea in plain words.\n\nWe used three seeds and a bootstrap interval.\n\n"
            ":::{dropdown} How this was measured\nTen seeds, two CPU cores.\n:::\n")
    found = share.sentences(share.main_text(text))
    assert [s for s in found if share.PROCEDURE.search(s)] == ["We used three seeds and a bootstrap interval."]
    assert len(found) == 2
