#!/usr/bin/env python3
"""Execute the book's chapters into the build's Jupyter cache, several at a time, before ``jupyter-book build``.

The book's chapters are notebooks that the build executes (``execute_notebooks: cache`` in _config.yml).
Jupyter Book runs them one after another on one core; this script runs them ``--jobs`` at a time, the
longest first, each in its own kernel with the settings the build would use (the chapter's folder as the
working directory, ``execute: timeout`` per cell, no error allowed), and stores each executed notebook in
the cache (``_build/.jupyter_cache``) exactly as myst-nb does. The build then finds every chapter in the
cache and only renders it. A chapter already cached with its current code is not run again; one that
raises stops the build with its traceback, as the build would. Each chapter's cells run on the threads
``nlpcourse.threads`` sets, so its numbers do not depend on how many chapters run beside it.

    python scripts/execute_chapters.py [--jobs 2]
"""
from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import jupytext
import yaml
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from executed_chapters import ROOT, chapters

CACHE = ROOT / "_build" / ".jupyter_cache"
#: Seconds each chapter took to execute at the last measurement (one core each, two at a time: this script's
#: own report), to start the longest first where the cache has no timing yet (a fresh clone). Only the order
#: depends on them; a chapter missing here counts as a minute.
EXPECTED_SECONDS = {"word2vec": 75, "pretraining": 85, "seq2seq": 55, "cnn": 50, "transformer": 49,
                    "building_blocks": 34, "rnnlm": 29}


def settings() -> dict:
    """The build's execution settings (_config.yml's ``execute:``)."""
    execute = yaml.safe_load((ROOT / "_config.yml").read_text()).get("execute", {})
    return {"timeout": execute.get("timeout", 30), "allow_errors": execute.get("allow_errors", False)}


def _execute(path: Path, timeout: int, allow_errors: bool) -> tuple[Path, object, float, str | None]:
    """Run one chapter in a fresh kernel, in its own folder (run in a worker process)."""
    from jupyter_cache.executors.utils import single_nb_execution

    nb = jupytext.read(path)
    result = single_nb_execution(nb, cwd=str(path.parent), timeout=timeout, allow_errors=allow_errors,
                                 meta_override=True)
    return path, nb, result.time, result.exc_string if result.err is not None else None


def expected(path: Path, cache) -> float:
    """How long the chapter should take: its last cached run, else EXPECTED_SECONDS."""
    runs = [r.data.get("execution_seconds", 0) for r in cache.list_cache_records() if r.uri == str(path)]
    return max(runs) if runs else EXPECTED_SECONDS.get(path.stem, 60)


def stale(paths: list[Path], cache) -> list[Path]:
    """The chapters whose current code has no executed notebook in the cache."""
    out = []
    for path in paths:
        try:
            cache.match_cache_notebook(jupytext.read(path))
        except KeyError:
            out.append(path)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2, help="chapters executed at once (default 2)")
    args = ap.parse_args(argv)
    cache = get_cache(str(CACHE))
    todo = sorted(stale(chapters(), cache), key=lambda p: -expected(p, cache))
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
            cache.cache_notebook_bundle(CacheBundleIn(nb, str(path), data={"execution_seconds": seconds}),
                                        check_validity=False, overwrite=True)
            print(f"{name}: executed in {seconds:.1f} s", flush=True)
    print(f"{len(todo) - len(failed)} chapters executed in {time.monotonic() - start:.0f} s, {args.jobs} at a time")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
