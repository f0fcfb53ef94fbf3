"""The thread policy (nlpcourse/threads.py): where it is set, and that it does what it says: the idle OpenMP
threads of a process that imported nlpcourse before torch sleep instead of burning a core."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from grader.sandbox import kernel_env
from nlpcourse.errors import CourseError
from nlpcourse.threads import THREADS, WAIT_POLICY, thread_env, use_threads

ROOT = Path(__file__).resolve().parents[1]

# A child process: two threads, a parallel loop, then 50 ms asleep, ten times; prints the CPU seconds the
# process used while its main thread slept (what the other OpenMP thread burnt waiting for the next loop).
IDLE_CPU = """
import json, resource, sys, time
{imports}
torch.set_num_threads(2)
x = torch.randn(4_000_000)
idle = 0.0
for _ in range(10):
    y = x * 2.0 + 1.0  # a loop torch splits over its two OpenMP threads
    before = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    time.sleep(0.05)
    idle += resource.getrusage(resource.RUSAGE_SELF).ru_utime - before
print(json.dumps({{"idle_cpu": idle, "policy": os.environ.get("OMP_WAIT_POLICY")}}))
"""


def _child(imports: str, **env: str) -> dict:
    import os

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "MKL_", "GOMP_"))}
    out = subprocess.run([sys.executable, "-c", "import os\n" + IDLE_CPU.format(imports=imports)],
                         capture_output=True, text=True, env={**clean, **env}, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_importing_nlpcourse_first_puts_the_sleeping_policy_in_force():
    """The control (ACTIVE: spin without end) shows that the measure sees spinning; nlpcourse imported
    before torch then keeps the idle CPU near zero, and torch imported first leaves the policy unset."""
    spinning = _child("import torch", OMP_WAIT_POLICY="ACTIVE")
    if spinning["idle_cpu"] < 0.2:
        pytest.skip(f"this torch's OpenMP does not spin even when told to ({spinning['idle_cpu']:.2f} s)")
    course = _child("import nlpcourse\nimport torch")
    assert course["policy"] == WAIT_POLICY
    assert course["idle_cpu"] < 0.1, course
    late = _child("import torch\nimport nlpcourse")
    assert late["policy"] is None, "torch was loaded first: its OpenMP has read the default already"


def test_a_policy_set_before_is_kept_and_reported():
    code = "import os\nimport nlpcourse.threads as t\nprint(t.set_wait_policy(), os.environ['OMP_WAIT_POLICY'])"
    clean = {k: v for k, v in __import__("os").environ.items() if not k.startswith("OMP_")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**clean, "OMP_WAIT_POLICY": "active"}).stdout.split()
    assert out == ["False", "active"]


def test_the_makefile_and_the_grader_use_the_policy(tmp_path):
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(rf"^export OMP_WAIT_POLICY := {WAIT_POLICY}$", makefile, re.M)
    env = kernel_env(tmp_path, {})
    assert {k: env[k] for k in thread_env(THREADS["kernel"])} == thread_env(THREADS["kernel"])
    assert env["OMP_NUM_THREADS"] == env["OPENBLAS_NUM_THREADS"] == "1" and env["OMP_WAIT_POLICY"] == WAIT_POLICY


def test_use_threads_by_place_or_number_and_refuses_nonsense():
    import torch

    before = torch.get_num_threads()
    try:
        assert use_threads("judge") == THREADS["judge"] == torch.get_num_threads()
        assert use_threads(2) == 2 == torch.get_num_threads()
        for bad in ("gpu", 0, -1, 1.5, True):
            with pytest.raises(CourseError):
                use_threads(bad)
    finally:
        torch.set_num_threads(before)


# A child process: numpy multiplies on two BLAS threads (or on what use_threads leaves), then sleeps 50 ms,
# ten times; prints the CPU seconds burnt while it slept and the threads of every BLAS library loaded by then,
# scipy's (loaded after use_threads) included.
BLAS_IDLE_CPU = """
import json, resource, sys, time
import numpy as np
{use}
x = np.random.default_rng(0).random((400, 400))
idle = 0.0
for _ in range(10):
    y = x @ x
    before = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    time.sleep(0.05)
    idle += resource.getrusage(resource.RUSAGE_SELF).ru_utime - before
import scipy.linalg
from threadpoolctl import threadpool_info
blas = [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]
print(json.dumps({{"idle_cpu": idle, "threads": blas}}))
"""


def _blas_child(use: str) -> dict:
    import os

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "MKL_", "OPENBLAS_"))}
    clean["OPENBLAS_NUM_THREADS"] = "2"  # the default on the course's 2-core machine, on any machine
    out = subprocess.run([sys.executable, "-c", BLAS_IDLE_CPU.format(use=use)], capture_output=True, text=True,
                         env=clean, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_use_threads_limits_blas_loaded_before_and_after_and_its_threads_stop_spinning():
    """The control (numpy's two OpenBLAS threads) shows that the measure sees spinning; after
    ``use_threads(1)`` numpy's BLAS and scipy's, loaded later, have one thread and burn nothing idle."""
    spinning = _blas_child("")
    course = _blas_child("import nlpcourse\nnlpcourse.use_threads('chapter')")
    assert course["threads"] and set(course["threads"]) == {THREADS["chapter"]}, course
    if spinning["idle_cpu"] < 0.05:
        pytest.skip(f"this OpenBLAS does not spin while idle ({spinning['idle_cpu']:.3f} s)")
    assert course["idle_cpu"] < spinning["idle_cpu"] / 5, (course, spinning)
