#!/usr/bin/env python3
"""Execute the book's chapters into the build's Jupyter cache, several at a time, before ``jupyter-book build``.

The book's chapters are notebooks that the build executes (``execute_notebooks: cache`` in _config.yml).
Jupyter Book runs them one after another on one core; this script runs them ``--jobs`` at a time, the
longest first, each in its own kernel with the settings the build would use (the chapter's folder as the
working directory, ``execute: timeout`` per cell, no error allowed), and stores each executed notebook in
the cache (``_build/.jupyter_cache``) exactly as myst-nb does. The build then finds every chapter in the
cache and only renders it. A chapter already cached with its current code is not run again; one that
raises stops the build with its traceback, as the build would. Each chapter runs with its guards
(``scripts/chapter_guards.py``: the checks of the numbers its text states, kept out of the chapter), which
are taken out again before the notebook is stored. Each chapter's cells run on the threads
``nlpcourse.threads`` sets, so its numbers do not depend on how many chapters run beside it.

    python scripts/execute_chapters.py [--jobs 2] [--check] [CHAPTER ...]
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import jupytext
import nbformat
import yaml
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from chapter_guards import guard_file, with_guards, without_guards
from executed_chapters import ROOT, chapters

CACHE = ROOT / "_build" / ".jupyter_cache"
#: Seconds each chapter took to execute at the last measurement (one core each, two at a time: this script's
#: own report), to start the longest first where the cache has no timing yet (a fresh clone). Only the order
#: depends on them; a chapter missing here counts as a minute.
EXPECTED_SECONDS = {"word2vec": 75, "pretraining": 85, "seq2seq": 55, "cnn": 50, "transformer": 49,
                    "building_blocks": 34, "rnnlm": 29, "intro": 3}


def settings() -> dict:
    """The build's execution settings (_config.yml's ``execute:``)."""
    execute = yaml.safe_load((ROOT / "_config.yml").read_text()).get("execute", {})
    return {"timeout": execute.get("timeout", 30), "allow_errors": execute.get("allow_errors", False)}


def _execute(path: Path, timeout: int, allow_errors: bool) -> tuple[Path, object, float, str | None]:
    """Run one chapter in a fresh kernel, in its own folder (run in a worker process)."""
    from jupyter_cache.executors.utils import single_nb_execution

    nb = with_guards(jupytext.read(path), path)  # the chapter's checks run in its kernel, then leave
    result = single_nb_execution(nb, cwd=str(path.parent), timeout=timeout, allow_errors=allow_errors,
                                 meta_override=True)
    return path, without_guards(nb), result.time, result.exc_string if result.err is not None else None


def expected(path: Path, cache) -> float:
    """How long the chapter should take: its last cached run, else EXPECTED_SECONDS."""
    runs = [r.data.get("execution_seconds", 0) for r in cache.list_cache_records() if r.uri == str(path)]
    return max(runs) if runs else EXPECTED_SECONDS.get(path.stem, 60)


def depends_on(path: Path) -> list[Path]:
    """The files besides its code whose change must run the chapter again: its guard file, and the files
    its front matter names under ``course_depends`` (glob patterns from the repository's root), for a
    page whose outputs read other files (the front page counts the words of the chapters)."""
    meta = jupytext.read(path).metadata
    patterns = meta.get("course_depends", [])
    files = [guard_file(path)] + [f for pattern in patterns for f in sorted(ROOT.glob(pattern))]
    return [f for f in files if f.exists()]


def inputs_digest(path: Path) -> str:
    """A digest of the files the chapter depends on besides its code (depends_on), stored with its executed
    notebook ('' for none)."""
    files = depends_on(path)
    if not files:
        return ""
    digest = hashlib.sha256()
    for f in files:
        digest.update(f.relative_to(ROOT).as_posix().encode() + b"\0" + f.read_bytes())
    return digest.hexdigest()


def stale(paths: list[Path], cache) -> list[Path]:
    """The chapters whose current code, guards or other inputs (depends_on) have no executed notebook in the
    cache."""
    out = []
    for path in paths:
        try:
            record = cache.match_cache_notebook(jupytext.read(path))
        except KeyError:
            out.append(path)
            continue
        if record.data.get("inputs", "") != inputs_digest(path):
            out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2, help="chapters executed at once (default 2)")
    ap.add_argument("--check", action="store_true",
                    help="execute the chapters (with their guards) into _build/check/<chapter>.ipynb, to read, "
                         "whether or not they are cached; the cache is left as it is")
    ap.add_argument("only", nargs="*", help="execute only these chapters (names such as word2vec; default all)")
    args = ap.parse_args(argv)
    cache = get_cache(str(CACHE))
    paths = [p for p in chapters() if not args.only or p.stem in args.only]
    unknown = set(args.only) - {p.stem for p in paths}
    if unknown:
        ap.error(f"no chapter named {', '.join(sorted(unknown))}")
    todo = sorted(paths if args.check else stale(paths, cache), key=lambda p: -expected(p, cache))
    if not todo:
        print("every chapter is in the cache with its current code")
        return 0
    opts = settings()
    start, failed = time.monotonic(), []
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(_execute, p, opts["timeout"], opts["allow_errors"]) for p in todo]
        for fut in futures:
            path, nb, seconds, error = fut.result()
            name = path.relative_to(ROOT)
            if error:
                failed.append(str(name))
                print(f"{name}: executing the notebook failed after {seconds:.0f} s\n{error}", file=sys.stderr)
                continue
            if args.check:
                (ROOT / "_build" / "check").mkdir(parents=True, exist_ok=True)
                nbformat.write(nb, str(ROOT / "_build" / "check" / f"{path.stem}.ipynb"))
                print(f"{name}: executed in {seconds:.1f} s into _build/check/{path.stem}.ipynb", flush=True)
                continue
            cache.cache_notebook_bundle(CacheBundleIn(nb, str(path), data={"execution_seconds": seconds,
                                                                    "inputs": inputs_digest(path)}),
                                        check_validity=False, overwrite=True)
            print(f"{name}: executed in {seconds:.1f} s", flush=True)
    print(f"{len(todo) - len(failed)} chapters executed in {time.monotonic() - start:.0f} s, {args.jobs} at a time")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
