"""Where a candidate runs: in this process, or in the independent check's sandboxed child.

During grading the independent check hands a check a handle to the student's answer, which
lives in a sandboxed child process (``autograder.grading.protocol.remote``). The comparisons describe
such a handle without calling it, ``core.beside`` sends a whole scenario there, and the
sentinels block their targets over there: all three ask ``is_remote``.
"""

from __future__ import annotations

import sys
from typing import Any


def is_remote(candidate: Any) -> bool:
    """A handle to the student's answer in the independent check's sandboxed child
    (autograder.grading.protocol.remote), looked up without importing the grading package."""
    remote = sys.modules.get("autograder.grading.protocol.remote")
    return remote is not None and isinstance(candidate, (remote.RemoteObject, remote.RemoteModule))
