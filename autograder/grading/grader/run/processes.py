"""The processes a grading process started, found and ended from outside it (Linux /proc).

Killing a sandbox's launcher with its process group is not enough to end the sandbox. The
independent check's child is its sandbox's PID 1 (``--init``) and runs under a uid of its own
(``sandboxed.launcher``). No death signal reaches it, since bwrap, which would send it, may not
signal that uid. Until the child next reads its pipe, it outlives its launcher; at its start it
imports torch, which takes seconds. So the grader kills every process below the one it ends,
found before the first is killed: a killed process's children move to another parent.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path


def _parents() -> dict[int, int]:
    """pid -> parent's pid, for every process (empty without /proc)."""
    out: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            out[int(stat.parent.name)] = _parent(stat.read_text())
    return out


def _parent(stat: str) -> int:
    return int(stat.rsplit(")", 1)[1].split()[1])


def descendants(pid: int, parents: dict[int, int] | None = None) -> list[int]:
    """Every process below ``pid``, children before grandchildren."""
    parents = _parents() if parents is None else parents
    below: list[int] = []
    level = {pid}
    while level:
        level = {child for child, parent in parents.items() if parent in level and child not in below}
        below += sorted(level)
    return below


def _pidfd(pid: int, parent: int) -> tuple[int, bool] | None:
    """A pidfd of ``pid``, and whether it leads its process group, if its parent is still
    ``parent``; else None (it ended, or its number was taken by another process since)."""
    try:
        handle = os.pidfd_open(pid)
    except OSError:
        return None
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        if int(fields[1]) == parent:
            return handle, int(fields[2]) == pid
    except (OSError, ValueError, IndexError):
        pass
    os.close(handle)
    return None


def kill_tree(pid: int, *, itself: bool = True) -> None:
    """SIGKILL every process below ``pid``, and ``pid`` unless ``itself`` is False, with the
    process group each leads (kernels and launchers are started in sessions of their own). Each
    process below is signalled through a pidfd opened while its parent was still the one found,
    so that a process that took the number of one that ended meanwhile is never signalled."""
    parents = _parents()
    found = []
    for below in descendants(pid, parents):
        if (opened := _pidfd(below, parents[below])) is not None:
            found.append((below, opened))
    if itself:
        for send in (os.killpg, os.kill):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                send(pid, signal.SIGKILL)
    for below, (handle, leads) in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if leads:
                os.killpg(below, signal.SIGKILL)
            signal.pidfd_send_signal(handle, signal.SIGKILL)
        os.close(handle)
