"""What the grader spends for a sandboxed child, bounded whatever the child sends: the parameters
it keeps over a connection, and the memory and time of a callback (the child calling an object
the grader exported, which runs in the grader's unconfined process on inputs the child chose).
A breach fails that call, and so that submission's exercise; the grader goes on."""

from __future__ import annotations

import contextlib
import resource
import signal
import threading
from collections.abc import Iterator
from typing import Any

MAX_PARAMS = 256 * 2**20  # bytes of the child's parameters the grader keeps over a connection
CALLBACK_MEMORY = 512 * 2**20  # bytes a callback may allocate in the grader beyond what it held
CALLBACK_SECONDS = 20.0  # wall time of one callback in the grader


class CallbackLimit(Exception):
    """A callback that would take more of the grader's time than ``CALLBACK_SECONDS``."""


def _data_bytes() -> int:
    """The process's private writable memory now (``VmData``, what RLIMIT_DATA counts)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmData in /proc/self/status")


@contextlib.contextmanager
def bounded() -> Iterator[None]:
    """Run a callback with at most ``CALLBACK_MEMORY`` more memory (an allocation past it fails
    with an error) and, in the main thread, ``CALLBACK_SECONDS`` of wall time."""
    soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
    try:
        ceiling = _data_bytes() + CALLBACK_MEMORY
    except OSError:  # not Linux: the time limit alone
        ceiling = None
    if ceiling is not None and hard != resource.RLIM_INFINITY:
        ceiling = min(ceiling, hard)
    timed = threading.current_thread() is threading.main_thread()
    if timed:

        def expired(signum: int, frame: Any) -> None:
            raise CallbackLimit(f"a call of the grader's object took over {CALLBACK_SECONDS:g} s")

        before = signal.signal(signal.SIGALRM, expired)
        outer, _ = signal.setitimer(signal.ITIMER_REAL, CALLBACK_SECONDS)  # a callback inside a callback
    if ceiling is not None and (soft == resource.RLIM_INFINITY or ceiling < soft):
        resource.setrlimit(resource.RLIMIT_DATA, (ceiling, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
        if timed:
            signal.setitimer(signal.ITIMER_REAL, outer)
            signal.signal(signal.SIGALRM, before)
