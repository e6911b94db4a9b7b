"""The processes a grading process started, found and ended from outside it (Linux /proc).

Killing a sandbox's launcher with its process group is not enough to end the sandbox. The
independent check's child is its sandbox's PID 1 (``--init``), and as root it runs under a uid
of its own (``sandboxed.launcher``): changing to that uid clears the death signal bwrap set for
it, and bwrap, which would send it, may not signal that uid anyway. So the child outlives its
launcher until it reads the end of its request pipe, and at its start it spends seconds
importing torch before it first reads. The grader therefore kills every process below the one
it ends: it stops them first, so that none starts another meanwhile, and finds them all before
the first is killed, since a killed process's children move to another parent.
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
            out[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
    return out


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


def _send(handle: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        signal.pidfd_send_signal(handle, signum)


def kill_tree(pid: int, *, itself: bool = True) -> None:
    """SIGKILL every process below ``pid``, and ``pid`` itself unless ``itself`` is False, with
    the process group each leads (kernels and launchers are started in sessions of their own).
    ``pid`` must not have been waited for yet (its number is still its own).

    Each process is reached through a pidfd, opened while its parent was still the one found:
    a process that took the number of one that ended meanwhile is never signalled. Each is
    stopped as soon as it is found, and /proc is read again until no new one appears, so that
    none is started between the reading and the killing."""
    held: dict[int, tuple[int, bool]] = {}
    if itself:
        with contextlib.suppress(OSError):
            held[pid] = (os.pidfd_open(pid), True)  # killpg below: nothing if it leads no group
            _send(held[pid][0], signal.SIGSTOP)
    while True:
        parents = _parents()
        found = {}
        for below in descendants(pid, parents):
            if below not in held and (opened := _pidfd(below, parents[below])) is not None:
                found[below] = opened
        if not found:
            break
        for handle, _ in found.values():
            _send(handle, signal.SIGSTOP)
        held.update(found)
    for below, (handle, leads) in held.items():
        if leads:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(below, signal.SIGKILL)
        _send(handle, signal.SIGKILL)
        os.close(handle)
