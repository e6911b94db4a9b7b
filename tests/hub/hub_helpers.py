"""The guide's hub commands, read from book/guides/instructor.md, and what runs them.

The hub section of the guide marks each command block as a MyST ``code-block`` with
``:class: hub-names`` (the names the others use), ``hub-root``, ``hub-instructor`` or
``hub-student`` (who runs it) and a ``:name:`` (which step it is). ``blocks()`` reads them in
the guide's order; ``STEPS`` is the order in which the end-to-end test runs them, and a test
checks that the two agree, so that a block added to the guide is a block the test runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "book" / "guides" / "instructor.md"
# Every name the guide's blocks use; the names block sets exactly these (the test, its own values).
NAMES = (
    "COURSE_ROOT",
    "COURSE_ENV",
    "COURSE_REPO",
    "COURSE_INSTRUCTORS",
    "COURSE_STUDENTS",
    "NBGRADER_EXCHANGE",
    "HUB_DIR",
    "INSTRUCTOR",
    "LAB",
)
ROLES = ("hub-root", "hub-instructor", "hub-student")
# The guide's blocks in the order the end-to-end test runs them (the guide's order).
STEPS = (
    "hub-groups",
    "hub-student-account",
    "hub-clone",
    "hub-env",
    "hub-wheel",
    "hub-install",
    "hub-start",
    "hub-formgrader",
    "hub-release",
    "hub-fetch",
    "hub-submit",
    "hub-grade",
    "hub-feedback",
)
# The system's PATH, without any virtual environment: the commands name the shared one themselves.
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

BLOCK = re.compile(r"^```\{code-block\} bash\n((?::[a-z-]+:[^\n]*\n)+)(.*?)^```$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    name: str
    role: str
    code: str


def blocks(text: str | None = None) -> list[Block]:
    """The guide's marked blocks (a class starting with ``hub-``), in order."""
    out = []
    for match in BLOCK.finditer(GUIDE.read_text() if text is None else text):
        options = dict(re.findall(r"^:([a-z-]+):\s*(.*)$", match.group(1), re.M))
        if options.get("class", "").startswith("hub-"):
            out.append(Block(options.get("name", ""), options["class"], match.group(2)))
    return out


def names_block(text: str | None = None) -> dict[str, str]:
    """The names the guide's names block exports, name to example value."""
    (block,) = [b for b in blocks(text) if b.role == "hub-names"]
    return dict(re.findall(r"^export ([A-Z_]+)=(\S+)", block.code, re.M))


def step(name: str) -> Block:
    (block,) = [b for b in blocks() if b.name == name]
    return block


def home(user: str) -> Path:
    import pwd

    return Path(pwd.getpwnam(user).pw_dir)


def command(block: Block, names: dict[str, str], user: str | None = None, **extra: str) -> tuple[list[str], dict]:
    """The command line (and environment) that runs ``block`` as root or as ``user``, in a clean
    environment holding the names, the system's PATH and ``extra`` (STUDENT=..., HUB_BIND_URL=...)."""
    env = {"PATH": SYSTEM_PATH, "LANG": "C.UTF-8", **names, **extra}
    script = ["bash", "-euo", "pipefail", "-c", block.code]
    if user is None:
        return script, {**env, "HOME": "/root", "USER": "root"}
    account = {"HOME": str(home(user)), "USER": user, "LOGNAME": user, "SHELL": "/bin/bash"}
    pairs = [f"{k}={v}" for k, v in {**env, **account}.items()]
    return ["runuser", "-u", user, "--", "env", "-i", *pairs, *script], {"PATH": SYSTEM_PATH}


def run(
    name: str,
    names: dict[str, str],
    user: str | None = None,
    log: Path | None = None,
    timeout: float = 900,
    **extra: str,
) -> str:
    """Run the guide's block ``name`` to its end; fail with its output when it fails."""
    block = step(name)
    assert (user is None) == (block.role == "hub-root"), f"{name} is a {block.role} block"
    args, env = command(block, names, user, **extra)
    cwd = home(user) if user else "/"
    start = time.monotonic()
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    output = done.stdout + done.stderr
    if log is not None:
        with open(log, "a") as out:
            out.write(
                f"===== {name} as {user or 'root'}: exit {done.returncode} after "
                f"{time.monotonic() - start:.0f} s\n{output}\n"
            )
    if done.returncode != 0:
        raise AssertionError(
            f"the guide's block {name}, run as {user or 'root'}, failed "
            f"(exit {done.returncode}):\n{block.code}\n--- output:\n{output[-4000:]}"
        )
    return output


def as_user(user: str, *args: str) -> subprocess.CompletedProcess:
    """``args`` run as ``user`` (for the tests' reads and writes), in their home."""
    return subprocess.run(
        ["runuser", "-u", user, "--", *args],
        cwd=home(user),
        capture_output=True,
        text=True,
        env={"PATH": SYSTEM_PATH, "HOME": str(home(user))},
        timeout=120,
    )


def processes_of(uid: int) -> list[int]:
    """The ids of the processes running as ``uid``."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    out.append(int(entry.name))
            except OSError:
                pass
    return out


def kill_processes_of(uid: int) -> None:
    """SIGKILL, by process id, every process of the per-run account ``uid`` (nothing else runs as it)."""
    import signal

    for pid in processes_of(uid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
