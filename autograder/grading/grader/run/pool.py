"""The jobs of a class on worker processes: the preflight on the first worker while the others
start, then every job under its wall-clock limit, each result handed back in the jobs' order.

No worker or kernel outlives grading: a stop (SIGTERM, Ctrl+C) or a failure stops them all, and
the jobs not yet started never start.
"""

from __future__ import annotations

import queue
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tqdm import tqdm

from autograder.grading.grader.job import Job, Result
from autograder.grading.grader.run import preflight
from autograder.grading.grader.run.worker import WorkerProcess


def run_jobs(
    jobs: list[Job],
    first: Job | None,
    record: Callable[[Job, Result], None],
    *,
    processes: int,
    job_timeout: float,
    scratch: Path,
    package: Path | None,
    progress: bool = True,
    checked: Callable[[], None] | None = None,
) -> None:
    """Grade ``first``, the known-good notebook (preflight: PreflightFailed if it does not get
    full marks; ``checked`` is called once it did), then run ``jobs`` on ``processes`` worker
    processes, each under ``job_timeout`` seconds, and hand every result to ``record`` as it
    comes (in the jobs' order)."""
    workers: queue.Queue[WorkerProcess] = queue.Queue()
    for _ in range(max(1, min(processes, len(jobs)))):
        workers.put(WorkerProcess(scratch, str(scratch / "jupyter"), package))
    every_worker = list(workers.queue)
    try:
        for worker in every_worker[1:]:  # they start (import nbgrader) while the first checks the grader
            worker.start()
        if first is not None:
            preflight.check(every_worker[0], first, job_timeout)
            if checked is not None:
                checked()
        _each(jobs, record, workers, processes, job_timeout, progress)
    except BaseException:  # a stop (SIGTERM, Ctrl+C) or a failure: no worker or kernel outlives grading
        for worker in every_worker:
            worker.stop()
        raise
    finally:  # each takes about a second to end: all are told before any is waited for
        for worker in every_worker:
            worker.hang_up()
        for worker in every_worker:
            worker.close()


def _each(
    jobs: list[Job],
    record: Callable[[Job, Result], None],
    workers: queue.Queue[WorkerProcess],
    processes: int,
    job_timeout: float,
    progress: bool,
) -> None:
    """Run the jobs on the workers, each under its wall-clock limit, and record every result as
    it comes (in the jobs' order)."""

    def run_job(job: Job) -> Result:
        worker = workers.get()
        try:
            return worker.run(job, job_timeout)
        finally:
            workers.put(worker)

    pool = ThreadPoolExecutor(max(1, processes))
    try:
        with tqdm(
            total=len(jobs),
            desc="grading",
            unit="notebook",
            ascii=True,
            file=sys.stderr,
            disable=not progress or not jobs,
        ) as bar:
            futures = [(job, pool.submit(run_job, job)) for job in jobs]
            for job, future in futures:
                result = future.result()
                bar.update(1)
                record(job, result)
    finally:  # on a stop, the jobs not yet started never start (the caller kills those in hand)
        pool.shutdown(wait=False, cancel_futures=True)
