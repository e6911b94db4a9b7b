"""Every test of a check runs twice: with the candidate here, as in a student's notebook, and
with the candidate across the independent check's boundary (autograder.grading.remote), as
when an instructor grades. So the catalogues of right and wrong answers also prove that the
boundary rejects no valid answer and that each mistake is named the same way there."""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from autograder.grading.child import Child
from autograder.grading.remote import Connection


def across(check: Callable[..., Any]) -> Callable[..., Any]:
    """``check`` called with a handle to its candidate, which a Child serves from a thread
    over two pipes: the same protocol as the sandboxed child, in one process."""

    @functools.wraps(check)
    def wrapper(candidate: Any, *args: Any, **kwargs: Any) -> Any:
        __tracebackhide__ = True
        to_child, from_grader = os.pipe()
        from_child, to_grader = os.pipe()
        child = Child(to_child, to_grader)
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


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The tests of the checks run on both sides; the core's own tests (its helpers, not
    checks) run once."""
    if not metafunc.module.__name__.endswith("test_core"):
        metafunc.parametrize("candidate_side", ["here", "across"], indirect=True)


@pytest.fixture(autouse=True)
def candidate_side(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Where the candidate runs: "here" (in the check's process) or "across" the boundary."""
    side = getattr(request, "param", "here")
    if side == "across":
        for name, value in vars(request.module).items():
            if name.startswith("check_") and callable(value):
                monkeypatch.setattr(request.module, name, across(value))
    yield side
