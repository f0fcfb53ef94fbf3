"""The kernel nursery's own program: imports PyTorch and IPython's kernel once, then forks one fresh kernel
per submission, each in namespaces of its own (see :mod:`grader.nursery`, which runs this file's text with
``python -c`` inside the sandbox: the sandbox does not show ``grader/``).

It is standalone on purpose (the standard library only, until :func:`preload`) and it never runs a
student's code itself: every kernel is a grandchild, forked after the imports::

    nursery (this program; sandboxed by bwrap: no network, an allow-listed read-only file system)
      '- keeper, one per kernel: new user, mount, pid, IPC and UTS namespaces; a fresh /tmp and /dev/shm;
         '- kernel: pid 1 of its own pid namespace, no capabilities, the memory limit; runs ipykernel

A kernel cannot name the nursery's process (another pid namespace): it cannot signal it, change its
limits, priority or CPU affinity, nor, the nursery being undumpable, read or write its memory through
/proc. When the kernel, pid 1 of its namespace, dies, Linux kills every process left in that namespace
before its keeper's ``waitpid`` returns: nothing a student started outlives the submission. The only
writable places it shares with the nursery are its own work folder and the socket folder, which the
worker empties between kernels.

Protocol, one JSON object a line on stdin, one reply a line on stdout:
``{"op": "spawn", "argv": [...], "env": {...}, "cwd": ..., "memory": bytes or 0}`` -> ``{"pid": keeper}``;
``{"op": "poll", "pid": keeper}`` -> ``{"code": None or exit status}``;
``{"op": "signal", "pid": keeper, "signal": n}`` -> ``{}`` (sent to the kernel). Errors: ``{"error": text}``.
"""
import ctypes
import json
import os
import re
import resource
import signal
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID = 0x10000000, 0x20000000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 4096, 1 << 14, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
CAPABILITY_VERSION_3 = 0x20080522

libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(source, target: str, fstype, flags: int, data=None) -> None:
    enc = (lambda s: s.encode() if isinstance(s, str) else s)
    _check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _drop_capabilities() -> None:
    """No capability left, in any namespace, nor any to gain by running a program: the kernel cannot undo
    the keeper's mounts."""
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):  # the bounding set first: dropping from it takes CAP_SETPCAP
        _check(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), "capbset_drop")
    header = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable, twice (64 capabilities): all zero
    _check(libc.capset(header, data), "capset")
    _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def _mounts_under(top: str) -> list[str]:
    """The mount points strictly below ``top`` that no other of them contains (from mountinfo)."""
    points = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if point.startswith(top.rstrip("/") + "/"):
                points.append(point)
    return [p for p in points if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in points)]


def isolate() -> None:
    """In the keeper: new namespaces, a private /tmp and /dev/shm, then no capability. What the sandbox
    mounted below /tmp (the work and socket folders, and the course or its Python when they live in /tmp)
    is put back over the new /tmp as it was, submounts, read-only flags and hidden folders included (a
    recursive bind). The kernel forked next is pid 1 of the new pid namespace."""
    uid, gid = os.getuid(), os.getgid()
    _check(libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
    with open("/proc/self/setgroups", "w") as f:
        f.write("deny")
    with open("/proc/self/uid_map", "w") as f:
        f.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as f:
        f.write(f"{gid} {gid} 1")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    covered = {path: os.open(path, os.O_PATH) for path in _mounts_under("/tmp")}
    _mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    for path, fd in covered.items():
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(path, exist_ok=True)
        else:  # a file mounted on its own
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "a").close()
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        os.close(fd)
    if os.path.isdir("/dev/shm"):
        _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    _drop_capabilities()


def _set_cmdline(words: list[str]) -> None:
    """Show ``words`` as this process's command line (``ps``, /proc/PID/cmdline): a forked kernel would
    otherwise show the nursery's. Rewrites the argument area in place (fields 48-49 of /proc/self/stat
    give where it lies), padded with NULs; a command longer than the area is cut."""
    fields = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
    start, end = int(fields[45]), int(fields[46])  # arg_start, arg_end (fields 48 and 49, counted from 1)
    text = b"\0".join(w.encode() for w in words)[:end - start - 1]
    ctypes.memmove(start, text.ljust(end - start, b"\0"), end - start)


def run_kernel(request: dict) -> None:
    """In the kernel (never returns): its limits, environment, folder and standard files, then ipykernel."""
    _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
    os.setsid()
    if request.get("memory"):
        resource.setrlimit(resource.RLIMIT_DATA, (request["memory"], request["memory"]))  # see grader/sandbox.py
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.closerange(3, 65536)  # the nursery's pipes among them
    sys.argv = ["ipykernel_launcher", *request["argv"]]
    _set_cmdline([sys.executable, "-m", *sys.argv])
    if sys.path and sys.path[0] == "":  # python -c put the folder it started in first
        del sys.path[0]
    from ipykernel.kernelapp import IPKernelApp
    IPKernelApp.launch_instance()
    os._exit(0)


def keep(request: dict, report: int) -> None:
    """In the keeper (never returns): isolate, fork the kernel, write its pid to ``report``, wait for it
    (and so for its whole pid namespace) and exit with its status."""
    code = 1
    try:
        _check(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
        isolate()
        kernel = os.fork()
        if kernel == 0:
            os.close(report)
            try:
                run_kernel(request)
            except BaseException:  # noqa: BLE001 - to the kernel's stderr (the worker's log, if not redirected)
                import traceback
                traceback.print_exc()
            os._exit(1)
        os.write(report, f"{kernel}\n".encode())
        os.close(report)
        for fd in (0, 1):
            os.dup2(os.open(os.devnull, os.O_RDWR), fd)
        _, status = os.waitpid(kernel, 0)
        code = os.waitstatus_to_exitcode(status)
        code = code if code >= 0 else 128 - code
    except BaseException as exc:  # noqa: BLE001 - the reason goes back to the nursery
        os.write(report, f"error {type(exc).__name__}: {exc}\n".encode()[:500])
    os._exit(code)


class Nursery:
    def __init__(self) -> None:
        self.kernels: dict[int, int] = {}  # keeper's pid -> kernel's pid (both in this pid namespace)
        self.codes: dict[int, int] = {}  # keeper's pid -> exit status, once reaped

    def spawn(self, request: dict) -> dict:
        read, write = os.pipe()
        keeper = os.fork()
        if keeper == 0:
            os.close(read)
            keep(request, write)
        os.close(write)
        with os.fdopen(read) as f:
            line = f.readline().strip()
        if not line.isdigit():
            self.poll(keeper, block=True)
            return {"error": line or "the keeper died before the kernel started"}
        self.kernels[keeper] = int(line)
        return {"pid": keeper}

    def poll(self, keeper: int, block: bool = False) -> int | None:
        if keeper not in self.codes:
            pid, status = os.waitpid(keeper, 0 if block else os.WNOHANG)
            if pid == 0:
                return None
            self.codes[keeper] = os.waitstatus_to_exitcode(status)
            self.kernels.pop(keeper, None)
        return self.codes[keeper]

    def signal(self, keeper: int, signum: int) -> None:
        if keeper in self.kernels and self.poll(keeper) is None:
            os.kill(self.kernels[keeper], signum)

    def handle(self, request: dict) -> dict:
        op = request.get("op")
        if op == "spawn":
            return self.spawn(request)
        if op == "poll":
            return {"code": self.poll(int(request["pid"]))}
        if op == "signal":
            self.signal(int(request["pid"]), int(request["signal"]))
            return {}
        return {"error": f"unknown op {op!r}"}


def preload(modules: list[str]) -> None:
    """Import what every kernel imports, once, and call each ``module:function`` named (data every kernel
    builds: see nlpcourse.data.warm). No thread may be running when the nursery forks."""
    import importlib
    for name in modules:
        module, _, function = name.partition(":")
        loaded = importlib.import_module(module)
        if function:
            getattr(loaded, function)()
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        raise RuntimeError(f"{threads} threads after the imports: forking would copy a broken process")


def main() -> None:
    reply = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # what an import prints goes to the log, not into the replies
    try:
        preload(sys.argv[1:])
        _check(libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "dumpable")
    except BaseException as exc:  # noqa: BLE001 - the nursery then runs kernels the ordinary way
        reply.write(json.dumps({"error": f"{type(exc).__name__}: {exc}"}) + "\n")
        reply.flush()
        return
    reply.write(json.dumps({"ready": True}) + "\n")
    reply.flush()
    nursery = Nursery()
    for line in sys.stdin:
        try:
            answer = nursery.handle(json.loads(line))
        except Exception as exc:  # noqa: BLE001 - a reply always comes
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        reply.write(json.dumps(answer) + "\n")
        reply.flush()


if __name__ == "__main__":
    main()
