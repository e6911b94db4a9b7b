"""The next submission's sandboxed processes, started while the worker grades the one before it:
its grading kernel and the independent check's child. Starting them is a ``Popen`` that returns at
once; they boot, import torch, and wait, on a core the current submission leaves idle, so the
next submission finds them ready instead of paying their start.

Each process started ahead belongs to exactly one job, named when it starts (the pipeline tells
the worker which job it will get next: ``pool``). That job uses it, or it is killed unused; no
process is ever handed to a second job, and none that ran a submission's code is reused (the
trust model of grading is unchanged: a kernel and a child per submission, each in its own
sandbox, and nothing decided in either).

Neither differs from one started when its job begins: the same kernelspec, configuration and
folders (the kernel's ``k/N`` folder is named by the job, so what a submission can see of its
paths is the same), and the same sandboxed child. A kernel folder is used by one kernel only: a
job whose kernel started ahead and was then lost (its worker died) gets a new folder beside it
(``fresh_folder``), because the sandbox that used the first left it linked to its own tmpfs.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder.grading.grader.job import Job
from autograder.grading.grader.run import bwrap, kernelspec
from autograder.grading.grader.run.independent_check import SandboxedChild
from autograder.grading.grader.run.nbconfig import load_config

CALL_TIMEOUT = 120.0  # seconds a call to the child may take (``independent_check.recheck``'s default)


def key(job: Job) -> tuple[str, str, str, str]:
    """Which job a process started ahead belongs to: the course, lab, student and kernel name."""
    return (job.root, job.lab, job.student, str(job.config.get("Execute.kernel_name", "")))


def check_sandbox(job: Job, scratch: Path) -> Any:
    """The command line builder of the independent check's child of ``job``, in ``scratch``."""

    def wrap(argv: list[str]) -> list[str]:
        return bwrap.wrap(
            argv,
            scratch=scratch,
            limits=job.limits,
            env={"NBGRADER_EXECUTION": "autograde"},
            enabled=job.sandbox,
            package=job.package,
        )

    return wrap


@dataclass
class Started:
    """What was started ahead for one job: its kernel (a jupyter_client ``AsyncKernelManager``
    whose kernel is booting or waiting) and its check child with the child's scratch folder."""

    job: tuple[str, str, str, str]
    kernel: Any = None
    arguments: tuple[str, ...] = ()  # the kernel's extra command-line arguments
    child: SandboxedChild | None = None
    scratch: Path | None = None
    since: float = 0.0

    def close(self) -> None:
        """Kill what was not taken, and remove its folders' leftovers."""
        if self.child is not None:
            self.child.close()
            self.child = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
        if self.kernel is not None:
            _stop_kernel(self.kernel)
            self.kernel = None


_started: dict[tuple[str, str, str, str], Started] = {}
timings: dict[str, float] = {}  # the last kernel's launch and start, seconds (``execute_ahead``)


def _run(coroutine_function: Any, *args: Any, **kwargs: Any) -> Any:
    from jupyter_core.utils import run_sync

    return run_sync(coroutine_function)(*args, **kwargs)


def _stop_kernel(km: Any) -> None:
    with contextlib.suppress(Exception):
        _run(km.shutdown_kernel, now=True)
    with contextlib.suppress(Exception):
        _run(km.cleanup_resources)


def _kernel(job: Job) -> tuple[Any, tuple[str, ...]]:
    """Start ``job``'s kernel as nbgrader's ``Execute`` would (its kernelspec, the job's
    configuration); its manager and the extra arguments it got. None when nbclient would add
    arguments of its own (an IPython kernel's history file): that kernel starts with its job."""
    from jupyter_client.manager import AsyncKernelManager

    config = load_config(Path(job.root), job.config)
    km = AsyncKernelManager(kernel_name=str(config.Execute.kernel_name), config=config)
    if km.ipykernel:
        return None, ()
    arguments = tuple(config.Execute.get("extra_arguments", []) or [])
    _run(km.start_kernel, extra_arguments=list(arguments), cwd=job.scratch or "/")
    return km, arguments


def start(job: Job) -> None:
    """Start ``job``'s kernel and check child now; they boot while another job is graded."""
    discard(job)
    started = _started[key(job)] = Started(key(job), since=time.perf_counter())
    with contextlib.suppress(Exception):  # whatever fails here fails again, reported, when its job starts it
        started.kernel, started.arguments = _kernel(job)
    with contextlib.suppress(Exception):
        started.scratch = Path(tempfile.mkdtemp(prefix="recheck-", dir=job.scratch))
        started.child = SandboxedChild(check_sandbox(job, started.scratch), None, CALL_TIMEOUT)


def take_kernel(kernel_name: str, arguments: list[str]) -> Any:
    """The kernel started ahead under ``kernel_name`` with ``arguments``, if it is still alive
    (then it is the caller's to shut down); else None, and it is killed."""
    for started in _started.values():
        if started.job[3] == kernel_name and started.kernel is not None:
            km, started.kernel = started.kernel, None
            alive = False
            with contextlib.suppress(Exception):
                alive = bool(_run(km.is_alive))
            if alive and tuple(arguments) == started.arguments:
                return km
            _stop_kernel(km)
    return None


def take_child(job: Job) -> tuple[SandboxedChild, Path] | None:
    """The check child started ahead for ``job``, with its scratch folder (both the caller's
    now), or None."""
    started = _started.get(key(job))
    if started is None or started.child is None or started.scratch is None:
        return None
    child, scratch, started.child, started.scratch = started.child, started.scratch, None, None
    return child, scratch


def discard(job: Job) -> None:
    """Kill what was started ahead for ``job`` and not taken (its grading is over, or another
    start replaces it)."""
    started = _started.pop(key(job), None)
    if started is not None:
        started.close()


def discard_all() -> None:
    for started in list(_started.values()):
        started.close()
    _started.clear()


def was_started(job: Job) -> bool:
    """Was anything started ahead for ``job`` (in this worker)?"""
    return key(job) in _started


def kernel_config(job: Job) -> dict[str, Any]:
    """What ``job``'s configuration needs before its notebook runs: nothing when its kernel was
    started ahead here and is alive (``ExecuteAhead`` takes it); else that kernel, if any, is
    killed, and the job gets a fresh kernel folder if its own was used already (``fresh_folder``)."""
    started = _started.get(key(job))
    if started is not None and started.kernel is not None:
        alive = False
        with contextlib.suppress(Exception):
            alive = bool(_run(started.kernel.is_alive))
        if alive:
            return {}
        _stop_kernel(started.kernel)
        started.kernel = None
    return fresh_folder(job)


def fresh_folder(job: Job) -> dict[str, Any]:
    """The configuration ``job`` needs when its kernel folder was used already (a kernel started
    ahead there and lost with its worker, or dead before its job began): a kernelspec and IPC
    folder of a new folder beside it; else nothing."""
    connection = job.config.get("KernelManager.connection_file")
    name = str(job.config.get("Execute.kernel_name", ""))
    if not connection or not name or not job.jupyter_path:
        return {}
    work = Path(connection).parent.parent  # scratch/k/N: its ipc/ holds the connection file
    ipc = work / "ipc"
    if not (ipc.is_symlink() or Path(str(ipc) + ".host").exists()):
        return {}
    again = 1
    while work.with_name(f"{work.name}.{again}").exists():
        again += 1
    fresh = work.with_name(f"{work.name}.{again}")
    return kernelspec.install(
        job.jupyter_path,
        job.limits,
        fresh,
        name=f"{name}.{again}",
        enabled=job.sandbox,
        package=Path(job.package) if job.package else None,
    )
