#!/usr/bin/env python3
"""The checks that keep a chapter's text true to its numbers, kept out of the notebook a student opens.

Every number a chapter states is checked when the book is built: if a change of the code changes a number
the text relies on, the build fails. The checks are not in the chapter (``book/<chapter>.md``), where a
student who opens it in Jupyter would meet them, but in ``book/_guards/<chapter>.py``, in sections::

    # %% guard: analogies
    assert share["skip-gram"] > 0.3, share

A chapter's code cell tagged ``guard-analogies`` is followed, when the build executes the chapter, by the
section ``analogies``, run in the same kernel (so it sees every variable the chapter has made so far).
Then the guard cells are taken out again: the notebook stored in the build's cache, rendered on the site
and re-run by nbval, is the chapter as it is written. A section no cell names, or a tag with no section,
is an error, so that no check is silently dropped.

    python scripts/chapter_guards.py book/word2vec.md   # list the chapter's guards and where they run
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
GUARDS = ROOT / "book" / "_guards"
TAG = "guard-"
#: The header line of a section in a guard file.
HEADER = re.compile(r"^# %% guard: *([A-Za-z0-9_-]+) *$", re.M)
#: The metadata key that marks a guard cell in an executed notebook.
KEY = "course_guard"


class GuardError(ValueError):
    """A chapter's guard tags and its guard file do not match."""


def guard_file(chapter: Path) -> Path:
    return GUARDS / f"{chapter.stem}.py"


def sections(chapter: Path) -> dict[str, str]:
    """The chapter's guard sections, by name, in the file's order (empty without a guard file)."""
    path = guard_file(chapter)
    if not path.exists():
        return {}
    text = path.read_text()
    heads = list(HEADER.finditer(text))  # a docstring or comments may come before the first section
    out: dict[str, str] = {}
    for head, nxt in zip(heads, heads[1:] + [None]):
        name = head.group(1)
        if name in out:
            raise GuardError(f"{path.relative_to(ROOT)}: two sections named {name!r}")
        out[name] = text[head.end(): nxt.start() if nxt else len(text)].strip("\n") + "\n"
    return out


def tags_of(cell) -> list[str]:
    """The guard names a cell's tags ask for, in order."""
    return [t[len(TAG):] for t in cell.get("metadata", {}).get("tags", []) if t.startswith(TAG)]


def with_guards(nb, chapter: Path):
    """A copy of ``nb`` with each guard section inserted after the code cell that names it."""
    found = sections(chapter)
    used: list[str] = []
    out = nbformat.from_dict(nb)
    cells = []
    for cell in out.cells:
        cells.append(cell)
        if cell.cell_type != "code":
            continue
        for name in tags_of(cell):
            if name not in found:
                raise GuardError(f"{chapter.name}: a cell is tagged {TAG}{name} but {guard_file(chapter).name} "
                                 f"has no section '# %% guard: {name}'")
            used.append(name)
            cells.append(nbformat.v4.new_code_cell(found[name], metadata={KEY: name, "tags": ["remove-cell"]}))
    unused = [n for n in found if n not in used]
    if unused:
        raise GuardError(f"{guard_file(chapter).relative_to(ROOT)}: no cell of {chapter.name} is tagged for "
                         f"{', '.join(TAG + n for n in unused)}")
    out.cells = cells
    return out


def without_guards(nb):
    """``nb`` without its guard cells, the execution counts numbered again as if they had never run."""
    nb.cells = [c for c in nb.cells if KEY not in c.get("metadata", {})]
    count = 0
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.get("execution_count") is not None:
            count += 1
            cell.execution_count = count
            for out in cell.get("outputs", []):
                if "execution_count" in out:
                    out["execution_count"] = count
    return nb


def main(argv: list[str]) -> int:
    import jupytext

    for arg in argv or sorted(str(p) for p in GUARDS.glob("*.py")):
        chapter = ROOT / "book" / f"{Path(arg).stem}.md"
        nb = with_guards(jupytext.read(chapter), chapter)
        names = [c.metadata[KEY] for c in nb.cells if KEY in c.metadata]
        print(f"{chapter.relative_to(ROOT)}: {len(names)} guards: {', '.join(names)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
