"""Where a candidate runs: in this process, or in the independent check's sandboxed child.

During grading the independent check hands a check a handle to the student's answer, which
lives in a sandboxed child process (``autograder.grading.remote``). The comparisons describe
such a handle without calling it, the sentinels block their targets over there, and a check
that needs more than calls sends a whole scenario there (``beside``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def is_remote(candidate: Any) -> bool:
    """A handle to the student's answer in the independent check's sandboxed child
    (autograder.grading.remote), looked up without importing the grading package."""
    remote = sys.modules.get("autograder.grading.remote")
    return remote is not None and isinstance(candidate, (remote.RemoteObject, remote.RemoteModule))


def beside(candidate: Any, scenario: Callable[..., Any], *args: Any) -> Any:
    """``scenario(candidate, *args)``, run where the candidate lives: here, or in the
    sandboxed child of the independent check when the candidate is a handle to it. For a
    check that needs more than calls (a training step mutating a model and an optimizer):
    the scenario, a module-level function of the check's module, builds what it needs from
    the plain ``args`` and returns plain results."""
    __tracebackhide__ = True
    if is_remote(candidate):
        return candidate.__remote_scenario__(scenario, *args)
    return scenario(candidate, *args)
