"""The jobs of a class on worker processes: the preflight on the first worker while the others
start, then every job under its wall-clock limit, each result handed back in the jobs' order.
Each worker takes its next job when it starts one, and is told it in the same write, so that it
starts that job's sandboxes while it grades (``ahead``). A job taken is that worker's: it may wait
behind a slow job of its worker while another worker is idle (the cost of starting its sandboxes
early, at most one job per worker at the end of a class).

No worker or kernel outlives grading: a stop (SIGTERM, Ctrl+C) or a failure stops them all, and
the jobs not yet started never start.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError, ThreadPoolExecutor
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
    workers = [
        WorkerProcess(scratch, str(scratch / "jupyter"), package) for _ in range(max(1, min(processes, len(jobs))))
    ]
    plan = _Plan(jobs)
    try:
        # each worker's first job is known now: its sandboxes start (and the processes import
        # nbgrader) while the first worker checks the grader
        firsts = [plan.take() for _ in workers]
        for worker, job in zip(workers, firsts, strict=True):
            if job is not None:
                worker.ahead(plan.jobs[job])
            else:
                worker.start()
        if first is not None:
            preflight.check(workers[0], first, job_timeout)
            if checked is not None:
                checked()
        _each(plan, firsts, record, workers, job_timeout, progress)
    except BaseException:  # a stop (SIGTERM, Ctrl+C) or a failure: no worker or kernel outlives grading
        plan.stop()
        for worker in workers:
            worker.stop()
        raise
    finally:  # each takes about a second to end: all are told before any is waited for
        for worker in workers:
            worker.hang_up()
        for worker in workers:
            worker.close()


class _Plan:
    """The jobs in their order, each given to one worker: a worker takes its next job when it
    starts one (so that it can start that job's sandboxes ahead), and a job once taken is that
    worker's. After ``stop`` no job is given."""

    def __init__(self, jobs: list[Job]) -> None:
        self.jobs = jobs
        self.results: list[Future[Result]] = [Future() for _ in jobs]
        self.next, self.stopped = 0, False
        self.lock = threading.Lock()

    def take(self) -> int | None:
        with self.lock:
            if self.stopped or self.next >= len(self.jobs):
                return None
            self.next += 1
            return self.next - 1

    def stop(self) -> None:
        with self.lock:
            self.stopped = True
        for future in self.results:
            future.cancel()


def _serve(plan: _Plan, worker: WorkerProcess, mine: int | None, job_timeout: float) -> None:
    """One worker's jobs: its first, then each it takes; every job's next is taken before the job
    is sent, and sent in the same write, just before it."""
    while mine is not None and not plan.stopped:
        then = plan.take()
        future = plan.results[mine]
        try:
            result = worker.run(plan.jobs[mine], job_timeout, plan.jobs[then] if then is not None else None)
        except BaseException as err:
            with contextlib.suppress(InvalidStateError):  # cancelled: grading is stopping
                future.set_exception(err)
            raise
        with contextlib.suppress(InvalidStateError):
            future.set_result(result)
        mine = then


def _each(
    plan: _Plan,
    firsts: list[int | None],
    record: Callable[[Job, Result], None],
    workers: list[WorkerProcess],
    job_timeout: float,
    progress: bool,
) -> None:
    """Run the jobs on the workers, each under its wall-clock limit, and record every result as
    it comes (in the jobs' order)."""
    pool = ThreadPoolExecutor(len(workers))
    try:
        for worker, mine in zip(workers, firsts, strict=True):
            pool.submit(_serve, plan, worker, mine, job_timeout)
        with tqdm(
            total=len(plan.jobs),
            desc="grading",
            unit="notebook",
            ascii=True,
            file=sys.stderr,
            disable=not progress or not plan.jobs,
        ) as bar:
            for job, future in zip(plan.jobs, plan.results, strict=True):
                result = future.result()
                bar.update(1)
                record(job, result)
    finally:  # on a stop, the jobs not yet started never start (the caller kills those in hand)
        plan.stop()
        pool.shutdown(wait=False, cancel_futures=True)
