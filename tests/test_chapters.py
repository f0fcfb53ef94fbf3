"""Every chapter of the book is covered by nbval and executed without errors.

The Makefile's test command passes the executed chapters in ``_build/jupyter_execute`` to pytest with
``--nbval``: each chapter is run again and its outputs compared with those of the book build, so a
chapter that fails, or whose numbers change between two runs, fails the suite.
"""
import json
import os
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXECUTED = ROOT / "_build" / "jupyter_execute"


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        for ch in part.get("chapters", []):
            files.append(ch["file"])
            files += [s["file"] for s in ch.get("sections", [])]
    return files


def is_notebook(page: str) -> bool:
    """A page is a notebook if it is an .ipynb, or a MyST .md whose front matter has a kernelspec."""
    if (ROOT / f"{page}.ipynb").exists():
        return True
    text = (ROOT / f"{page}.md").read_text() if (ROOT / f"{page}.md").exists() else ""
    if not text.startswith("---"):
        return False
    front = text.split("---", 2)[1]
    return "kernelspec" in yaml.safe_load(front)


def notebook_chapters() -> list[str]:
    return [f for f in toc_files() if is_notebook(f)]


def require_site():
    if not (EXECUTED.exists() or os.environ.get("NLPCOURSE_REQUIRE_SITE") == "1"):
        pytest.skip("the book is not built (run `make book`)")


def test_toc_lists_existing_pages_and_at_least_one_chapter():
    for f in toc_files():
        assert (ROOT / f"{f}.md").exists() or (ROOT / f"{f}.ipynb").exists(), f"_toc.yml names missing page {f}"
    assert "book/building_blocks" in notebook_chapters()


@pytest.mark.parametrize("chapter", notebook_chapters())
def test_chapter_was_executed_without_errors(chapter):
    require_site()
    path = EXECUTED / f"{chapter}.ipynb"
    assert path.exists(), f"{chapter} has no executed notebook in {EXECUTED}: nbval would not cover it"
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code and all(c.get("execution_count") for c in code if c["source"].strip()), f"{chapter}: unexecuted cells"
    errors = [o for c in code for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, f"{chapter}: cells raised {[e['ename'] for e in errors]}"
