"""The wheel's build step: pyproject.toml holds the package's metadata; this file adds the data a student's
install needs and a checkout finds beside the package (nlpcourse.data.registry.data_dir):

- ``nlpcourse/_data/``: the bundled corpora, ``registry.json`` (which also lists the checkpoints' SHA-256),
  PROVENANCE.md, and ``results/``, the benchmark results the chapters quote;
- ``nlpcourse/_origin.json``: the repository's address and the commit built, from which a student's install
  fetches the trained models on first use (nlpcourse.data.checkpoints). ``NLPCOURSE_REPOSITORY`` and
  ``NLPCOURSE_REVISION`` set them; otherwise git's ``origin`` remote and ``HEAD``.

The checkpoints (79 MB) stay out of the wheel. An editable install (``pip install -e .``) copies nothing: the
package then reads the repository's own ``data/`` and ``benchmarks/results/``.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: What goes into nlpcourse/_data: (folder of the repository, file patterns, sub-folder of _data).
PACKAGE_DATA = [
    ("data", ["*.gz", "registry.json", "PROVENANCE.md", "README.md"], ""),
    ("benchmarks/results", ["*.json"], "results"),
]


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(HERE), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def web_address(remote: str) -> str:
    """``https://host/ORG/REPO`` for a git remote (``git@github.com:ORG/REPO.git``, a URL with a user or a
    token in it); "" for a local path."""
    remote = remote.strip()
    scp = re.fullmatch(r"[\w.-]+@([\w.-]+):(.+)", remote)
    if scp:
        remote = f"https://{scp.group(1)}/{scp.group(2)}"
    match = re.fullmatch(r"(?:https?|git|ssh)://(?:[^@/]+@)?([^/]+)/(.+?)(?:\.git)?/?", remote)
    return f"https://{match.group(1)}/{match.group(2)}" if match else ""


def origin() -> dict[str, str]:
    repository = os.environ.get("NLPCOURSE_REPOSITORY") or web_address(_git("remote", "get-url", "origin"))
    revision = os.environ.get("NLPCOURSE_REVISION") or _git("rev-parse", "HEAD")
    return {"repository": repository.rstrip("/"), "revision": revision}


class BuildWithData(build_py):
    """build_py, then the course's data copied into the built package (not for an editable install)."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        package = Path(self.build_lib) / "nlpcourse"
        for folder, patterns, sub in PACKAGE_DATA:
            target = package / "_data" / sub
            target.mkdir(parents=True, exist_ok=True)
            for pattern in patterns:
                for path in sorted((HERE / folder).glob(pattern)):
                    shutil.copy2(path, target / path.name)
        (package / "_origin.json").write_text(json.dumps(origin(), indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":  # setuptools runs this file as __main__; a test imports it for web_address
    setup(cmdclass={"build_py": BuildWithData})
