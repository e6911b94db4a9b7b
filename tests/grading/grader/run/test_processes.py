"""Does ending a grading process end everything it started, and nothing else?"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from autograder.grading.grader.run import processes

# a process that starts a child in a session of its own, which starts another, then all sleep:
# each prints its depth and pid
CHAIN = """
import os, subprocess, sys, time
depth = int(sys.argv[1])
if depth:
    subprocess.Popen([sys.executable, "-c", sys.argv[2], str(depth - 1), sys.argv[2]], start_new_session=True)
print(depth, os.getpid(), flush=True)
time.sleep(600)
"""


def _chain(depth: int) -> tuple[subprocess.Popen, list[int]]:
    """The top process of a chain ``depth`` deep below it, and the pids of all, top first."""
    top = subprocess.Popen([sys.executable, "-c", CHAIN, str(depth), CHAIN], stdout=subprocess.PIPE, text=True)
    assert top.stdout is not None
    lines = sorted((top.stdout.readline().split() for _ in range(depth + 1)), key=lambda line: -int(line[0]))
    return top, [int(pid) for _, pid in lines]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _gone(pids: list[int], within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(_alive(p) for p in pids)


def test_descendants_are_found_through_sessions() -> None:
    """Are a child and a grandchild, each in a session of its own, found, children first?"""
    top, pids = _chain(2)
    try:
        assert processes.descendants(top.pid) == pids[1:]
    finally:
        processes.kill_tree(top.pid)
        top.wait()


def test_a_tree_is_killed_to_its_last_process() -> None:
    """Does killing the top end a grandchild that is neither in its group nor, once its parent
    is killed, below it any longer?"""
    top, pids = _chain(2)
    processes.kill_tree(top.pid)
    top.wait()
    assert _gone(pids[1:]), [p for p in pids if _alive(p)]


def test_without_itself_the_top_lives() -> None:
    """With ``itself=False`` (a worker ending what it started), does the top live on, alone?"""
    top, pids = _chain(1)
    try:
        processes.kill_tree(top.pid, itself=False)
        assert _gone(pids[1:])
        assert top.poll() is None
    finally:
        top.kill()
        top.wait()


def test_a_process_that_is_no_longer_below_is_never_signalled(monkeypatch: pytest.MonkeyPatch) -> None:
    """When a number found below the top belongs by now to a process with another parent (here
    the snapshot says so of an unrelated sleeper), is that process left alone?"""
    top, pids = _chain(0)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    real = processes._parents

    def stale() -> dict[int, int]:
        return {**real(), stranger.pid: top.pid}

    monkeypatch.setattr(processes, "_parents", stale)
    try:
        processes.kill_tree(top.pid)
        top.wait(timeout=10)
        time.sleep(0.2)
        assert stranger.poll() is None
    finally:
        stranger.kill()
        stranger.wait()


def _with(token: str) -> list[int]:
    """The live processes whose command line holds ``token``."""
    return [
        int(p.parent.name)
        for p in Path("/proc").glob("[0-9]*/cmdline")
        if token.encode() in p.read_bytes() and _alive(int(p.parent.name))
    ]


def test_a_tree_that_keeps_starting_processes_is_killed_to_its_last() -> None:
    """When the top keeps starting processes in sessions of their own (as a worker starts
    kernels and sandboxes), is none started between the reading of /proc and the killing?"""
    token = f"forking-{time.monotonic_ns()}"
    forker = textwrap.dedent("""
        import os, time
        while True:
            if os.fork() == 0:
                os.setsid()
                time.sleep(60)
                os._exit(0)
            time.sleep(0.001)
    """)
    for _ in range(3):
        top = subprocess.Popen([sys.executable, "-c", forker, token])
        time.sleep(0.3)
        processes.kill_tree(top.pid)
        top.wait()
        deadline = time.monotonic() + 5
        while _with(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = _with(token)
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert left == []


def test_the_members_of_each_group_are_killed_where_they_moved() -> None:
    """Is a process that left the tree (its parent ended) but stayed in the group of the top, or
    of a process below that leads its own, killed too?"""
    token = f"moved-{time.monotonic_ns()}"
    # a process whose child starts a grandchild and ends: the grandchild, in their group, moves to init
    orphaning = textwrap.dedent(f"""
        import os, time
        if os.fork() == 0:
            if os.fork() == 0:
                time.sleep(60)
            os._exit(0)
        time.sleep(60)  # {token}
    """)
    below = textwrap.dedent(f"""
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c", {orphaning!r}], start_new_session=True)
    """)
    top = subprocess.Popen([sys.executable, "-c", below + orphaning], start_new_session=True)
    deadline = time.monotonic() + 10
    while len(_with(token)) < 4:  # the top's and its child's sleepers, and their two orphans
        assert time.monotonic() < deadline, _with(token)
        time.sleep(0.05)
    orphans = [pid for pid in _with(token) if pid not in [top.pid, *processes.descendants(top.pid)]]
    assert len(orphans) == 2
    try:
        processes.kill_tree(top.pid)
        top.wait()
        assert _gone(orphans), [p for p in orphans if _alive(p)]
    finally:
        for pid in _with(token):
            os.kill(pid, signal.SIGKILL)


def test_a_process_that_leaves_its_group_meanwhile_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    """When a process below led its group as it was found but has left it when the group is
    signalled, is the process itself still killed?"""
    leaver = (
        "import os, signal, time\nos.setpgid(0, 0)\n"
        "signal.signal(signal.SIGUSR1, lambda *a: os.setpgid(0, os.getsid(0)))\n"
        "print(os.getpid(), flush=True)\ntime.sleep(60)\n"
    )
    top = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', {leaver!r}])\ntime.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert top.stdout is not None
    child = int(top.stdout.readline())
    found = processes._pidfd

    def then_leaves(pid: int, parent: int) -> tuple[int, bool] | None:
        out = found(pid, parent)
        os.kill(child, signal.SIGUSR1)
        time.sleep(0.3)
        return out

    monkeypatch.setattr(processes, "_pidfd", then_leaves)
    try:
        processes.kill_tree(top.pid, itself=False)
        assert _gone([child])
    finally:
        top.kill()
        top.wait()
