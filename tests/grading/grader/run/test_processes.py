"""Does ending a grading process end everything it started, and nothing else?"""

from __future__ import annotations

import subprocess
import sys
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
