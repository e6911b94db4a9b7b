"""Ask for a sandbox: the command lines that run student code in bubblewrap, and a probe that
it works here (ARCHITECTURE.md, "Trust model of grading").

``wrap(argv, scratch=..., limits=...)`` returns the command line that runs ``argv``
sandboxed: ``python -m autograder.grading.sandboxed.launcher OPTIONS -- ARGV``. What that
launcher mounts, limits and passes on is described in its own module. ``Tail`` keeps the end
of what a sandboxed process printed, read from a pipe the caller owns.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from autograder.grading.protocol import boot
from autograder.grading.protocol.confinement import FIXES, OUTPUT_CAP, Limits

__all__ = ["OUTPUT_CAP", "Limits", "Unavailable", "probe", "wrap"]

LAUNCHER = "autograder.grading.sandboxed.launcher"


class Unavailable(RuntimeError):
    """bubblewrap is missing or cannot create its namespaces here (the message says how to fix it)."""


def wrap(
    argv: Sequence[str],
    *,
    scratch: Path,
    rw: Sequence[Path] = (),
    limits: Limits,
    env: Mapping[str, str] | None = None,
    enabled: bool = True,
    package: str | Path | None = None,
    init: bool = False,
) -> list[str]:
    """The command line that runs ``argv`` in the sandbox, in ``scratch``, with ``rw`` writable;
    ``enabled=False`` keeps the environment and limits but not the sandbox (--no-sandbox). The
    launcher imports (and mounts) the ``autograder`` of ``package`` (default: this process's).
    ``init``: with the sandbox, ``argv`` is its PID 1, to which a signal from inside comes only where it
    set a handler for it (``sandboxed.child`` sets none while its forks run student code)."""
    out = [
        *boot.command(LAUNCHER, package=package),
        "--scratch",
        str(scratch),
        "--memory-mb",
        str(limits.memory_mb),
        "--cpu-seconds",
        str(limits.cpu_seconds),
        "--processes",
        str(limits.processes),
        "--file-mb",
        str(limits.file_mb),
        "--scratch-mb",
        str(limits.scratch_mb),
    ]
    for path in rw:
        out += ["--rw", str(path)]
    for key, value in (env or {}).items():
        out += ["--env", f"{key}={value}"]
    if not enabled:
        out.append("--no-sandbox")
    if init:
        out.append("--init")
    return [*out, "--", *argv]


HANDSHAKE = """
import os, sys, time
mark = os.path.join(sys.argv[1], "mark")
open(mark, "w").write("written in the sandbox")
print("mark written", flush=True)
end = time.monotonic() + float(sys.argv[2])
while os.path.exists(mark) and time.monotonic() < end:
    time.sleep(0.05)
"""
# for the sandbox to start and write its mark: a loaded 2-core machine took 2-19 s, and a working
# machine must not be refused for being slow; a broken one is named as soon as the sandbox answers
HANDSHAKE_SECONDS = 120.0


def _answer(process: subprocess.Popen, deadline: float) -> bytes | None:
    """What the sandbox printed, up to the line saying it wrote its mark or its end; None when
    it did neither by ``deadline`` (no answer yet, which says nothing of the shared folder)."""
    assert process.stderr is not None
    fd, said = process.stderr.fileno(), b""
    while b"mark written" not in said:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return said
        said += chunk
    return said


def _shared_folder_problem(package: Path | None) -> str | None:
    """None when the grader reads, at the same path and while it runs, what a sandbox writes in
    its shared folder (a size-bounded tmpfs there, reached here through ``/proc/PID/root``);
    else why not: the kernel's IPC folder could then not be bounded at write time."""
    with tempfile.TemporaryDirectory(prefix="autograder-probe-") as tmp:
        shared = Path(tmp) / "shared"
        shared.mkdir()
        argv = wrap(
            [boot.python(), "-I", "-c", HANDSHAKE, str(shared), str(HANDSHAKE_SECONDS)],
            scratch=Path(tmp) / "scratch",
            rw=[shared],
            limits=Limits(),
            package=package,
        )
        said: bytes | None = None
        with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd="/") as process:
            try:
                said = _answer(process, time.monotonic() + HANDSHAKE_SECONDS)
                seen = ""
                if said is not None and b"mark written" in said:
                    # the launcher passes the sandbox's output on only once it has linked the shared
                    # folder: the mark is there now, and a read that fails will not succeed later
                    with contextlib.suppress(OSError):
                        seen = (shared / "mark").read_text()
                        (shared / "mark").unlink()
                if seen == "written in the sandbox":
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        process.wait(timeout=HANDSHAKE_SECONDS)  # it ends once it sees its mark gone
                    return None
            finally:
                if process.poll() is None:
                    process.kill()
            assert process.stderr is not None
            stderr = ((said or b"") + process.stderr.read()).decode(errors="replace").replace("mark written", "")
    stderr = stderr.strip()[-2000:] or "(nothing on its stderr)"
    if said is None:
        return (
            f"the sandbox did not answer within {HANDSHAKE_SECONDS:g} s: it was started, but wrote nothing "
            f"in its shared folder in that time (a machine too loaded to grade on?):\n    {stderr}"
        )
    if b"mark written" not in said:
        return f"the sandbox ended before it wrote in its shared folder:\n    {stderr}"
    return (
        "the sandbox starts, but its shared folder (a size-bounded tmpfs that holds the kernel's "
        "sockets, reached by the grader through /proc/PID/root) cannot be read from here, so what "
        f"a submission writes there could not be bounded at write time:\n    {stderr}\n"
        "Grading needs /proc mounted and the sandbox's processes readable by your user "
        "(ptrace rules such as kernel.yama.ptrace_scope=3 forbid it)."
    )


def probe(package: Path | None = None) -> str | None:
    """None when the sandbox works on this machine and runs this Python with ``package``'s
    ``autograder`` (default: this process's), else the error and how to fix it."""
    if shutil.which("bwrap") is None:
        return "bubblewrap (bwrap) is not installed, and grading runs every submission in its sandbox.\n" + FIXES
    with tempfile.TemporaryDirectory(prefix="autograder-probe-") as tmp:
        try:
            bare = subprocess.run(
                wrap(["true"], scratch=Path(tmp) / "scratch", limits=Limits(), package=package),
                capture_output=True,
                text=True,
                timeout=60,
                cwd="/",
            )
            if bare.returncode == 0:  # namespaces work: now our Python and package, as a kernel runs them
                ours = wrap(
                    boot.command(LAUNCHER, "--help", package=package),
                    scratch=Path(tmp) / "scratch",
                    limits=Limits(),
                    package=package,
                )
                run = subprocess.run(ours, capture_output=True, text=True, timeout=60, cwd="/")
        except subprocess.TimeoutExpired:
            return "the bubblewrap sandbox did not start within 60 s.\n" + FIXES
    if bare.returncode != 0:
        said = bare.stderr.strip() or f"exit status {bare.returncode}"
        return f"the bubblewrap sandbox does not work here:\n    {said}\n{FIXES}"
    if run.returncode == 0:
        return _shared_folder_problem(package)
    said = run.stderr.strip()[-2000:] or f"exit status {run.returncode}"
    return (
        f"the sandbox starts, but this Python ({boot.python()}) or the autograder package "
        f"({package or boot.running()}) does not run inside it:\n    {said}\n"
        "Each folder they need must be a real folder or a link to one that the sandbox can mount "
        "(a virtual environment, the Python it was made from, the package)."
    )
