"""Run a student's kernel in a sandbox: no network, hidden instructor files, limited memory.

The kernel is started under bubblewrap (``bwrap``) where it is available:

* ``--unshare-net``: a network namespace of its own, with only loopback; the kernel talks to the
  grader over Unix sockets (ZeroMQ ``ipc`` transport) in its work folder, not over TCP;
* ``--unshare-user --uid 65534 --cap-drop ALL``: an unprivileged user with no capabilities, so it
  cannot undo the mounts below; ``--unshare-pid``: it cannot see or signal the grader's processes
  (nor read their memory or environment through /proc);
* the file system starts empty: only the system folders (``/usr``, ``/etc``, the libraries), the Python
  environment, the course library and the bundled data are mounted, read-only, and the kernel's own
  work folder read-write; ``solutions/`` (reference implementations, source notebooks), ``.git``, the
  gradebook, every other submission, home folders and any other copy of the course on the machine
  are simply not there; ``/tmp`` is a fresh tmpfs;
* ``prlimit --data``: a limit on the memory the kernel writes (``RLIMIT_DATA``: its private writable
  mappings, which PyTorch's and numpy's CPU buffers are), so a memory bomb fails inside the kernel. Not
  an address-space limit (``RLIMIT_AS``): PyTorch with CUDA reserves far more address space than it uses.
  On an H200 with the course's first 4 GiB address-space limit, CUDA's start failed ("out of memory") in
  every kernel, an 82 MB CPU tensor could not be allocated, and five of the seven solutions lost points
  (``make gpu-check``, 2026-11-27).

Without bwrap (macOS, a container without user namespaces) the kernel runs with the memory limit
only, and :func:`sandbox_available` says so; the grader prints a warning.
"""
from __future__ import annotations

import functools
import glob
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from traitlets import Any, Dict, Int, List, Unicode

from nlpcourse.threads import THREADS, thread_env

REPO = Path(__file__).resolve().parents[1]


@functools.lru_cache(maxsize=1)
def sandbox_available() -> bool:
    """True if bubblewrap can create the namespaces the sandbox needs here."""
    bwrap = shutil.which("bwrap")
    if not bwrap:
        return False
    try:
        # with the /proc and /dev the sandbox mounts: a container whose runtime masks /proc refuses a new one
        # (bubblewrap #284), and there every kernel would fail to start instead of running unsandboxed
        r = subprocess.run([bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--unshare-net",
                            "--unshare-user", "--unshare-pid", "--uid", "65534", "--gid", "65534", "--cap-drop",
                            "ALL", "true"],
                           capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


#: System folders the kernel sees, read-only (those that exist; a link such as /bin -> usr/bin stays a link).
SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
#: Files of those folders replaced by an empty file in the sandbox.
MASKED_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-")


def visible_folders() -> list[Path]:
    """What the kernel may read besides the system folders: the Python it runs on (the environment and
    the installation it was made from), the course library and the bundled data. Nothing else of
    the machine is in the sandbox: not the repository, not another checkout, not a home folder."""
    folders = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent,
               REPO / "nlpcourse", REPO / "data"]
    out: list[Path] = []
    for f in folders:
        if f.exists() and not any(_inside(f, g) for g in out):
            out = [g for g in out if not _inside(g, f)] + [f]
    return out


def sandbox_prefix(workdir: Path, hide: list[Path], memory_bytes: int | None,
                   sockets: Path | None = None, as_pid_1: bool = False) -> list[str]:
    """The command words that put what follows them in the sandbox, with ``workdir`` (and the socket
    folder ``sockets``, when it is elsewhere) writable.

    The sandbox's file system starts empty (an allow-list, not a deny-list): the system folders, the
    Python environment, ``nlpcourse/`` and ``data/`` are mounted read-only, then the work and socket
    folders read-write. ``hide`` is kept out even where it lies inside one of those (an empty tmpfs).
    ``as_pid_1``: the command is pid 1 of the sandbox's pid namespace, with no bubblewrap process beside it
    (the kernel nursery, which reaps its own children; see grader/zygote.py)."""
    limit = ["prlimit", f"--data={memory_bytes}", "--"] if memory_bytes and shutil.which("prlimit") else []
    if not sandbox_available():
        return limit
    args = ["bwrap"]
    for top in SYSTEM_FOLDERS:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for secret in MASKED_FILES:  # readable by the kernel otherwise: its uid maps to the grader's
        if os.path.isfile(secret):
            args += ["--ro-bind", "/dev/null", secret]
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    visible = visible_folders()
    for path in visible:
        args += ["--ro-bind", str(path), str(path)]
    for path in hide:  # e.g. a course folder inside /usr/local: out of sight all the same
        if path.exists() and any(_inside(path, v) for v in visible + [Path(t) for t in SYSTEM_FOLDERS]):
            args += ["--tmpfs", str(path)]
            for v in visible:  # what the kernel needs from inside it comes back
                if _inside(v, path):
                    args += ["--ro-bind", str(v), str(v)]
    # GPUs: the device nodes of NVIDIA's driver, so that CUDA cases run in the kernel too.
    for dev in sorted(glob.glob("/dev/nvidia*")) + (["/dev/dri"] if os.path.exists("/dev/dri") else []):
        args += ["--dev-bind", dev, dev]
    if sockets is not None and not _inside(sockets, workdir):
        args += ["--bind", str(sockets), str(sockets)]  # after --tmpfs /tmp: it shows through the tmpfs
    args += ["--bind", str(workdir), str(workdir),
             "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-user",
             "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL",
             "--die-with-parent", "--new-session", "--chdir", str(workdir), *(["--as-pid-1"] if as_pid_1 else []),
             # jupyter_client tells the kernel its parent's pid, which means nothing in a new pid namespace
             "--unsetenv", "JPY_PARENT_PID"]
    return args + limit


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
        return True
    except ValueError:
        return False


class SandboxedKernelManager(AsyncKernelManager):
    """An (async, as nbclient needs) KernelManager whose kernel runs inside :func:`sandbox_prefix` and
    talks over IPC sockets."""

    workdir = Unicode("", help="the kernel's working folder, the only writable place").tag(config=True)
    hide = List(Unicode(), help="folders to hide from the kernel").tag(config=True)
    memory_bytes = Int(0, help="data-memory limit of the kernel (0: none)").tag(config=True)
    extra_env = Dict(help="environment variables for the kernel").tag(config=True)
    sockets = Unicode("", help="folder of the kernel's IPC sockets").tag(config=True)
    nursery = Any(None, help="a grader.nursery.Nursery that forks the kernel (None: bwrap starts it)")

    def format_kernel_cmd(self, extra_arguments=None):
        cmd = super().format_kernel_cmd(extra_arguments)
        if self.nursery is not None:  # the nursery's kernels are in its sandbox already
            return cmd
        prefix = sandbox_prefix(Path(self.workdir), [Path(h) for h in self.hide], self.memory_bytes or None,
                                Path(self.sockets) if self.sockets else None)
        return prefix + cmd

    async def _async_launch_kernel(self, kernel_cmd: list[str], **kw) -> None:
        """Where a nursery is given, it forks the kernel (``python -m ipykernel_launcher ARGS``: ARGS go to
        the nursery); jupyter_client's provisioner then sees it through a ``ForkedKernel``."""
        if self.nursery is None or kernel_cmd[1:3] != ["-m", "ipykernel_launcher"]:
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        env = {k: v for k, v in (kw.get("env") or {}).items() if k != "JPY_PARENT_PID"}
        from .nursery import NurseryError
        try:
            process = self.nursery.spawn(kernel_cmd[3:], env, Path(self.workdir), self.memory_bytes or None)
        except NurseryError as exc:  # no kernel ran: this one starts the ordinary way, nothing is lost
            print(f"grader: the kernel nursery failed ({exc}); the kernel starts the ordinary way",
                  file=sys.stderr, flush=True)
            self.nursery = None
            return await super()._async_launch_kernel(self.format_kernel_cmd(), **kw)
        self.provisioner.process, self.provisioner.pid, self.provisioner.pgid = process, process.pid, None
        self._reconcile_connection_info(self.provisioner.connection_info)


def kernel_env(workdir: Path, extra: dict[str, str]) -> dict[str, str]:
    """A small, explicit environment for the kernel: nothing of the grader's leaks in."""
    keep = ("PATH", "LANG", "LC_ALL", "PYTHONPATH", "VIRTUAL_ENV", "NLPCOURSE_DATA_DIR", "CUDA_VISIBLE_DEVICES")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update({
        "HOME": str(workdir),
        "IPYTHONDIR": str(workdir / ".ipython"),
        "MPLCONFIGDIR": str(workdir / ".mpl"),
        "MPLBACKEND": "Agg",
        "JUPYTER_RUNTIME_DIR": str(workdir / ".runtime"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "NLPCOURSE_PROGRESS": "0",
        **thread_env(THREADS["kernel"]),  # one thread per kernel, idle OpenMP threads asleep (nlpcourse/threads.py)
    })
    env.update(extra)
    return env


#: A Unix socket's path holds at most 107 bytes: the kernel's sockets go in a short folder of their own.
MAX_SOCKET_PATH = 100


def socket_folder() -> Path:
    """A new, short-named folder for one kernel's IPC sockets (``/tmp/nlpg-XXXXXXXX``): a course folder
    deep in the file system would make ``<workdir>/kernel-ipc-N`` too long a socket path for ZeroMQ.
    The sandboxed kernel runs as another user: the folder is writable by all, like its work folder."""
    base = "/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir()
    folder = Path(tempfile.mkdtemp(prefix="nlpg-", dir=base))
    os.chmod(folder, 0o777)
    if len(str(folder / "k-0000")) > MAX_SOCKET_PATH:
        raise OSError(f"no short folder for the kernel's sockets: {folder} is too long a path")
    return folder


def new_kernel_manager(workdir: Path, hide: list[Path], memory_bytes: int | None,
                       sockets: Path, nursery=None) -> SandboxedKernelManager:
    """A kernel manager for one submission: its connection file in ``workdir``, its IPC sockets in
    ``sockets`` (see :func:`socket_folder`); forked by ``nursery`` (:mod:`grader.nursery`) if given."""
    km = SandboxedKernelManager(
        kernel_name="python3",
        transport="ipc",
        ip=nursery.kernel_ip() if nursery is not None else str(sockets / "k"),
        nursery=nursery,
        connection_file=str(workdir / "kernel.json"),
        workdir=str(workdir),
        sockets=str(sockets),
        hide=[str(h) for h in hide],
        memory_bytes=memory_bytes or 0,
    )
    km.kernel_spec_manager.ensure_native_kernel = True
    # The kernel is in a session of its own (bwrap --new-session): interrupt it with a message on the
    # control channel (ipykernel then signals itself) rather than a signal to our process group.
    km.kernel_spec.interrupt_mode = "message"
    return km
