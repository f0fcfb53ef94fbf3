"""A nursery of kernels: one sandboxed process per worker that imports PyTorch and ipykernel once and forks a
fresh kernel for each submission, instead of a new interpreter importing them again every time.

Each kernel still starts from the same state: the nursery never runs a student's code, and a kernel it
forks gets its own user, mount, pid, IPC and UTS namespaces, a private ``/tmp`` and ``/dev/shm``, no
capability, and the memory limit (:mod:`grader.zygote` runs inside the sandbox and says how). What the
kernels share with the nursery is only read-only (the sandbox's file system) or emptied between them by
the worker: the work folder the kernel runs in (the submission's ``kernel/`` folder, moved in for its run
and back out after it) and the folder of its IPC sockets. Anything the nursery cannot do (no bubblewrap,
a failed start, a nursery that died) falls back to the ordinary sandboxed kernel, one per submission.

``GRADER_NURSERY=0`` in the worker's environment turns the nursery off.
"""
from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from .sandbox import kernel_env, sandbox_available, sandbox_prefix, socket_folder

ZYGOTE = Path(__file__).with_name("zygote.py")
#: Imported once by the nursery: what the assignments' set-up cells import, ipykernel, and torch._dynamo,
#: which a torch.optim optimizer imports on its first step (about a second, in every kernel that trains);
#: ``module:function`` is called once, after the imports.
PRELOAD = ("torch", "torch._dynamo", "torch.nn.utils.rnn", "numpy", "ipykernel.kernelapp", "nlpcourse",
           "nlpcourse.checking", "nlpcourse.data", "nlpcourse.data.batching", "nlpcourse.data.translation",
           "nlpcourse.data.word_corpus", "nlpcourse.data.lm_corpus", "nlpcourse.data.subword",
           "nlpcourse.vectors", "nlpcourse.models.bert", "nlpcourse.models.bow_mlp",
           "nlpcourse.data.warm:graded_data")  # and the data the trained parts read, built once
#: Seconds the nursery has to import everything, and to answer a request.
START_TIMEOUT, REPLY_TIMEOUT = 180.0, 30.0


class NurseryError(RuntimeError):
    """The nursery died, did not answer, or refused a request."""


class ForkedKernel:
    """What jupyter_client's ``LocalProvisioner`` uses of a ``Popen``, for a kernel the nursery forked.
    ``pid`` is its keeper's, in the nursery's pid namespace: a name for requests, not a host pid."""

    stdin = stdout = stderr = None

    def __init__(self, nursery: Nursery, pid: int) -> None:
        self.nursery, self.pid, self.returncode = nursery, pid, None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                self.returncode = self.nursery.request(op="poll", pid=self.pid)["code"]
            except NurseryError:
                self.returncode = -signal.SIGKILL  # the nursery is gone, and its kernels with it
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired("kernel", timeout)
            time.sleep(0.05)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            try:
                self.nursery.request(op="signal", pid=self.pid, signal=int(signum))
            except NurseryError:
                pass

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)


class Nursery:
    """The nursery of one worker, under ``root`` (a folder on the same file system as the submissions'
    work folders, so that a kernel folder moves in and out by a rename)."""

    def __init__(self, root: Path, hide: list[Path]) -> None:
        self.root, self.hide = root, hide
        self.slot = root / "slot"  # the nursery's sandbox sees and writes only this folder (and sockets)
        self.proc: subprocess.Popen | None = None
        self.sockets: Path | None = None
        self.spawned = 0
        self.current: ForkedKernel | None = None  # the kernel of the submission being run

    def start(self) -> None:
        """Start the nursery and wait until it has imported everything (NurseryError if it could not)."""
        self.slot.mkdir(parents=True, exist_ok=True)
        os.chmod(self.slot, 0o777)
        self.sockets = socket_folder()
        cmd = sandbox_prefix(self.slot, self.hide, None, self.sockets, as_pid_1=True)
        cmd += [sys.executable, "-c", ZYGOTE.read_text(), *PRELOAD]
        # bwrap --die-with-parent: the nursery, and every kernel in it, dies with this worker
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=kernel_env(self.slot, {}),
                                     cwd=self.slot, bufsize=0)
        answer = self._read(START_TIMEOUT)
        if not answer.get("ready"):
            self.close()
            raise NurseryError(f"the kernel nursery did not start: {answer.get('error', answer)}")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def request(self, **message) -> dict:
        if not self.alive():
            raise NurseryError("the kernel nursery is not running")
        try:
            self.proc.stdin.write((json.dumps(message) + "\n").encode())
            self.proc.stdin.flush()
        except OSError as exc:
            raise NurseryError(f"the kernel nursery stopped reading: {exc}") from exc
        answer = self._read(REPLY_TIMEOUT)
        if "error" in answer:
            raise NurseryError(answer["error"])
        return answer

    def _read(self, timeout: float) -> dict:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else b""
        if not line:
            self.close()
            raise NurseryError("the kernel nursery died" if ready else f"no answer in {timeout:g} s")
        return json.loads(line)

    def spawn(self, argv: list[str], env: dict[str, str], cwd: Path, memory_bytes: int | None) -> ForkedKernel:
        """Fork a kernel running ``ipykernel_launcher argv`` in ``cwd`` with exactly ``env``."""
        self.spawned += 1
        pid = self.request(op="spawn", argv=argv, env=env, cwd=str(cwd), memory=memory_bytes or 0)["pid"]
        self.current = ForkedKernel(self, pid)
        return self.current

    def kernel_ip(self) -> str:
        """The IPC address prefix of the next kernel: new socket names for every kernel."""
        return str(self.sockets / f"k{self.spawned}")

    def enter(self, kdir: Path) -> Path:
        """Move the submission's kernel folder into the slot; return where the kernel sees it."""
        self._empty(self.slot)
        st = os.lstat(kdir)
        (self.root / "owner").write_text(json.dumps({"kdir": str(kdir), "dev": st.st_dev, "ino": st.st_ino}))
        os.rename(kdir, self.slot / "kernel")
        return self.slot / "kernel"

    def leave(self) -> None:
        """After a submission: make sure its kernel (and so its whole pid namespace) is dead, put the
        kernel folder back where it came from, and empty the slot and the socket folder."""
        kernel, self.current = self.current, None
        if kernel is not None and kernel.poll() is None:
            kernel.kill()
            try:
                kernel.wait(REPLY_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.close()  # the nursery's pid namespace dies with it, every kernel in it too
        restore(self.root)
        self._empty(self.slot)
        if self.sockets is not None:
            self._empty(self.sockets)

    @staticmethod
    def _empty(folder: Path) -> None:
        for p in list(folder.iterdir()):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)

    def close(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            for f in (self.proc.stdin, self.proc.stdout):
                f.close()
            self.proc = None
        if self.sockets is not None:
            shutil.rmtree(self.sockets, ignore_errors=True)
            self.sockets = None


def restore(root: Path) -> None:
    """Put back the kernel folder that ``root``'s nursery holds, if any: the folder that was moved in (the
    same inode; a kernel may have renamed it, or put a link in its place), or, if the kernel destroyed it,
    an empty one. Used after every submission and by ``finalize`` after a killed worker."""
    owner = root / "owner"
    if not owner.exists():
        return
    info = json.loads(owner.read_text())
    kdir = Path(info["kdir"])
    found = _find_folder(root / "slot", info["dev"], info["ino"])
    if found is not None and not kdir.exists():
        os.rename(found, kdir)
    elif not kdir.exists():
        (kdir / "outputs").mkdir(parents=True)
    owner.unlink()


def _find_folder(top: Path, dev: int, ino: int) -> Path | None:
    for folder, subfolders, _ in os.walk(top):  # links are not followed
        for name in subfolders:
            st = os.lstat(os.path.join(folder, name))
            if (st.st_dev, st.st_ino) == (dev, ino):
                return Path(folder, name)
    return None


def restore_after_kill(kdir: Path) -> None:
    """``finalize``'s side: the kernel folder of a worker that was killed mid-submission may still be in
    its nursery's slot (work/.nursery-PID, two levels above the submission's folder)."""
    if kdir.exists():
        return
    for root in kdir.parent.parent.parent.glob(".nursery-*"):
        owner = root / "owner"
        if owner.exists() and json.loads(owner.read_text()).get("kdir") == str(kdir):
            restore(root)


_NURSERY: Nursery | None = None
_FAILED: str | None = None  # why this worker's nursery could not start: it is not tried again


def nursery_for(work: Path, hide: list[Path]) -> Nursery | None:
    """This worker's nursery for submissions under ``work`` (a course's ``work/`` folder), started if
    need be; None where kernels must start the ordinary way."""
    global _NURSERY, _FAILED
    if os.environ.get("GRADER_NURSERY", "1") == "0" or _FAILED or not sandbox_available():
        return None
    root = work / f".nursery-{os.getpid()}"
    if _NURSERY is not None and (_NURSERY.root != root or _NURSERY.hide != hide or not _NURSERY.alive()):
        _NURSERY.close()
        _NURSERY = None
    if _NURSERY is None:
        nursery = Nursery(root, hide)
        try:
            nursery.start()
        except (NurseryError, OSError, ValueError) as exc:
            _FAILED = str(exc)
            print(f"grader: kernels start one by one: {exc}", file=sys.stderr, flush=True)
            return None
        _NURSERY = nursery
        atexit.register(_close_at_exit, nursery)
    return _NURSERY


def _close_at_exit(nursery: Nursery) -> None:
    nursery.close()
    if not (nursery.root / "owner").exists():  # else finalize still has a kernel folder to take back
        shutil.rmtree(nursery.root, ignore_errors=True)
