"""The next submission's sandboxed processes, started while the worker grades the one before it:
its grading kernel and the independent check's child. Starting them is a ``Popen`` that returns at
once; they boot and import torch while the current submission is graded, so the next submission
finds them ready instead of paying their start. They run beside the current submission: on an
idle core they cost it nothing, on a busy one they slow it (its cell limits are wall-clock), and
each worker holds two more torch processes in memory.

Each process started ahead belongs to exactly one job, named when it starts (the pipeline tells
the worker which job it gets next: ``pool``; a job is one course, lab and student). That job uses
it, or it is killed unused when the job ends, when another start replaces it, or when the worker
ends; no process is handed to a second job, and none that ran a submission's code is reused (the
trust model of grading is unchanged: a kernel and a child per submission, each in its own
sandbox, and nothing decided in either). One gap is the same as for a kernel started with its
job: a worker killed from outside (the system's out-of-memory killer) leaves its kernels (the
job's and the one started ahead) running in their sandboxes, since they run in sessions of their
own and the pipeline finds a worker's children by their parent; check children end when their
pipe to the worker closes.

For a course whose autograde runs nbgrader's ``Execute`` (``execute_ahead``), neither differs
from one started when its job begins: the same kernelspec, configuration and folders (the
kernel's ``k/N`` folder is named by the job, so a submission sees the same paths). A kernel
folder is used by one kernel only: a sandbox leaves its IPC folder linked to its own tmpfs, so a
job whose kernel started ahead and was then lost (its worker died, or it died) gets a new
folder beside it, ``k/N.1`` (``kernel_config``,
``fresh_folder``); that submission sees that path. Without the sandbox (``--no-sandbox``)
nothing is linked and the folder is used again, harmlessly: the first kernel ran nothing.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autograder.grading.grader.job import Job
from autograder.grading.grader.run import bwrap, kernelspec
from autograder.grading.grader.run.nbconfig import load_config

if TYPE_CHECKING:  # imported when a child starts: a worker starts its first kernel before torch's import
    from autograder.grading.grader.run.independent_check import SandboxedChild

CALL_TIMEOUT = 120.0  # seconds a call to the child may take (``independent_check.recheck``'s default)


def key(job: Job) -> tuple[str, str, str]:
    """Which job a process started ahead belongs to: the course, lab and student (one job each in
    a grading; a kernel folder given anew keeps the job's key)."""
    return (job.root, job.lab, job.student)


def check_sandbox(job: Job, scratch: Path) -> Any:
    """The command line builder of the independent check's child of ``job``, in ``scratch``: the
    sandbox's PID 1 (``bwrap.wrap``'s ``init``), which runs the answers in forks of itself."""

    def wrap(argv: list[str]) -> list[str]:
        return bwrap.wrap(
            argv,
            scratch=scratch,
            limits=job.limits,
            env={"NBGRADER_EXECUTION": "autograde"},
            enabled=job.sandbox,
            package=job.package,
            init=True,
        )

    return wrap


@dataclass
class Started:
    """What was started ahead for one job: its kernel (a jupyter_client ``AsyncKernelManager``
    whose kernel is booting or waiting) and its check child with the child's scratch folder."""

    job: tuple[str, str, str]
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


_started: dict[tuple[str, str, str], Started] = {}
_handed: list[Any] = []  # the kernel ``kernel_config`` handed to the job being graded, for ``ExecuteAhead``
timings: dict[str, float] = {}  # the last kernel's launch and start, seconds (``execute_ahead``)


def _run(coroutine_function: Any, *args: Any, **kwargs: Any) -> Any:
    from jupyter_core.utils import run_sync

    return run_sync(coroutine_function)(*args, **kwargs)


def _stop_kernel(km: Any) -> None:
    with contextlib.suppress(Exception):
        _run(km.shutdown_kernel, now=True)
    with contextlib.suppress(Exception):
        _run(km.cleanup_resources)


def _kernel(job: Job, started: Started) -> None:
    """Start ``job``'s kernel as nbgrader's ``Execute`` would (its kernelspec, the job's
    configuration) into ``started``, the manager kept before the start so that a start that
    fails half-way is still shut down. None when the course's autograde does not run
    ``ExecuteAhead`` (another executor would start its own) or when nbclient would add arguments
    of its own (an IPython kernel's history file): that kernel starts with its job."""
    from jupyter_client.manager import AsyncKernelManager

    config = load_config(Path(job.root), job.config)
    if not runs_nbgrader_execute(config):  # the course runs another executor: it starts its own kernel
        return
    km = AsyncKernelManager(kernel_name=str(config.Execute.kernel_name), config=config)
    if km.ipykernel:
        return
    started.arguments = tuple(config.Execute.get("extra_arguments", []) or [])
    started.kernel = km
    # the launcher goes to "/" at once and the sandbox to its scratch folder: the cwd is unused
    _run(km.start_kernel, extra_arguments=list(started.arguments), cwd=job.scratch or "/")


EXECUTE = ("nbgrader.preprocessors.Execute", "nbgrader.preprocessors.execute.Execute")  # what ExecuteAhead replaces


def runs_nbgrader_execute(config: Any) -> bool:
    """Does the course's autograde (``config``, nbgrader's) run nbgrader's ``Execute``, by name or
    by class, so that ``execute_ahead.ExecuteAhead`` takes its place and the kernel started ahead?
    (nbgrader is imported only when no name matched and the list holds a class: a worker
    starts its first kernel before it imports nbgrader.)"""
    section = config.Autograde
    if "autograde_preprocessors" not in section:
        return False
    items = list(section.autograde_preprocessors)
    if any(isinstance(item, str) and item in EXECUTE for item in items):
        return True
    if all(isinstance(item, str) for item in items):
        return False
    from nbgrader.preprocessors import Execute

    return any(item is Execute for item in items)


def start(job: Job) -> None:
    """Start ``job``'s kernel and check child now; they boot while another job is graded."""
    discard(job)
    started = _started[key(job)] = Started(key(job), since=time.perf_counter())
    with contextlib.suppress(Exception):  # whatever fails here fails again, reported, when its job starts it
        _kernel(job, started)
    with contextlib.suppress(Exception):
        from autograder.grading.grader.run.independent_check import SandboxedChild

        started.scratch = Path(tempfile.mkdtemp(prefix="recheck-", dir=job.scratch))
        started.child = SandboxedChild(check_sandbox(job, started.scratch), None, CALL_TIMEOUT)


def handed() -> bool:
    """Was the job being graded handed a kernel started ahead (``kernel_config``)?"""
    return bool(_handed)


def take_kernel() -> Any:
    """The kernel ``kernel_config`` handed to the job being graded (then the caller's to shut
    down), or None: then the job's folder is one no kernel used, and the caller starts one there."""
    return _handed.pop() if _handed else None


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
    while _handed:  # handed to the job and not taken: autograde stopped before its notebook ran
        _stop_kernel(_handed.pop())


def discard_all() -> None:
    """Kill everything started ahead and not taken (the worker is ending)."""
    for started in list(_started.values()):
        started.close()
    _started.clear()
    while _handed:
        _stop_kernel(_handed.pop())


def kernel_config(job: Job, usable: bool) -> dict[str, Any]:
    """What ``job``'s configuration needs before its notebook runs. When its kernel was started
    ahead here, is alive and will be taken (``usable``: autograde runs ``ExecuteAhead``), that
    kernel is handed over for it (``take_kernel``) and nothing changes. Else that kernel, if any,
    is killed, and the job gets a fresh kernel folder if its own was used already
    (``fresh_folder``): a second kernel never starts in a folder a first one used."""
    while _handed:
        _stop_kernel(_handed.pop())
    started = _started.get(key(job))
    km = started.kernel if started is not None else None
    if started is not None:
        started.kernel = None
    if km is not None:
        alive = False
        with contextlib.suppress(Exception):
            alive = bool(_run(km.is_alive))
        if alive and usable:
            _handed.append(km)
            return {}
        _stop_kernel(km)
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
