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
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from autograder.grading.grader.job import Verdict
from autograder.grading.grader.lab_cells import answer_cells, answers_before_tests, solution_cells, test_cells
from autograder.grading.grader.run import processes
from autograder.grading.grader.run.tail import Tail
from autograder.grading.protocol import boot, wire
from autograder.grading.protocol.remote import Connection

STARTUP_TIMEOUT = 180.0  # seconds a child may take to start (torch's import on a busy machine)


class GraderError(RuntimeError):
    """The grader failed, not the submission: the child died before its first reply (before
    any student code ran). The message holds its stderr; the summary reports it as such."""


def mistake_of(error: BaseException) -> str:
    """The id of the mistake a check raised here named (set by this process's own checks,
    never read from the child), else ``"unnamed"``."""
    from autograder.checks.kit.failures import CheckFailed

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

    def __init__(
        self, wrap: Callable[[list[str]], list[str]], env: dict[str, str] | None, timeout: float, *roles: str
    ) -> None:
        to_child, from_grader = os.pipe()
        from_child, to_grader = os.pipe()
        argv = wrap(boot.command("autograder.grading.sandboxed.child", str(to_child), str(to_grader), *roles))
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
        self.closed = False
        self.waited = 0.0  # seconds hello() waited for the first reply (the child's start, or what was left of it)

    def hello(self) -> None:
        """Wait for the child's first reply, sent before any student code runs; a child that
        dies or stays silent before it is the grader's failure (GraderError, with its stderr)."""
        timeout, self.connection.timeout = self.connection.timeout, STARTUP_TIMEOUT
        start = time.perf_counter()
        try:
            if self.request({"op": "hello"}) != "ready":
                raise wire.WireError("an unexpected first reply")
            self.connection.timeout = timeout
            self.waited = time.perf_counter() - start
        except (wire.WireError, TimeoutError, OSError) as err:
            processes.kill_tree(self.proc.pid)
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
        if self.closed:  # its descriptors' numbers may be another's by now
            return
        self.closed = True
        processes.kill_tree(self.proc.pid)  # the launcher, and the child, which may be still loading
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
            exec(compile(code, f"<{grade_id}>", "exec"), namespace)  # the course's own test
        verdict = Verdict(True, exercise=grade_id)
    except (wire.WireError, TimeoutError):
        raise
    except BaseException as err:  # a failed check, whatever it raised
        verdict = Verdict(False, f"{type(err).__name__}: {err}", err, exercise=grade_id, mistake=mistake_of(err))
    if child.connection.broken:
        raise wire.PeerGone(child.connection.broken)
    return verdict


class _Zygote:
    """A sandboxed process where no student code ran: each carried-forward check runs in a fork
    of it, so every one starts from the submission as loaded, never from what a call before it
    left. It is the check child itself once the fork where the answers as written were checked
    has ended (``adopt``), else a child launched for it. A fork that breaks the conversation
    takes it down, and the next check launches another. What answers for it is whatever answers
    on its pipe: a fork told to exit can instead reply "ended" and "warm" itself and answer the
    carried-forward checks, as a carried-forward fork can; it earns no more than right answers
    would."""

    def __init__(self, launch: Callable[[], SandboxedChild]) -> None:
        self.launch_child, self.ready = launch, False
        self.child: SandboxedChild | None = None

    def launch(self) -> None:
        if self.child is None:
            self.child, self.ready = self.launch_child(), False

    def adopt(self, child: SandboxedChild) -> bool:
        """End the fork of ``child`` where the answers as written were checked and make its parent,
        the child (warm since its start), this zygote. False (``child`` closed; a child is launched
        when a check needs one) when the replies to "exit" and "warm" are not a clean parent's."""
        try:
            if child.request({"op": "exit"}) == "ended" and child.request({"op": "warm"}) == "warm":
                self.child, self.ready = child, True
                return True
        except Exception:  # whatever the fork did: this child is closed, and the checks get one launched for them
            pass
        child.close()
        return False

    def check(
        self, cells: list[str], given: list[str], grade_id: str, code: str, limit: float, *, mine: bool
    ) -> Verdict:
        """Test cell ``code`` in a fork that ran ``cells``, the earlier wrong answers bound
        (``mine``: to the student's own results, else to the solution's)."""
        self.launch()
        child = self.child
        assert child is not None
        if not self.ready:
            try:
                child.hello()
            except GraderError:
                self.close()
                raise
            self.ready = True
        try:
            if child.request({"op": "fork"}) != "forked":
                raise wire.WireError("an unexpected reply to fork")
            child.request({"op": "load", "cells": cells, "limit": limit})
            names = child.request({"op": "bind", "cells": given, "limit": limit, "given": not mine})
            verdict = _check(child, grade_id, code)
            verdict.given = [str(name) for name in names or []][:20]
            if child.request({"op": "exit"}) != "ended":
                raise wire.WireError("an unexpected reply to exit")
            return verdict
        except Exception:  # whatever the fork did, it gets no credit, and the next check a new zygote
            self.close()
            return Verdict(False, "the carried-forward check broke off", exercise=grade_id)

    def close(self) -> None:
        if self.child is not None:
            self.child.close()
            self.child = None


def _carried(verdicts: dict[str, Verdict]) -> bool:
    """Does an exercise fail after an earlier one failed (in the notebook's order): the only
    case where error carried forward checks anything again?"""
    failed = [not v.passed for v in verdicts.values()]
    return any(failed[i] and any(failed[:i]) for i in range(len(failed)))


def _carry_forward(
    zygote: _Zygote,
    source: Path,
    submission: Path,
    verdicts: dict[str, Verdict],
    cells: dict[str, str],
    limit: float,
    deadline: float | None,
) -> None:
    """Error carried forward: an exercise failed as written, after earlier ones failed, is
    checked in two forks alike, each from the code cells before its test cell in the notebook
    (the conditions of an ordinary pass): with the earlier wrong answers' calls answered by the
    student's own functions, then by the solution. It is right on its own (``Verdict.alone``)
    only when the first fails exactly as the check as written did and the second passes: only a
    failure that the earlier answers caused is carried forward, never one that a fresh start or
    the binding's mere presence changes, and nothing an answer can see differs between the two."""
    solutions = solution_cells(source)
    before = answers_before_tests(submission)
    wrong: list[str] = []
    for grade_id, code in cells.items():
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError("the independent check ran out of time")
        verdict = verdicts[grade_id]
        if not verdict.passed and wrong and grade_id in before:
            given = [c for g in wrong for c in solutions.get(g, [])]
            mine = zygote.check(before[grade_id], given, grade_id, code, limit, mine=True)
            if mine.passed or (mine.message, mine.mistake) != (verdict.message, verdict.mistake):
                verdict.alone = False  # not the failure as written: something else than the earlier answers
            else:
                carried = zygote.check(before[grade_id], given, grade_id, code, limit, mine=False)
                verdict.alone, verdict.given = carried.passed, carried.given
        if not verdict.passed:
            wrong.append(grade_id)


def _forked(child: SandboxedChild) -> None:
    """Wait for ``child``'s first reply, then fork it (the answers run in the fork; the child, in
    the sandbox its PID 1, runs none). Either failing is the grader's error, not the student's."""
    try:
        child.hello()
    except GraderError:
        child.close()
        raise
    try:
        if child.request({"op": "fork"}) != "forked":
            raise wire.WireError("an unexpected reply")
    except Exception as err:
        child.close()
        raise GraderError(
            f"the independent check's sandboxed child could not fork ({err}); this is the grader's fault, "
            "not the submission's"
        ) from err


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
    child: SandboxedChild | None = None,
    timings: dict[str, float] | None = None,
) -> dict[str, Verdict]:
    """Run every graded test cell of ``source`` here against the answers of ``submission``
    (an autograded notebook), its code run in a child started through ``wrap`` (the
    sandbox). Returns grade_id -> Verdict; a child that dies or stops answering fails the
    exercises not yet checked. ``carry_forward``: then each exercise failed as written is
    checked again with the earlier wrong answers made right (``Verdict.alone``, ``_carry_forward``).
    ``child``: one started already through ``wrap`` (ahead of its job), whose first reply is awaited here;
    ``timings`` gets how long that wait was (``"check child start"``)."""
    cells = test_cells(source)
    verdicts: dict[str, Verdict] = {}
    start = time.perf_counter()
    child = child or SandboxedChild(wrap, env, call_timeout)
    _forked(child)
    if timings is not None:
        timings["check child start"] = time.perf_counter() - start
    zygote = _Zygote(lambda: SandboxedChild(wrap, env, call_timeout, "zygote"))
    try:
        child.request({"op": "load", "cells": answer_cells(submission), "limit": cell_timeout})
        for grade_id, code in cells.items():
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("the independent check ran out of time")
            verdicts[grade_id] = _check(child, grade_id, code)
        if carry_forward and _carried(verdicts):
            zygote.adopt(child)  # the fork's memory goes before the carried-forward forks'
            _carry_forward(zygote, source, submission, verdicts, cells, cell_timeout, deadline)
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
        zygote.close()
    return verdicts
