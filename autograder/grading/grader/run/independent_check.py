"""The independent check: every graded exercise checked again by a process that never ran
student code.

The grader (this process) takes each graded test cell from the *source* notebook, hidden
tests included, and runs it here with the check functions of its own, pristine
``autograder.checks``; the names the test cell checks (``softmax``, ``MultiHeadAttention``)
are handles to what the submission's code cells defined in a sandboxed child
(``autograder.grading.sandboxed.child``). The child only answers calls: tensors and plain values
cross, live objects never do. So a submission that patches torch, plants a module, fakes
``autograder.checks`` or rewrites its test cells changes only its own process, where
nothing is decided.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import io
import os
import signal
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.grading.grader.lab_cells import answer_cells, solution_cells, test_cells
from autograder.grading.grader.run.tail import Tail
from autograder.grading.protocol import boot, wire
from autograder.grading.protocol.remote import Connection

STARTUP_TIMEOUT = 180.0  # seconds a child may take to start (torch's import on a busy machine)


class GraderError(RuntimeError):
    """The grader failed, not the submission: the child died before its first reply (before
    any student code ran). The message holds its stderr; the summary reports it as such."""


@dataclass
class Verdict:
    """The independent check's result for one graded exercise (its test cell)."""

    passed: bool
    message: str = ""
    error: BaseException | None = field(default=None, repr=False, compare=False)  # as raised here, for the feedback
    exercise: str = ""  # the test cell's grade id
    points: float = 0.0  # what the exercise scores, once the gradebook is settled
    max_points: float = 0.0
    mistake: str = "unnamed"  # the id of the mistake the failing check named (autograder/checks/mistakes.py)
    alone: bool | None = None  # error carried forward: passed with the earlier wrong answers made right (None: not run)
    given: list[str] = field(default_factory=list)  # the names made right for that run

    def to_dict(self) -> dict[str, object]:
        """The verdict as plain JSON values (the raised exception stays here)."""
        return {
            "exercise": self.exercise,
            "passed": self.passed,
            "points": self.points,
            "max_points": self.max_points,
            "message": self.message,
            "mistake": self.mistake,
            "alone": self.alone,
            "given": self.given,
        }


def mistake_of(error: BaseException) -> str:
    """The id of the mistake a check raised here named (set by this process's own checks,
    never read from the child), else ``"unnamed"``."""
    from autograder.checks.failures import CheckFailed

    named = getattr(error, "mistake_id", None) if isinstance(error, CheckFailed) else None
    return named if isinstance(named, str) and named else "unnamed"


def candidate_names(code: str) -> list[str]:
    """The names a test cell hands to its checks: ``check_x(NAME, ...)``."""
    names = []
    for node in ast.walk(ast.parse(code)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id.startswith("check_")
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id not in names
        ):
            names.append(node.args[0].id)
    return names


def _namespace() -> dict[str, Any]:
    """Globals for a test cell: real builtins, except that ``import sys`` gives a view whose
    ``modules`` is a copy (the hidden tests' re-import guards the kernel; here our modules
    are pristine and stay loaded)."""
    view = types.ModuleType("sys")
    view.__dict__.update(vars(sys))
    view.modules = dict(sys.modules)  # type: ignore[attr-defined]
    real_import = builtins.__import__

    def guarded_import(name: str, *args: Any, **kwargs: Any) -> Any:
        return view if name == "sys" else real_import(name, *args, **kwargs)

    return {"__builtins__": {**vars(builtins), "__import__": guarded_import}, "__name__": "__grader__"}


class SandboxedChild:
    """The sandboxed child process and the connection to it. It inherits the two pipes of the
    conversation and a pipe for its stderr (read here, capped), no other descriptor of ours."""

    def __init__(self, wrap: Callable[[list[str]], list[str]], env: dict[str, str] | None, timeout: float) -> None:
        to_child, from_grader = os.pipe()
        from_child, to_grader = os.pipe()
        argv = wrap(boot.command("autograder.grading.sandboxed.child", str(to_child), str(to_grader)))
        self.proc = subprocess.Popen(
            argv,
            pass_fds=(to_child, to_grader),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
            cwd="/",
        )
        os.close(to_child)
        os.close(to_grader)
        assert self.proc.stderr is not None
        self.stderr = Tail(os.dup(self.proc.stderr.fileno()))
        self.proc.stderr.close()
        self.connection = Connection(from_child, from_grader, trusting=False, timeout=timeout)

    def hello(self) -> None:
        """Wait for the child's first reply, sent before any student code runs; a child that
        dies or stays silent before it is the grader's failure (GraderError, with its stderr)."""
        timeout, self.connection.timeout = self.connection.timeout, STARTUP_TIMEOUT
        try:
            if self.request({"op": "hello"}) != "ready":
                raise wire.WireError("an unexpected first reply")
            self.connection.timeout = timeout
        except (wire.WireError, TimeoutError, OSError) as err:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            said = self.stderr.text(wait=5.0)[-3000:] or "(nothing on its stderr)"
            raise GraderError(
                f"the independent check's sandboxed child ended before its first reply "
                f"({err}); this is the grader's fault, not the submission's. "
                f"Its stderr:\n{said}"
            ) from err

    def request(self, document: dict) -> Any:
        reply, blobs = self.connection.request(document, {})
        return self.connection._reply_value(reply, blobs)

    def close(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for fd in (self.connection.rfd, self.connection.wfd):
            with contextlib.suppress(OSError):
                os.close(fd)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The checks print "check_x passed."; the grader's output stays clean."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def _check(child: SandboxedChild, grade_id: str, code: str) -> Verdict:
    """Run test cell ``code`` here, its names handles to the child's objects."""
    namespace = _namespace()
    for name in candidate_names(code):
        with contextlib.suppress(NameError):
            namespace[name] = child.request({"op": "global", "name": name})
    try:
        with _quiet():
            exec(compile(code, f"<{grade_id}>", "exec"), namespace)  # noqa: S102 - the course's own test
        verdict = Verdict(True, exercise=grade_id)
    except (wire.WireError, TimeoutError):
        raise
    except BaseException as err:  # noqa: BLE001 - a failed check, whatever it raised
        verdict = Verdict(False, f"{type(err).__name__}: {err}", err, exercise=grade_id, mistake=mistake_of(err))
    if child.connection.broken:
        raise wire.PeerGone(child.connection.broken)
    return verdict


def _carry_forward(
    child: SandboxedChild, source: Path, cells: dict[str, str], verdicts: dict[str, Verdict], cell_timeout: float
) -> None:
    """Error carried forward: each exercise failed as written is checked again with the
    answers of the earlier exercises failed as written made the lab's solutions (in the child),
    once every exercise has been checked as written, so nothing of that run reaches those."""
    solutions = solution_cells(source)
    wrong: list[str] = []
    for grade_id, code in cells.items():
        verdict = verdicts[grade_id]
        if not verdict.passed and wrong:
            given = child.request(
                {"op": "bind", "cells": [c for g in wrong for c in solutions.get(g, [])], "limit": cell_timeout}
            )
            try:
                verdict.alone = _check(child, grade_id, code).passed
                verdict.given = [str(name) for name in given or []][:20]
            finally:
                child.request({"op": "unbind"})
        if not verdict.passed:
            wrong.append(grade_id)


def recheck(
    source: Path,
    submission: Path,
    *,
    wrap: Callable[[list[str]], list[str]] = lambda argv: argv,
    env: dict[str, str] | None = None,
    cell_timeout: float = 30.0,
    call_timeout: float = 120.0,
    deadline: float | None = None,
    carry_forward: bool = False,
) -> dict[str, Verdict]:
    """Run every graded test cell of ``source`` here against the answers of ``submission``
    (an autograded notebook), its code run in a child started through ``wrap`` (the
    sandbox). Returns grade_id -> Verdict; a child that dies or stops answering fails the
    exercises not yet checked. ``carry_forward``: then each exercise failed as written is
    checked again with the earlier wrong answers made right (``Verdict.alone``)."""
    cells = test_cells(source)
    verdicts: dict[str, Verdict] = {}
    child = SandboxedChild(wrap, env, call_timeout)
    try:
        child.hello()
    except GraderError:
        child.close()
        raise
    try:
        child.request({"op": "load", "cells": answer_cells(submission), "limit": cell_timeout})
        for grade_id, code in cells.items():
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("the independent check ran out of time")
            verdicts[grade_id] = _check(child, grade_id, code)
        if carry_forward:
            _carry_forward(child, source, cells, verdicts, cell_timeout)
    except (wire.WireError, TimeoutError, OSError) as err:
        reason = (
            "the submission's process stopped answering (it ran too long)"
            if isinstance(err, TimeoutError) or "TimeoutError" in str(err)
            else f"the submission's process broke off ({err})"
        )
        for grade_id in cells:
            verdicts.setdefault(grade_id, Verdict(False, reason, exercise=grade_id))
    finally:
        child.close()
    return verdicts
