"""The sandboxed child of the independent check: a fork of it runs a submission's code cells,
then answers the grader's calls on what they defined, and nothing else; the child itself runs
none of them, and may then fork again for each carried-forward check (a zygote).

Started by the grader's independent check (``grader.run.independent_check``) as
``python -m autograder.grading.sandboxed.child RFD WFD``
inside the sandbox, with two pipes on file descriptors RFD (requests in) and WFD (replies
out). What the student's code prints goes nowhere: standard output and error are closed
to it, so it cannot disturb the conversation (and whatever it writes on WFD itself is
only a reply the grader parses like any other: it can choose what its answers return,
which is what is graded anyway).
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import os
import select
import shutil
import signal
import sys
import types
from collections.abc import Iterator
from typing import Any

import torch

from autograder.grading.protocol import wire
from autograder.grading.protocol.remote import Connection
from autograder.grading.sandboxed import PYPLOT_PARTS, carry, load_ahead


class CellTimeout(BaseException):
    """A cell ran past its time limit (a BaseException, so ``except Exception`` cannot keep it)."""


def _alarm(signum: int, frame: Any) -> None:
    raise CellTimeout("the cell ran past its time limit")


def _python(source: str) -> str:
    """The cell as plain Python (magics become get_ipython() calls, which fail here)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        return TransformerManager().transform_cell(source)
    except Exception:  # without IPython the cell is run as it is
        return source


def run_cells(cells: list[str], namespace: dict, limit: float) -> list[str | None]:
    """Run the cells in order like a kernel that goes on after an error; the error of each."""
    errors: list[str | None] = []
    signal.signal(signal.SIGALRM, _alarm)
    for i, source in enumerate(cells):
        try:
            signal.setitimer(signal.ITIMER_REAL, limit)
            # as the kernel compiles it: not under this module's ``from __future__`` (annotations are
            # evaluated where they stand), after IPython's transforms (prompts stripped, even in strings)
            code = compile(_python(source), f"<cell {i + 1}>", "exec", dont_inherit=True)
            exec(code, namespace)  # sandboxed
            errors.append(None)
        except BaseException as err:  # SystemExit and timeouts included
            errors.append(f"{type(err).__name__}: {err}"[:300])
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    return errors


@contextlib.contextmanager
def _forbidding(candidate: Any, rules: Any, forbidden: Any) -> Iterator[None]:
    """The check's ``forbidden`` blocks, applied here around the call, by the ``forbidden`` the
    child took before any student code ran (never looked up again: a submission may have
    replaced the module's attribute since)."""
    with contextlib.ExitStack() as stack:
        for targets, instead in rules or []:
            stack.enter_context(forbidden(candidate, [str(t) for t in targets], str(instead)))
        yield


_EXIT = os._exit  # taken before any student code: a fork's answers cannot keep it alive
_LIBC = ctypes.CDLL(None)  # for prctl: one handle, taken before any student code
# what every fork would import again: IPython's transforms of each cell, what pyplot is made of
# (``PYPLOT_PARTS``) and, listed last, the course's reference and data, which ``ChildServer``'s
# sentinels would load anyway, as the checks (``load_ahead`` loads them after these)
WARM = ("IPython.core.inputtransformer2", *PYPLOT_PARTS, "autograder.reference", "autograder.data")


def warm() -> None:
    """Import ``WARM``, once, at the child's start, before any student code: a child started
    ahead of its job does this while another job is graded, and each fork finds them loaded."""
    load_ahead(WARM)


def _scratch() -> str | None:
    """The sandbox's scratch folder (the launcher makes it the home, the temporary folder and the
    working directory at once), else None: then nothing is emptied between forks."""
    here = os.getcwd()
    return here if os.environ.get("HOME") == os.environ.get("TMPDIR") == here else None


def _empty(folder: str | None, keep: set[str]) -> None:
    """Remove from ``folder`` what a fork wrote there (all but ``keep``)."""
    if folder is None:
        return
    for name in set(os.listdir(folder)) - keep:
        path = os.path.join(folder, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)


def _children() -> list[int]:
    """The processes whose parent is this one (read from /proc)."""
    me, out = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{entry}/stat") as stat:
                    if int(stat.read().rsplit(")", 1)[1].split()[1]) == me:
                        out.append(int(entry))
    return out


def _end_descendants() -> None:
    """Kill and reap every process a fork left behind (they come back here as orphans)."""
    for _ in range(1000):
        children = _children()
        if not children:
            return
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for pid in children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


class ChildServer(Connection):
    """The child's side: loads the cells, serves ``global``, ``getattr`` and ``call``."""

    def __init__(self, rfd: int, wfd: int, scratch: set[str] | None = None) -> None:
        super().__init__(rfd, wfd, trusting=True)
        self.namespace: dict[str, Any] = {"__name__": "__main__"}
        from autograder.checks.kit.sentinels import forbidden  # before the submission's cells are loaded

        self.forbidden = forbidden
        self.pristine = True  # no student code has run here: this process may be forked
        # what its scratch folder held before ``warm`` (``main``): matplotlib's config and cache
        # folders, which ``warm`` makes there, are then removed whole after each fork, with whatever
        # the fork wrote in them (its fonts stay loaded); else what it held at the first fork
        self.scratch = scratch
        self.reaping = False  # whether orphans of its forks come back to it

    def handle(self, message: dict, blobs: dict[str, torch.Tensor]) -> tuple[Any, dict, dict]:
        op = message.get("op")
        if op == "hello":  # started, imports done, no student code run yet
            return "ready", {}, {}
        if op == "load":
            self.pristine = False
            return (
                run_cells([str(c) for c in message["cells"]], self.namespace, float(message.get("limit", 30))),
                {},
                {},
            )
        if op == "fork":  # a copy of this process, where no student code ran yet: it will run some
            return self._fork()
        if op == "warm":  # a zygote-to-be, before its carried-forward forks (warm since its start)
            if not self.pristine:
                raise ValueError("only a process where no student code ran may warm")
            return "warm", {}, {}
        if op == "exit":  # the end of a fork: its parent, this child, replies once it is cleaned up
            _EXIT(0)
        if op == "bind":  # error carried forward, in a fork: earlier wrong answers answered by the solution
            limit = float(message.get("limit", 30))
            bound = carry.bind(
                self.namespace,
                [str(c) for c in message["cells"]],
                lambda cells, namespace: run_cells(cells, namespace, limit),
                given=bool(message.get("given")),
            )
            return bound, {}, {}
        if op == "global":
            name = str(message.get("name"))
            if name not in self.namespace:
                raise NameError(f"name '{name}' is not defined")
            return self.namespace[name], {}, {}
        target = self.exported.get(message.get("target"))  # type: ignore[arg-type]
        if target is None:
            raise LookupError("no such object")
        if op == "getattr":
            return getattr(target, str(message.get("name"))), {}, {}
        if op == "call":
            return self._call(target, message, blobs)
        raise ValueError(f"unknown request {op!r}")

    def _fork(self) -> tuple[Any, dict, dict]:
        """Fork: the copy replies "forked" and serves until told to exit; this process waits for
        it (reaping the orphans that come back meanwhile), kills whatever it left running, empties
        the scratch folder of what it wrote, and replies "ended", marked ``fork_ended`` (the reply
        to the copy's "exit"; to any other request it says that the copy is gone). Each fork starts
        as this one is. This process is not dumpable (no process of the sandbox reads or writes its
        memory) and, as the sandbox's PID 1, has no handler a signal from inside could reach; each
        copy is made dumpable again and gets its SIGINT handler back."""
        if not self.pristine:
            raise ValueError("only a process where no student code ran may fork")
        if not self.reaping:
            _LIBC.prctl(36, 1)  # PR_SET_CHILD_SUBREAPER: orphans of a fork come back here
            self.reaping = True
        if self.scratch is None:
            folder = _scratch()
            self.scratch = set(os.listdir(folder)) if folder else set()
        _LIBC.prctl(4, 0)  # PR_SET_DUMPABLE: 0
        interrupt = signal.signal(signal.SIGINT, signal.SIG_DFL)
        pid = os.fork()
        if pid == 0:
            _LIBC.prctl(4, 1)
            signal.signal(signal.SIGINT, interrupt)
            self.pristine = False
            return "forked", {}, {}
        self._wait_for(pid)
        _end_descendants()
        _empty(_scratch(), self.scratch)
        return "ended", {"fork_ended": True}, {}

    def _wait_for(self, pid: int) -> None:
        """Wait for the fork ``pid``, reaping the orphans that come back meanwhile, as an init
        does; if the grader closes its end of the reply pipe first, end every process of the
        sandbox and this one (as the sandbox's PID 1, this process would outlive its launcher)."""
        pidfd = os.pidfd_open(pid)
        woken, wake = os.pipe()  # an orphan's end (SIGCHLD) wakes the wait below
        os.set_blocking(wake, False)
        before = signal.set_wakeup_fd(wake)
        handler = signal.signal(signal.SIGCHLD, lambda signum, frame: None)
        poller = select.poll()
        for fd in (pidfd, woken):
            poller.register(fd, select.POLLIN)
        poller.register(self.wfd, select.POLLERR)  # reported once the grader's end is closed
        try:
            while True:
                reaped = os.waitpid(-1, os.WNOHANG)[0]
                if reaped == pid:
                    return
                if reaped:  # an orphan: reap the next at once
                    continue
                events = dict(poller.poll(1000))
                if self.wfd in events:
                    with contextlib.suppress(OSError):
                        os.kill(-1, signal.SIGKILL)
                    _EXIT(1)
                if woken in events:
                    os.read(woken, 4096)
        finally:
            signal.signal(signal.SIGCHLD, handler)
            signal.set_wakeup_fd(before)
            for fd in (pidfd, woken, wake):
                os.close(fd)

    def _call(self, target: Any, message: dict, blobs: dict[str, torch.Tensor]) -> tuple[Any, dict, dict]:
        rng = blobs.pop("rng", None)
        leaves: list[torch.Tensor] = []
        args, kwargs = self.decode([message.get("args"), message.get("kwargs")], blobs, leaves)
        function = target
        if message.get("scenario"):
            module, _, name = str(message["scenario"]).partition(":")
            if not module.startswith("autograder.checks."):
                raise ValueError("scenarios come from autograder.checks")
            function = getattr(importlib.import_module(module), name)
            args = [target, *args]
        if isinstance(rng, torch.Tensor):
            torch.set_rng_state(rng)
        versions = [(key, t, t._version) for key, t in blobs.items()]
        root = target.__self__ if isinstance(target, types.MethodType) else target  # a method: its object
        forbid = _forbidding(root, message.get("forbid"), self.forbidden)
        with torch.set_grad_enabled(bool(message.get("grad", True))), forbid:
            value = function(*args, **(kwargs or {}))
        extra: dict[str, Any] = {}
        tensors = {"rng": torch.get_rng_state()}
        changed = [key for key, t, version in versions if t._version != version]
        if changed:  # arguments changed in place: the caller's copies change too
            extra["changed"] = changed
            tensors.update({f"changed-{key}": blobs[key].detach().contiguous() for key in changed})
        if isinstance(value, torch.Tensor) and value.requires_grad and value.dim() == 0 and leaves:
            grads = torch.autograd.grad(value, leaves, allow_unused=True)
            extra["grads"] = [None if g is None else f"grad{i}" for i, g in enumerate(grads)]
            tensors.update({f"grad{i}": g.detach().contiguous() for i, g in enumerate(grads) if g is not None})
        return value, extra, tensors

    def run(self) -> None:
        while True:
            try:
                message, blobs = wire.receive(self.rfd)
            except wire.PeerGone:
                return
            self.serve(message, blobs)


def main(argv: list[str]) -> None:
    """``RFD WFD [zygote]`` (``zygote``: launched for error carried forward; ignored here, since
    it starts warm as any child does: the grader passes it so that its tests tell the launches apart)."""
    rfd, wfd = int(argv[0]), int(argv[1])
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    os.environ.setdefault("MPLBACKEND", "Agg")
    folder = _scratch()
    before = set(os.listdir(folder)) if folder else set()  # before warm() makes matplotlib's folders there
    warm()
    ChildServer(rfd, wfd, before).run()


if __name__ == "__main__":
    main(sys.argv[1:])
