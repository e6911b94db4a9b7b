"""Before the first student: grade a notebook known to be right, in the sandbox, and stop if it
does not get full marks.

A grader that fails for its own reasons (a package the sandbox does not mount, a Python it
cannot run, a kernel that cannot start) would otherwise give every student of the class 0
and blame them. The lab's own solution notebook is run the way a submission is: every cell
in a sandboxed grading kernel, then the independent check with its sandboxed child. Anything
short of full marks stops the grading with the real cause (the error, and the end of what the
worker, its kernels and children wrote on stderr).

``run(job)`` runs in the worker; ``check(worker, job, limit)`` is the pipeline's side.
"""

from __future__ import annotations

import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

from autograder.grading.grader.job import Job, Result


class Worker(Protocol):
    """What the preflight needs of the pipeline's worker handle (``worker.WorkerProcess``)."""

    def run(self, job: Job, limit: float) -> Result: ...

    def stderr_tail(self, chars: int = 3000) -> str: ...


class PreflightFailed(RuntimeError):
    """A known-good notebook did not get full marks: grading stops before any student (the
    message holds the cause)."""


def _execute(source: Path, config: object, scratch: Path) -> str:
    """Run the notebook ``source`` in the grading kernel of ``config``: "" when every cell ran,
    else the error."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(source), as_version=4)
    execute = config.Execute  # type: ignore[attr-defined]
    client = NotebookClient(
        nb,
        kernel_name=str(execute.kernel_name),
        config=config,
        timeout=int(execute.timeout or 30),
        startup_timeout=int(execute.startup_timeout or 60),
        resources={"metadata": {"path": str(scratch)}},
    )
    try:
        client.execute()
    except Exception as err:  # any failure is the cause we report
        return f"{type(err).__name__}: {str(err)[-2000:]}"
    return ""


def run(job: Job) -> Result:
    """In the worker: run ``job.lab``'s solution notebook in the job's sandboxed kernel and,
    at the same time (they share nothing: two sandboxed processes), the independent check on
    it. ``Result(preflight="")`` when every graded cell passed both, else ``Result(preflight=cause)``."""
    from autograder.grading.grader.run import bwrap, independent_check
    from autograder.grading.grader.run.nbconfig import load_config

    root, lab = Path(job.root), job.lab
    source = job.source
    config = load_config(root, job.config)
    scratch = Path(tempfile.mkdtemp(prefix="preflight-", dir=job.scratch))

    def wrap(argv: list[str]) -> list[str]:
        return bwrap.wrap(
            argv,
            scratch=scratch / "child",
            limits=job.limits,
            env={"NBGRADER_EXECUTION": "autograde"},
            enabled=job.sandbox,
            package=job.package,
        )

    try:
        with ThreadPoolExecutor(1) as pool:  # the kernel's run beside the check: half the wait on two cores
            executed = pool.submit(_execute, source, config, scratch)
            verdicts = independent_check.recheck(source, source, wrap=wrap)
            problem = executed.result()
        if problem:
            return Result(preflight=f"the solution notebook of {lab} did not run in the grading kernel: {problem}")
        failed = {grade_id: v.message for grade_id, v in verdicts.items() if not v.passed}
        if failed:
            return Result(
                preflight=f"the independent check failed the solution notebook of {lab}: "
                + "; ".join(f"{grade_id}: {message[:500]}" for grade_id, message in failed.items())
            )
        return Result(preflight="")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def check(worker: Worker, job: Job, limit: float) -> None:
    """In the pipeline: run the preflight of ``job`` on ``worker``; PreflightFailed with the
    cause (and the worker's stderr) unless the known-good notebook got full marks."""
    result = worker.run(job, limit)
    cause = result.crash or result.grader_error or result.preflight
    if result.preflight is None and not cause:
        cause = f"an unexpected answer: {str(result)[:500]}"
    if cause:
        raise PreflightFailed(
            f"grading stopped before the first student: a known-good notebook (the solution of {job.lab}) "
            f"did not get full marks in the sandbox, so every student would have been scored for the grader's "
            f"fault.\nCause: {cause}\nThe grading process's stderr ended with:\n{worker.stderr_tail() or '(nothing)'}"
        )
