#!/usr/bin/env python3
"""Write each chapter of the book, with the outputs of its last build, as an .ipynb for nbval.

The book build executes every chapter and keeps the results in its Jupyter cache
(``_build/.jupyter_cache``). nbval re-runs a notebook and compares the new outputs with the stored
ones, so ``make test`` gives it these notebooks: a chapter that fails, or whose numbers change
from one run to the next, fails the test suite. The paths are printed the longest chapter first (by the
build's timing), the order in which ``make test`` hands them to nbval's two workers.

    python scripts/executed_chapters.py [--out _build/executed]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jupytext
import nbformat
import yaml
from jupyter_cache import get_cache

ROOT = Path(__file__).resolve().parents[1]


def toc_pages() -> list[str]:
    """Every page of ``_toc.yml``, in order, without extension."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        for ch in part.get("chapters", []):
            pages.append(ch["file"])
            pages += [s["file"] for s in ch.get("sections", [])]
    return pages


def notebook_path(page: str) -> Path | None:
    """The page's source if it is a notebook: an .ipynb, or a MyST .md whose front matter has a kernelspec."""
    if (ROOT / f"{page}.ipynb").exists():
        return ROOT / f"{page}.ipynb"
    md = ROOT / f"{page}.md"
    text = md.read_text() if md.exists() else ""
    if text.startswith("---") and "kernelspec" in (yaml.safe_load(text.split("---", 2)[1]) or {}):
        return md
    return None


def chapters() -> list[Path]:
    return [p for p in map(notebook_path, toc_pages()) if p is not None]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "_build" / "executed")
    args = ap.parse_args()
    cache = get_cache(str(ROOT / "_build" / ".jupyter_cache"))
    seconds = {r.uri: r.data.get("execution_seconds", 0) for r in cache.list_cache_records()}
    missing = []
    for path in sorted(chapters(), key=lambda p: -seconds.get(str(p), 0)):  # the longest first
        nb = jupytext.read(path)
        try:
            _, merged = cache.merge_match_into_notebook(nb)
        except KeyError:
            missing.append(str(path.relative_to(ROOT)))
            continue
        dest = args.out / path.relative_to(ROOT).with_suffix(".ipynb")
        dest.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(merged, str(dest))
        print(dest)
    if missing:
        print(f"not in the build's cache (run `make book` first): {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
