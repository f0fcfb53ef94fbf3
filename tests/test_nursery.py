"""The kernel nursery (grader/nursery.py, grader/zygote.py): kernels forked from one process that imported
torch once must start as clean as kernels started one by one, and nothing one of them does may reach
the nursery or the kernel after it."""
from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from grader.nursery import Nursery, restore_after_kill
from grader.sandbox import kernel_env, new_kernel_manager
from tests.grading_support import need_sandbox

pytestmark = pytest.mark.grading


@pytest.fixture(scope="module")
def nursery(tmp_path_factory):
    need_sandbox()
    work = tmp_path_factory.mktemp("nursery")
    os.environ["NLPCOURSE_NURSERY_TEST_SECRET"] = "x"
    n = Nursery(work / ".nursery-test", [])
    n.start()
    yield n
    n.close()
    del os.environ["NLPCOURSE_NURSERY_TEST_SECRET"]


def run_in_kernel(nursery: Nursery, kdir: Path, code: str) -> str:
    """Run ``code`` in a kernel the nursery forks for ``kdir`` (moved in, then back); return its stdout."""
    (kdir / "outputs").mkdir(parents=True, exist_ok=True)
    os.chmod(kdir, 0o777)
    inside = nursery.enter(kdir)
    try:
        return asyncio.run(_run(nursery, inside, code))
    finally:
        nursery.leave()


async def _run(nursery: Nursery, inside: Path, code: str) -> str:
    out: list[str] = []
    km = new_kernel_manager(inside, [], 2 * 2**30, nursery.sockets, nursery)
    await km.start_kernel(env=kernel_env(inside, {}))
    kc = km.client()
    kc.start_channels()
    try:
        await kc.wait_for_ready(timeout=60)
        reply = await kc.execute_interactive(code, timeout=60, output_hook=lambda m: out.append(
            m["content"].get("text", "") if m["msg_type"] == "stream" else ""))
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
        await km.shutdown_kernel(now=True)
    return "".join(out)


def test_a_forked_kernel_runs_alone_in_namespaces_of_its_own(nursery, tmp_path):
    """pid 1 of its own pid namespace, torch already imported, no capability, the memory limit, the
    environment it was given and nothing else, its own folder as working folder."""
    code = """
import os, resource, sys, json
caps = [l.split()[1] for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapPrm', 'CapBnd'))]
print(json.dumps({"pid": os.getpid(), "torch": "torch" in sys.modules, "caps": caps,
                  "data": resource.getrlimit(resource.RLIMIT_DATA)[0], "cwd": os.getcwd(),
                  "env": sorted(os.environ),
                  "cmdline": open('/proc/self/cmdline', 'rb').read().split(b'\\0')[2].decode()}))
"""
    facts = json.loads(run_in_kernel(nursery, tmp_path / "k", code))
    assert facts["pid"] == 1
    assert facts["torch"]
    assert set(facts["caps"]) == {"0000000000000000"}
    assert facts["data"] == 2 * 2**30
    assert facts["cwd"] == str(nursery.slot / "kernel")
    assert "JPY_PARENT_PID" not in facts["env"] and "HOME" in facts["env"]
    assert set(kernel_env(tmp_path, {})) <= set(facts["env"])
    assert "NLPCOURSE_NURSERY_TEST_SECRET" not in facts["env"]  # the worker's own environment stays out
    assert facts["cmdline"] == "ipykernel_launcher"  # what ps shows: the kernel, not the nursery


def test_nothing_a_kernel_leaves_reaches_the_next(nursery, tmp_path):
    """A file in /tmp, /dev/shm or the slot, a process left running, the nursery's processes signalled or
    re-limited: the next kernel sees none of it, and the nursery still serves."""
    hostile = """
import os, signal, subprocess, resource, pathlib
open('/tmp/left-behind', 'w').write('x'); open('/dev/shm/left-behind', 'w').write('x')
pathlib.Path('..', 'left-behind').write_text('x')
read = []
for p in os.listdir('/proc'):  # the nursery's pid namespace, seen through its /proc
    if p.isdigit() and p != os.readlink('/proc/self'):  # its own number there is not os.getpid()
        for act in (lambda: os.kill(int(p), signal.SIGSTOP),
                    lambda: resource.prlimit(int(p), resource.RLIMIT_AS, (1, 1)),
                    lambda: os.sched_setaffinity(int(p), {0})):
            try:
                act()
            except Exception:
                pass
        for private in ('environ', 'maps', 'mem'):
            try:
                with open(f'/proc/{p}/{private}', 'rb') as f:
                    f.seek(int(open(f'/proc/{p}/maps').read().split('-')[0], 16) if private == 'mem' else 0)
                    f.read(1); read.append(f'{p}/{private}')
            except Exception:
                pass
subprocess.Popen(['sleep', '600'], start_new_session=True)  # left running
print(read)
"""
    readable = run_in_kernel(nursery, tmp_path / "a", hostile).strip()
    assert readable == "[]", readable
    seen = json.loads(run_in_kernel(nursery, tmp_path / "b", """
import os, json, resource
print(json.dumps([[os.path.exists(p) for p in ('/tmp/left-behind', '/dev/shm/left-behind', '../left-behind')],
    [p for p in os.listdir('/proc') if p.isdigit() and open(f'/proc/{p}/cmdline').read().startswith('sleep')],
    len(os.sched_getaffinity(0)), resource.getrlimit(resource.RLIMIT_DATA)[0]]))
"""))
    assert seen == [[False, False, False], [], len(os.sched_getaffinity(0)), 2 * 2**30]
    assert nursery.alive()


def test_a_kernel_that_swaps_its_folder_for_a_link_gets_its_own_folder_back(nursery, tmp_path):
    """The grader reads the recordings from the folder it moved in (found by inode), never through a link
    the kernel left in its place."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "outputs").mkdir(parents=True)
    code = f"""
import os
os.chdir('..'); os.rename('kernel', 'moved'); os.symlink({str(elsewhere)!r}, 'kernel')
open('moved/outputs/mine', 'w').write('x')
"""
    run_in_kernel(nursery, tmp_path / "k", code)
    kdir = tmp_path / "k"
    assert kdir.is_dir() and not kdir.is_symlink()
    assert (kdir / "outputs" / "mine").exists()
    assert list(nursery.slot.iterdir()) == [] and not (nursery.root / "owner").exists()


def test_restore_after_a_killed_worker(tmp_path):
    """finalize's side: a kernel folder left in a dead worker's slot goes back where it came from."""
    kdir = tmp_path / "work" / "a" / "s" / "kernel"
    (kdir / "outputs").mkdir(parents=True)
    (kdir / "outputs" / "p.pt").write_text("x")
    n = Nursery(tmp_path / "work" / ".nursery-1", [])
    n.slot.mkdir(parents=True)
    n.enter(kdir)
    assert not kdir.exists()
    restore_after_kill(kdir)
    assert (kdir / "outputs" / "p.pt").read_text() == "x"
