"""The sandbox launcher: ``python -m autograder.grading.sandboxed.launcher OPTIONS -- ARGV``
(the command line that ``grader.run.bwrap.wrap`` builds) runs ``ARGV`` in bubblewrap (ARCHITECTURE.md,
"Trust model of grading"). The launcher itself is trusted code, run outside the sandbox but
as the parent of what it starts (so it sits with the sandboxed side); it clears the
environment, sets the resource limits and starts ``bwrap`` with:

- the system (/usr, /etc without its secrets), the virtual environment, the Python it was
  made from and the ``autograder`` package read-only; nothing else of the host: not the
  repository, ``solutions/``, the gradebook, other students' files or anyone's home;
- fresh /proc, /dev and /tmp (read-only), and one writable scratch folder, a tmpfs of
  ``scratch_mb`` (so it is bounded and vanishes with the sandbox), the working directory;
- each ``rw`` folder (the kernel's IPC sockets and connection file), shared with the grader
  and bounded at write time: in the sandbox a tmpfs of its share of ``scratch_mb`` holding a
  copy of the host folder's files, and on the host, once the sandbox runs, a link to that
  tmpfs as the sandbox sees it (``/proc/PID/root/...``), so that the grader reaches the
  sockets made there; the launcher also stops the sandbox when they hold over
  ``MAX_ENTRIES`` files;
- its own user, PID, network, IPC and UTS namespaces: no network, and nothing it starts
  outlives it (``--die-with-parent``; the PID namespace dies with its first process); ``--init``:
  the command is that process (``--as-pid-1``), reached from inside only by signals it handles; as root (below,
  a uid of its own) no death signal reaches it: the grader kills it (``grader.run.processes``), and it ends
  itself once its caller is gone (``sandboxed.child`` does, when it next reads its pipe).

Limits: address space (RLIMIT_AS), CPU seconds (RLIMIT_CPU), largest file (RLIMIT_FSIZE), no
core files, and processes (RLIMIT_NPROC, set inside the sandbox's own user namespace so it
counts the sandbox's processes alone). RLIMIT_NPROC does not bind uid 0, so as root the
sandbox runs under a uid of its own (``UID_BASE`` + the launcher's pid): bwrap runs as root
without a user namespace, drops every capability but setuid/setgid, and a first step inside
switches to that uid before running ``argv``. File descriptors the caller passes stay open.

Descriptors: the sandbox gets /dev/null as standard input and one pipe as standard output and
error, read by this launcher, which passes on the first ``OUTPUT_CAP`` bytes to its own
standard error and drops the rest; so nothing a student prints reaches a file or pipe of the
grader's, and printing can cost no one but the one who prints. The launcher starts through
``autograder.grading.protocol.boot`` in ``/``, with the package that module chose, and the sandbox
mounts exactly that package.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import resource
import select
import shutil
import signal
import sys
import time

from autograder.grading.protocol import boot
from autograder.grading.protocol.confinement import FIXES, OUTPUT_CAP, Limits

UID_BASE = 1_000_000_000  # as root: the sandbox's uid is this plus the launcher's pid, unique while it runs
MAX_ENTRIES = 10_000  # files and folders the rw folders may hold (the watchdog's walk stays short)

# Runs first inside the sandbox (as root: still uid 0 there): switch to the sandbox's uid,
# then limit processes, in the sandbox's user namespace when it has one, so that the limit
# counts its own processes and not every process of the instructor's account.
INNER = """\
import os, resource, sys
uid, processes = int(sys.argv[1]), int(sys.argv[2])
if uid >= 0:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
resource.setrlimit(resource.RLIMIT_NPROC, (processes, processes))
os.execvp(sys.argv[3], sys.argv[3:])
"""


def _read_only_paths() -> list[str]:
    """The virtual environment, the Python it was made from, and the autograder package
    alone: an editable install points into the repository, whose other files stay hidden."""
    package = str(boot.running())  # the launcher was booted with the package grading chose
    python = os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))
    out: list[str] = []
    for path in sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, python, package)}):
        if not any(path == top or path.startswith(top + "/") for top in ["/usr", "/etc", *out]):
            out.append(path)  # not already bound with the system or with a folder above it
    return out


def _bwrap_args(bwrap: str, scratch: str, rw: list[str], limits: Limits, uid: int, init: bool = False) -> list[str]:
    args = [bwrap, "--die-with-parent", "--new-session", *(["--as-pid-1"] if init else [])]
    if uid >= 0:  # root: a user namespace would map the sandbox to uid 0, which RLIMIT_NPROC spares
        args += [
            "--unshare-ipc",
            "--unshare-pid",
            "--unshare-net",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--cap-drop",
            "ALL",
            "--cap-add",
            "CAP_SETUID",
            "--cap-add",
            "CAP_SETGID",
        ]
    else:
        args += ["--unshare-all", "--unshare-user", "--disable-userns"]
    args += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):  # merged /usr
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    for secret in ("/etc/shadow", "/etc/gshadow", "/etc/ssh", "/etc/ssl/private"):
        if os.path.isfile(secret):
            args += ["--ro-bind", "/dev/null", secret]
        elif os.path.isdir(secret):
            args += ["--tmpfs", secret]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    # --dir first: bwrap would make the folders above a mount point 0700, closed to the sandbox's uid
    for path in _read_only_paths():
        args += ["--dir", os.path.dirname(path), "--ro-bind", path, path]
    args += _writable(scratch, rw, limits)
    # only the scratch tmpfs and the rw folders stay writable: no other tmpfs can fill the memory
    return args + ["--remount-ro", "/tmp", "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", scratch]


def _writable(scratch: str, rw: list[str], limits: Limits) -> list[str]:
    """bwrap's arguments for the folders the sandbox may write: the scratch folder, and each rw
    folder as a bounded tmpfs with a copy of the host folder's files (bwrap reads each from a
    descriptor), their sizes from ``limits.scratch_mb``."""
    args = [
        "--dir",
        os.path.dirname(scratch),
        "--perms",
        "1777",
        "--size",
        str(limits.scratch_mb * 2**20),
        "--tmpfs",
        scratch,
    ]
    for path in rw:
        args += [
            "--dir",
            os.path.dirname(path),
            "--perms",
            "1777",
            "--size",
            str(max(1, limits.scratch_mb // len(rw)) * 2**20),
            "--tmpfs",
            path,
        ]
        for name in sorted(os.listdir(path)):
            if os.path.isfile(os.path.join(path, name)) and not os.path.islink(os.path.join(path, name)):
                fd = os.open(os.path.join(path, name), os.O_RDONLY)
                os.set_inheritable(fd, True)
                args += ["--file", str(fd), os.path.join(path, name)]
    return args


def _environment(scratch: str, extra: list[str]) -> dict[str, str]:
    """A minimal environment: none of the instructor's variables (tokens, paths, home)."""
    env = {
        "PATH": f"{sys.prefix}/bin:/usr/local/bin:/usr/bin:/bin",
        "HOME": scratch,
        "TMPDIR": scratch,
        "LANG": "C.UTF-8",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
    }
    for key in ("NBGRADER_EXECUTION", "NBGRADER_VALIDATING"):  # nbgrader sets them while it runs a notebook
        if key in os.environ:
            env[key] = os.environ[key]
    for item in extra:
        key, value = item.split("=", 1)
        env[key] = value
    return env


def _limit(which: int, soft: int, hard: int | None = None) -> None:
    ceiling = resource.getrlimit(which)[1]  # an unprivileged process cannot raise its hard limit
    if ceiling != resource.RLIM_INFINITY:
        soft, hard = min(soft, ceiling), min(soft if hard is None else hard, ceiling)
    resource.setrlimit(which, (soft, soft if hard is None else hard))


def _set_limits(limits: Limits) -> None:
    _limit(resource.RLIMIT_AS, limits.memory_mb * 2**20)
    _limit(resource.RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 5)  # SIGXCPU, then SIGKILL
    _limit(resource.RLIMIT_FSIZE, limits.file_mb * 2**20)
    _limit(resource.RLIMIT_CORE, 0)  # a segfault leaves no core file behind


def _usage(paths: list[str]) -> tuple[int, int]:
    """Bytes on disk and entries under ``paths``, symlinks not followed (stops past MAX_ENTRIES)."""
    size, entries, todo = 0, 0, list(paths)
    while todo and entries <= MAX_ENTRIES:
        try:
            with os.scandir(todo.pop()) as it:
                for entry in it:
                    entries += 1
                    size += entry.stat(follow_symlinks=False).st_blocks * 512
                    if entry.is_dir(follow_symlinks=False):
                        todo.append(entry.path)
        except OSError:
            continue
    return size, entries


def _pass_on(chunk: bytes, passed: int) -> int:
    """Write what is left of ``OUTPUT_CAP`` of ``chunk`` to our stderr; the new count."""
    keep = chunk[: max(0, OUTPUT_CAP - passed)]
    if passed + len(chunk) > OUTPUT_CAP >= passed:
        keep += f"\n[sandbox: output past {OUTPUT_CAP} bytes dropped]\n".encode()
    with contextlib.suppress(OSError):
        os.write(2, keep)
    return passed + len(chunk)


def _watch(pid: int, output: int, rw: list[str], limits: Limits) -> None:
    """Until the sandbox ends: read its output (capped), and kill it when its rw folders grow
    past their share."""
    done, passed, checked = os.pidfd_open(pid), 0, time.monotonic()
    while True:
        ready = select.select([done] + ([output] if output >= 0 else []), [], [], 0.2 if rw else None)[0]
        if output in ready:
            chunk = os.read(output, 1 << 16)
            if chunk:
                passed = _pass_on(chunk, passed)
            else:
                os.close(output)
                output = -1
        if done in ready:
            break
        if rw and time.monotonic() - checked >= 0.2:
            checked = time.monotonic()
            size, entries = _usage(rw)
            if size > limits.scratch_mb * 2**20 or entries > MAX_ENTRIES:
                os.kill(pid, signal.SIGKILL)
                print(
                    f"sandbox: stopped, it wrote more than {limits.scratch_mb} MiB or {MAX_ENTRIES} files "
                    f"outside its scratch folder",
                    file=sys.stderr,
                )
    if output >= 0:  # what it wrote before it ended (its PID namespace is gone: the pipe ends here)
        os.set_blocking(output, False)
        with contextlib.suppress(BlockingIOError):
            while chunk := os.read(output, 1 << 16):
                passed = _pass_on(chunk, passed)


def _share(info: int, rw: list[str]) -> None:
    """Once bwrap says which process holds the sandbox's mounts (``--info-fd``), put a link to
    each ``rw`` tmpfs, as that process sees it, where the host folder was (kept beside it)."""
    with os.fdopen(info, "rb") as stream:
        text = b""
        while b"}" not in text and (chunk := stream.read1(4096)):
            text += chunk
    child = json.loads(text.decode())["child-pid"]
    for path in rw:
        os.rename(path, path + ".host")
        os.symlink(f"/proc/{int(child)}/root{path}", path)


def _run_sandboxed(args: argparse.Namespace, limits: Limits, env: dict[str, str]) -> int:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        print("sandbox: bubblewrap (bwrap) is not installed\n" + FIXES, file=sys.stderr)
        return 127
    uid = UID_BASE + os.getpid() if os.geteuid() == 0 else -1
    for path in args.rw:
        os.makedirs(path, exist_ok=True)
    info, info_into = os.pipe() if args.rw else (-1, -1)  # where bwrap says which process holds its mounts
    if args.rw:
        os.set_inheritable(info_into, True)
    told = ["--info-fd", str(info_into)] if args.rw else []
    command = [
        *_bwrap_args(bwrap, args.scratch, args.rw, limits, uid, args.init),
        *told,
        boot.python(),
        "-I",
        "-S",
        "-c",
        INNER,
        str(uid),
        str(limits.processes),
        *args.argv,
    ]
    output, into = os.pipe()  # the sandbox's stdout and stderr: ours to read, never the caller's
    pid = os.fork()
    if pid == 0:
        try:
            ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: bwrap dies with this launcher
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(into, 1)
            os.dup2(into, 2)
            _set_limits(limits)
            os.execve(bwrap, command, env)
        finally:
            os._exit(127)
    os.close(into)
    if args.rw:
        os.close(info_into)
        try:
            _share(info, args.rw)
        except (OSError, ValueError, KeyError) as err:
            print(f"sandbox: its shared folders could not be reached ({err})", file=sys.stderr)
            os.kill(pid, signal.SIGKILL)
    # the caller's descriptors belong to the sandbox now: without our copy, its pipes see EOF when it ends
    os.closerange(3, output)
    os.closerange(output + 1, os.sysconf("SC_OPEN_MAX"))
    _watch(pid, output, args.rw, limits)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    return code if code >= 0 else 128 - code  # killed by signal N: 128 + N, as a shell says


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m autograder.grading.sandboxed.launcher",
        description="Run a command in the grading sandbox (see the module's docstring).",
    )
    parser.add_argument("--scratch", required=True, help="the command's working folder (a tmpfs in the sandbox)")
    parser.add_argument("--rw", action="append", default=[], help="a host folder it may write (repeatable)")
    parser.add_argument("--memory-mb", type=int, default=Limits.memory_mb, help="address space of each process, MiB")
    parser.add_argument("--cpu-seconds", type=int, default=Limits.cpu_seconds, help="CPU time of each process")
    parser.add_argument("--processes", type=int, default=Limits.processes, help="processes and threads in all")
    parser.add_argument("--file-mb", type=int, default=Limits.file_mb, help="largest file it may write, MiB")
    parser.add_argument("--scratch-mb", type=int, default=Limits.scratch_mb, help="scratch and rw folders in all, MiB")
    parser.add_argument("--env", action="append", default=[], metavar="KEY=VALUE", help="an environment variable")
    parser.add_argument("--no-sandbox", action="store_true", help="same limits and environment, no bubblewrap")
    parser.add_argument("--init", action="store_true", help="the command is the sandbox's PID 1 (see above)")
    parser.add_argument("argv", nargs="+", help="the command (after --)")
    args = parser.parse_args(argv)
    args.scratch = os.path.abspath(args.scratch)
    if os.path.isabs(args.argv[0]):  # "/x/../python", or a linked .venv: folders the sandbox lacks
        args.argv[0] = os.path.join(os.path.realpath(os.path.dirname(args.argv[0])), os.path.basename(args.argv[0]))
    args.rw = [os.path.abspath(p) for p in args.rw]
    os.chdir("/")  # we were started in the notebook's folder: nothing of ours depends on it
    limits = Limits(args.memory_mb, args.cpu_seconds, args.processes, args.file_mb, args.scratch_mb)
    env = _environment(args.scratch, args.env)
    if not args.no_sandbox:
        return _run_sandboxed(args, limits, env)
    # no sandbox: the same limits but processes (without a user namespace RLIMIT_NPROC would
    # count every process of the instructor's account), the same environment, in a host folder
    os.makedirs(args.scratch, exist_ok=True)
    os.chdir(args.scratch)
    _set_limits(limits)
    os.execvpe(args.argv[0], args.argv, env)


if __name__ == "__main__":
    sys.exit(main())
