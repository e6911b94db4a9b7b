"""A check called with a handle to its candidate across the independent check's boundary, in one
process: the conftest runs every test of the checks this way too, and the write-back test uses it."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable
from typing import Any

from autograder.grading.protocol.remote import Connection
from autograder.grading.sandboxed.child import ChildServer


def across(check: Callable[..., Any]) -> Callable[..., Any]:
    """``check`` called with a handle to its candidate, which a ChildServer serves from a thread
    over two pipes: the same protocol as the sandboxed child, in one process."""

    @functools.wraps(check)
    def wrapper(candidate: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        to_child, from_grader = os.pipe()
        from_child, to_grader = os.pipe()
        child = ChildServer(to_child, to_grader)
        thread = threading.Thread(target=child.run, daemon=True)
        thread.start()
        grader = Connection(from_child, from_grader, trusting=False, timeout=120)
        handle = grader.decode(child.export(candidate), {})
        try:
            return check(handle, *args, **kwargs)
        finally:
            os.close(from_grader)
            thread.join(timeout=30)
            for fd in (from_child, to_child, to_grader):
                os.close(fd)

    return wrapper
