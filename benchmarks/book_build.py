#!/usr/bin/env python3
"""How long the whole book takes to build: cold, and with the execution cache.

Builds the book (``jupyter-book build . -W -n --keep-going --all``, as ``make book``
does) into a temporary output folder (``--path-output``), so the repository's own
``_build/`` and its Jupyter cache are never touched:

    cold         empty output folder: every chapter notebook is executed
    cached       same folder again with --all: every page is re-read and re-written,
                 notebooks come from the Jupyter cache (what a rebuild after a text
                 edit costs at most)
    incremental  same folder again without --all: nothing changed, nothing to do

and prints ``phase | seconds`` with the ratio cached/cold.

Usage (from the repository root, after ``npm ci`` and ``python scripts/vendor_js.py``):

    .venv/bin/python benchmarks/book_build.py [--json results.json] [--keep] [--no-strict]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def jupyter_book_command() -> list[str]:
    beside = Path(sys.executable).parent / "jupyter-book"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("jupyter-book")
    if found:
        return [found]
    sys.exit("book_build: jupyter-book not found (pip install -e '.[book]')")


def check_ready() -> None:
    if not (ROOT / "_config.yml").is_file() or not (ROOT / "_toc.yml").is_file():
        sys.exit(f"book_build: {ROOT} has no _config.yml/_toc.yml")
    if not (ROOT / "book" / "_vendor" / "js").is_dir():
        sys.exit(
            "book_build: book/_vendor/ is missing; run `npm ci --no-audit --no-fund` "
            "and `python scripts/vendor_js.py` first"
        )


def build(output: Path, *, all_pages: bool, strict: bool, log: Path) -> float:
    cmd = jupyter_book_command() + ["build", str(ROOT), "--path-output", str(output)]
    if strict:
        cmd += ["-W", "-n", "--keep-going"]
    if all_pages:
        cmd.append("--all")
    env = dict(os.environ)
    # As the Makefile: no progress bars, no GUI backend, stable hashing.
    env.update({"NLPCOURSE_PROGRESS": "0", "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"})
    start = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = "".join(log.read_text(encoding="utf-8", errors="replace").splitlines(True)[-40:])
        sys.exit(f"book_build: build failed (exit {proc.returncode}); log {log}:\n{tail}")
    return seconds


def count_pages(html: Path) -> int:
    skip = {"_static", "_sources", "_images"}
    return sum(1 for p in html.rglob("*.html") if p.relative_to(html).parts[0] not in skip)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="FILE", type=Path, help="also write the numbers to FILE")
    parser.add_argument("--keep", action="store_true", help="keep the temporary build folder")
    parser.add_argument(
        "--no-strict", dest="strict", action="store_false",
        help="do not pass -W -n --keep-going (warnings do not fail the build)",
    )
    args = parser.parse_args(argv)

    check_ready()
    workdir = Path(tempfile.mkdtemp(prefix="nlpcourse-book-build-"))
    output = workdir / "out"
    try:
        phases = {}
        phases["cold"] = build(output, all_pages=True, strict=args.strict, log=workdir / "cold.log")
        phases["cached"] = build(output, all_pages=True, strict=args.strict, log=workdir / "cached.log")
        phases["incremental"] = build(
            output, all_pages=False, strict=args.strict, log=workdir / "incremental.log"
        )
        pages = count_pages(output / "_build" / "html")
    finally:
        if args.keep:
            print(f"book_build: kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    ratio = phases["cached"] / phases["cold"] if phases["cold"] > 0 else float("nan")
    width = max(len(name) for name in phases)
    print(f"{'phase':<{width}} | seconds")
    print(f"{'-' * width}-|--------")
    for name, seconds in phases.items():
        print(f"{name:<{width}} | {seconds:7.2f}")
    print(f"cached/cold ratio: {ratio:.3f}  ({pages} HTML pages)")

    if args.json:
        result = {
            "phases_s": {name: round(s, 3) for name, s in phases.items()},
            "ratio_cached_over_cold": round(ratio, 4),
            "html_pages": pages,
            "strict": args.strict,
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"book_build: wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
