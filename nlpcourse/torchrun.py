"""Launching a script under torchrun (``python -m torch.distributed.run --standalone``) from Python.

The pretraining benchmark, the GPU check and the tests start ``scripts/pretrain_bert.py`` this way. When a
launch fails, the launcher's own traceback names no cause, so :func:`root_cause` digs out the workers' error
lines. A launch whose processes could not reach each other (a refused connection, a port taken between its
choice and its use, a rendezvous that timed out: the machine's network, not the script) is tried once more;
any other failure raises at once.
"""
from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from nlpcourse.errors import CourseError

# what the workers or the launcher print when the processes could not connect, not when the script failed
NETWORK = re.compile(r"DistNetworkError|RendezvousTimeoutError|RendezvousConnectionError|Address already in use"
                     r"|Connection (refused|reset|closed by peer)|Socket Timeout|Broken pipe", re.IGNORECASE)


class LaunchError(CourseError, RuntimeError):
    """A script launched under torchrun exited with an error."""


def root_cause(stderr: str) -> str:
    """What a failed torchrun says went wrong: its workers' exception lines (``SomeError: ...``, with or without
    the ``[rankN]:`` prefix) and the summary's rank and exit code, most informative first; else its last lines.
    The tail alone is the launcher's own traceback, which names no cause."""
    lines = [line.strip() for line in stderr.splitlines()]
    errors = [line for line in lines if re.match(r"(\[rank\d+\]:\s*)?[\w.]*(Error|Exception)\b.*:", line)]
    summary = [line for line in lines if re.match(r"(rank|exitcode|error_file)\s*:", line)]
    found = list(dict.fromkeys(errors + summary))
    return " | ".join(found)[:1500] if found else stderr[-1500:]


def torchrun(script: Path, args: Sequence[str], nproc: int, *, env: dict[str, str] | None = None,
             cwd: Path | None = None, timeout: float = 600, fresh: Sequence[Path] = ()) -> str:
    """Run ``script args`` in ``nproc`` processes on this machine; its standard output. A launch that failed on
    the network is tried once more, after deleting the files in ``fresh`` (what a half-run may have written);
    a failure raises :class:`LaunchError` with the workers' error (and how many tries it took)."""
    if nproc < 1:
        raise LaunchError(f"torchrun needs at least one process, not nproc={nproc}")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(nproc),
           str(script), *map(str, args)]
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    tries = 1
    if proc.returncode != 0 and NETWORK.search(proc.stderr):
        print(f"torchrun of {Path(script).name} could not connect its processes, trying again: "
              f"{root_cause(proc.stderr)}", file=sys.stderr)
        for path in fresh:
            Path(path).unlink(missing_ok=True)
        proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
        tries = 2
    if proc.returncode != 0:
        raise LaunchError(f"torchrun of {Path(script).name} exited with {proc.returncode} after {tries} "
                          f"tr{'ies' if tries > 1 else 'y'}: {root_cause(proc.stderr)}")
    return proc.stdout
