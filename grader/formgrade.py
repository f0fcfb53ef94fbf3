"""``grader formgrade``: nbgrader's formgrader on the course's gradebook, in one command.

The written answers are graded by hand in nbgrader's formgrader. Started by hand it needs a Jupyter server in
the course folder with the formgrader extension, an ``nbgrader_config.py`` there that says where the source,
release and gradebook are (this course keeps its source in ``solutions/``, not nbgrader's ``source/``),
``--allow-root`` where the instructor is root, and an exchange folder it may write. This module writes that
configuration from :func:`~grader.course.nbgrader_config` and starts the server with it.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from .course import GraderError, nbgrader_config

CONFIG_NAME = "nbgrader_config.py"


def write_config(course_dir: Path) -> Path:
    """``<course_dir>/nbgrader_config.py``: the grader's own nbgrader settings, for nbgrader's apps."""
    if not (course_dir / "gradebook.db").is_file():
        raise GraderError(f"nothing graded in {course_dir} (no gradebook.db): run `grader autograde` first")
    lines = ["# Written by `grader formgrade` from grader/course.py's nbgrader_config: edits are overwritten.",
             "c = get_config()  # noqa: F821"]
    for section, values in sorted(nbgrader_config(course_dir).items()):
        for key, value in sorted(values.items()):
            lines.append(f"c.{section}.{key} = {value!r}")
    (course_dir / "exchange").mkdir(exist_ok=True)
    path = course_dir / CONFIG_NAME
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)
    return path


def server_command(course_dir: Path, port: int, ip: str = "127.0.0.1", token: str | None = None,
                   browser: bool = False) -> list[str]:
    """The Jupyter server that serves the formgrader on ``course_dir`` (run it with ``cwd=course_dir``)."""
    cmd = [sys.executable, "-m", "jupyter_server", f"--ServerApp.root_dir={course_dir}", f"--ServerApp.ip={ip}",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           "--ServerApp.jpserver_extensions={'nbgrader.server_extensions.formgrader': True}",
           f"--ServerApp.open_browser={browser}", "--ServerApp.default_url=/formgrader"]
    if token is not None:
        cmd.append(f"--IdentityProvider.token={token}")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # Jupyter refuses root without it
    return cmd


def formgrade(course_dir: Path, port: int = 8890, ip: str = "127.0.0.1", browser: bool = True) -> int:
    """Write the configuration and serve the formgrader until Ctrl-C; the server's exit status."""
    write_config(course_dir)
    print(f"formgrader for {course_dir}: open the URL below, then Manual Grading (Ctrl-C stops it)", flush=True)
    try:
        return subprocess.call(server_command(course_dir, port, ip, browser=browser), cwd=course_dir)
    except KeyboardInterrupt:
        return 0
