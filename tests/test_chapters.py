"""Every chapter of the book is covered by nbval and executed without errors.

The Makefile's test command writes each chapter with the outputs of the book build
(``scripts/executed_chapters.py``, from the build's Jupyter cache) and passes them to pytest with ``--nbval``: each chapter is run again and its outputs compared with those of the book build, so a
chapter that fails, or whose numbers change between two runs, fails the suite.
"""
import importlib.util
import os
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = ROOT / "_build" / "executed"  # written by scripts/executed_chapters.py after the build


def _load_script():
    spec = importlib.util.spec_from_file_location("executed_chapters", ROOT / "scripts" / "executed_chapters.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


chapters_script = _load_script()


def notebook_chapters() -> list[str]:
    return [p for p in chapters_script.toc_pages() if chapters_script.notebook_path(p) is not None]


def require_site():
    if not (EXECUTED.exists() or os.environ.get("NLPCOURSE_REQUIRE_SITE") == "1"):
        pytest.skip("the book is not built (run `make book`)")


def test_toc_lists_existing_pages_and_at_least_one_chapter():
    for f in chapters_script.toc_pages():
        assert (ROOT / f"{f}.md").exists() or (ROOT / f"{f}.ipynb").exists(), f"_toc.yml names missing page {f}"
    assert "book/building_blocks" in notebook_chapters()


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
