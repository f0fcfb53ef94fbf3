"""Every chapter of the book is covered by nbval and executed without errors.

The Makefile's test command writes each chapter with the outputs of the book build
(``scripts/executed_chapters.py``, from the build's Jupyter cache) and passes them to pytest
with ``--nbval``: each chapter is run again and its outputs compared with those of the book
build, so a chapter that fails, or whose numbers change between two runs, fails the suite.

Every line of code a page shows is at most MAX_CODE_COLUMNS characters, the width the
website shows without a horizontal scroll bar.
"""
import os
import re
from pathlib import Path

import nbformat
import pytest
from module_support import load_script

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = ROOT / "_build" / "executed"  # written by scripts/executed_chapters.py after the build


chapters_script = load_script("executed_chapters")


def notebook_chapters() -> list[str]:
    return [p for p in chapters_script.toc_pages() if chapters_script.notebook_path(p) is not None]


def require_site():
    if not (EXECUTED.exists() or os.environ.get("NLPCOURSE_REQUIRE_SITE") == "1"):
        pytest.skip("the book is not built (run `make book`)")


def test_toc_lists_existing_pages_and_at_least_one_chapter():
    for f in chapters_script.toc_pages():
        assert (ROOT / f"{f}.md").exists() or (ROOT / f"{f}.ipynb").exists(), f"_toc.yml names missing page {f}"
    assert "book/building_blocks" in notebook_chapters()


def test_every_chapter_has_an_expected_execution_time():
    """The book build executes the longest chapters first (scripts/execute_chapters.py): a fresh clone, with no
    timing in its cache yet, orders them by EXPECTED_SECONDS, which must name every chapter."""
    mod = load_script("execute_chapters")
    assert {Path(c).name for c in notebook_chapters()} == set(mod.EXPECTED_SECONDS)


@pytest.mark.parametrize("chapter", notebook_chapters())
def test_chapter_was_executed_without_errors(chapter):
    require_site()
    path = EXECUTED / f"{chapter}.ipynb"
    assert path.exists(), f"{chapter} has no executed notebook in {EXECUTED}: nbval would not cover it"
    nb = nbformat.read(str(path), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.get("execution_count") for c in code if c.source.strip()), f"{chapter}: unexecuted cells"
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{chapter}: cells raised {[e['ename'] for e in errors]}"


# --------------------------------------------------------------------------- code width

# The website shows about 88 characters of code a line (book/_static/course.css scales the
# code font so that 88 fit at 1280 px); a longer line is cut at the right edge and needs
# a horizontal scroll bar. Every line of code shown on a page is kept within it.
MAX_CODE_COLUMNS = 88

_FENCE = re.compile(r"^\s*(?P<fence>`{3,}|~{3,})\s*(?P<info>.*)$")
# Directives whose body is code shown as such; other directives ({note}, {math},
# {bibliography}, ...) hold text, which the browser wraps, but may contain code fences.
_CODE_DIRECTIVES = {"code-cell", "code-block", "code", "sourcecode", "literalinclude"}


def _is_code_fence(info: str) -> bool:
    directive = re.match(r"\{([^}]*)\}", info)
    return directive is None or directive.group(1).strip() in _CODE_DIRECTIVES


def long_code_lines(text: str, limit: int = MAX_CODE_COLUMNS) -> list[tuple[int, int, str]]:
    """(line number, length, line) of every line in a fenced code block longer than limit.

    Code blocks are ``` or ~~~ fences with a language or none and the {code-cell} /
    {code-block} directives, also when nested in another directive's fence.
    """
    found = []
    stack: list[tuple[str, bool]] = []  # open fences: (fence, holds code)
    for number, line in enumerate(text.splitlines(), start=1):
        match = _FENCE.match(line)
        if stack and stack[-1][1]:  # inside code: only its closing fence ends it
            fence = stack[-1][0]
            if match and not match["info"].strip() and match["fence"][0] == fence[0] \
                    and len(match["fence"]) >= len(fence):
                stack.pop()
            elif len(line) > limit:
                found.append((number, len(line), line))
            continue
        if match:
            fence, info = match["fence"], match["info"].strip()
            if stack and not info and fence[0] == stack[-1][0][0] \
                    and len(fence) >= len(stack[-1][0]):
                stack.pop()  # closes the directive
            else:
                stack.append((fence, _is_code_fence(info)))
    return found


def _page_code_problems(page: str) -> list[str]:
    md, ipynb = ROOT / f"{page}.md", ROOT / f"{page}.ipynb"
    if md.exists():
        rel = md.relative_to(ROOT).as_posix()
        return [f"{rel}:{n}: {length} characters (at most {MAX_CODE_COLUMNS}): {line.strip()[:60]}"
                for n, length, line in long_code_lines(md.read_text(encoding="utf-8"))]
    nb = nbformat.read(str(ipynb), as_version=4)
    rel = ipynb.relative_to(ROOT).as_posix()
    problems = []
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        for n, line in enumerate(cell.source.splitlines(), start=1):
            if len(line) > MAX_CODE_COLUMNS:
                problems.append(f"{rel}: cell {index}, line {n}: {len(line)} characters "
                                f"(at most {MAX_CODE_COLUMNS}): {line.strip()[:60]}")
    return problems


def test_long_code_line_checker_flags_only_long_code_lines():
    ok = "x = 1  # " + "a" * (MAX_CODE_COLUMNS - 9)
    too_long = ok + "b"
    assert len(ok) == MAX_CODE_COLUMNS
    text = "\n".join([
        "# Title",                            # 1
        "Prose may be long: " + "p" * 120,    # 2
        "```{code-cell} ipython3",            # 3
        ":tags: [hide-input]",                # 4
        ok,                                   # 5
        too_long,                             # 6
        "```",                                # 7
        "````{note}",                         # 8
        "A note's text is wrapped: " + "n" * 120,  # 9
        "```python",                          # 10
        too_long,                             # 11
        "```",                                # 12
        "````",                               # 13
        "~~~",                                # 14
        "```",                                # 15: inside the ~~~ block, code
        too_long + "c",                       # 16
        "~~~",                                # 17
        "After the blocks: " + "q" * 120,     # 18
    ])
    found = long_code_lines(text)
    assert [(n, length) for n, length, _ in found] == [
        (6, MAX_CODE_COLUMNS + 1), (11, MAX_CODE_COLUMNS + 1), (16, MAX_CODE_COLUMNS + 2)]
    assert long_code_lines("```{code-cell} ipython3\n" + ok + "\n```\n") == []


@pytest.mark.parametrize("page", chapters_script.toc_pages())
def test_code_lines_fit_the_page(page):
    """Every line of code that the page shows is at most MAX_CODE_COLUMNS characters."""
    if not ((ROOT / f"{page}.md").exists() or (ROOT / f"{page}.ipynb").exists()):
        pytest.skip(f"{page} is missing (reported by the table-of-contents test)")
    problems = _page_code_problems(page)
    assert not problems, (
        f"{len(problems)} code line(s) wider than the page shows; wrap them:\n  "
        + "\n  ".join(problems))
