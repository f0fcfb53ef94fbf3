"""How big a student's install is: the course's wheel, and the installed packages it needs.

Builds the wheel into a temporary folder (``pip wheel --no-deps``, as ``pip install`` would) and sums, for the
course library and every package it needs (and those need, without extras), the files this Python has
installed of them: the figures of the book's "Start here" page.

    python scripts/install_size.py
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]
#: What the wheel is built from (setup.py copies data/ and benchmarks/results/ into it).
SOURCES = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "nlpcourse", "grader",
           "data", "benchmarks/results"]


def build_wheel(out: Path, env: dict[str, str] | None = None) -> Path:
    """The course's wheel, built in ``out`` from a copy of its sources (no stale ``build/`` of a checkout, no
    checkpoints). The copy has no git history: ``env`` sets NLPCOURSE_REPOSITORY and NLPCOURSE_REVISION, the
    address the wheel fetches the trained models from (setup.py)."""
    src = out / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "checkpoints", "_data", "_origin.json")
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(REPO / name, src / name, ignore=ignore)
        else:
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet",
                           str(src), "-w", str(out / "wheel")], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    if done.returncode != 0:
        raise RuntimeError(f"pip wheel failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    (wheel,) = (out / "wheel").glob("nlpcourse-*.whl")
    return wheel


def wheel_bytes() -> int:
    with tempfile.TemporaryDirectory() as out:
        return build_wheel(Path(out)).stat().st_size


def needed(dist: str = "nlpcourse") -> dict[str, int]:
    """Installed bytes of every distribution ``dist`` needs, itself left out, by normalised name."""
    sizes: dict[str, int] = {}
    todo = [Requirement(r) for r in metadata.requires(dist) or []]
    while todo:
        req = todo.pop()
        key = re.sub(r"[-_.]+", "-", req.name).lower()
        if key in sizes or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        try:
            found = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue
        sizes[key] = sum(f.size or 0 for f in found.files or [])
        todo += [Requirement(r) for r in found.requires or []]
    return sizes


def main() -> int:
    sizes = needed()
    print(f"wheel: {wheel_bytes() / 1e6:.1f} MB")
    print(f"packages it needs: {len(sizes)}, {sum(sizes.values()) / 1e6:,.0f} MB installed")
    for name, size in sorted(sizes.items(), key=lambda kv: -kv[1])[:5]:
        print(f"  {name:16s} {size / 1e6:6,.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
