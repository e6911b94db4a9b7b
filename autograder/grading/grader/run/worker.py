"""A grading process: it grades one student's lab at a time (the steps of
``steps.STEPS``: nbgrader autograde, the independent check, the verdicts, feedback).

Run by the pipeline through ``autograder.grading.protocol.boot`` (the course's ``autograder``,
in a folder of the pipeline's): it reads one ``Job`` (JSON) a line on stdin and answers one
``Result`` (JSON) a line on stdout, so nbgrader is imported once a worker. Both channels move to descriptors that no
process it starts inherits; its stderr is a pipe the pipeline reads with a cap.
A worker takes its turns at the gradebook (``gradebook.turns``) for as long as it serves.
It imports little before it reads its first line: the first job's kernel, started ahead, boots while the
worker imports torch and nbgrader.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from autograder.grading.course import tool_env
from autograder.grading.grader.job import Job, Result, Run, Submission
from autograder.grading.grader.run import ahead, processes
from autograder.grading.grader.run.nbconfig import load_config
from autograder.grading.grader.run.tail import Tail
from autograder.grading.protocol import boot


def run(job: Job) -> Result:
    """Grade ``job.lab`` for ``job.student``: the steps of ``steps.STEPS``, in order."""
    from nbgrader.apps import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory

    from autograder.grading.grader.run import steps
    from autograder.grading.grader.run.execute_ahead import use_kernel_started_ahead

    config = load_config(Path(job.root), job.config)
    if fresh := ahead.kernel_config(job, usable=use_kernel_started_ahead(config)):
        job = dataclasses.replace(job, config={**job.config, **fresh})
        config = load_config(Path(job.root), job.config)
        use_kernel_started_ahead(config)
    api = NbGraderAPI(coursedir=CourseDirectory(config=config), config=config)
    submission = Submission(job, config, api)
    submission.result.warm = ahead.handed()
    return steps.grade(submission)


class WorkerProcess:
    """The pipeline's handle on one long-lived worker process, started again after a crash
    or a job past its time limit (killed with its kernels). It starts in ``cwd`` (a folder of
    the pipeline's) with the ``autograder`` of ``package``; its stderr is read through a pipe,
    the last ``confinement.OUTPUT_CAP`` bytes kept."""

    def __init__(self, scratch: Path, jupyter_path: str, package: Path | None = None) -> None:
        self.proc: subprocess.Popen | None = None
        self.scratch, self.jupyter_path, self.buffer = scratch, jupyter_path, b""
        self.package = package
        self.stderr: Tail | None = None
        self.started = 0.0  # when the job in hand was sent
        self.stopped = False  # once stop() is called, no job runs and no process starts
        self.killing = threading.RLock()  # stop() comes from another thread than the job's

    def start(self) -> None:
        """Start the process now (it imports nbgrader while others work), not at its first job."""
        with self.killing:
            if self.proc is None and not self.stopped:
                self._start()

    def _start(self) -> None:
        self.proc = subprocess.Popen(
            boot.command("autograder.grading.grader.run.worker", package=self.package),
            env=tool_env(JUPYTER_PATH=self.jupyter_path),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            cwd=self.scratch,
        )
        assert self.proc.stderr is not None
        self.stderr = Tail(os.dup(self.proc.stderr.fileno()))
        self.proc.stderr.close()
        self.buffer = b""

    def stderr_tail(self, chars: int = 3000) -> str:
        """The end of what the worker (and the sandboxes it started, capped) wrote on stderr."""
        return self.stderr.text()[-chars:] if self.stderr else ""

    def _kill(self) -> str:
        """Kill the process and its kernels and children; the end of its stderr."""
        with self.killing:
            proc, self.proc = self.proc, None
            if proc is None:
                return ""
            if proc.returncode is None:  # not waited for: its number is still its own
                processes.kill_tree(proc.pid)  # its kernels and sandboxes too, each in a session of its own
            proc.wait()
            return self.stderr.text(wait=5.0)[-500:] if self.stderr else ""

    def run(self, job: Job, limit: float, then: Job | None = None) -> Result:
        """Send ``job`` to the worker process and wait for its result, at most ``limit`` seconds
        (then the process is killed with its kernels, and started again for the next job).
        ``then``: the job this worker gets next, whose sandboxes it starts while it grades ``job``."""
        result = self._exchange(job, limit, then)
        result.seconds = time.perf_counter() - self.started
        return result

    def ahead(self, job: Job) -> None:
        """Tell the worker process (started now if need be) that ``job`` is its next: it starts
        that job's sandboxes at once (``run.ahead``)."""
        with self.killing:
            if self.stopped:
                return
            self._running()
            assert self.proc is not None and self.proc.stdin is not None
            with contextlib.suppress(BrokenPipeError, ValueError):  # a dead process: its job will say so
                self.proc.stdin.write((AHEAD + job.to_json() + "\n").encode())
                self.proc.stdin.flush()

    def _running(self) -> None:
        """The process started again if it is not running (a crash, a job past its limit); under ``killing``."""
        if self.proc is None or self.proc.poll() is not None:
            self._kill()
            self._start()

    def _exchange(self, job: Job, limit: float, then: Job | None = None) -> Result:
        start = self.started = time.perf_counter()
        with self.killing:  # no process starts once stop() was called
            if self.stopped:
                return Result(crash="grading was stopped before this submission", lost=True)
            self._running()
            proc = self.proc
        assert proc is not None and proc.stdin is not None and proc.stdout is not None
        lines = ([AHEAD + then.to_json()] if then is not None else []) + [job.to_json()]
        try:
            proc.stdin.write("".join(line + "\n" for line in lines).encode())
            proc.stdin.flush()
        except (BrokenPipeError, ValueError):  # ValueError: stop() closed it meanwhile
            return Result(crash=f"the grading process died: {self._kill()}", lost=True)
        fd = proc.stdout.fileno()
        while b"\n" not in self.buffer:
            remaining = limit - (time.perf_counter() - start)
            if remaining <= 0:
                self._kill()
                return Result(crash=f"grading took longer than {limit:g} s and was stopped")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return Result(crash=f"the grading process died: {self._kill()}", lost=True)
                self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        text = line.decode(errors="replace")
        if not text.startswith("AUTOGRADER-RESULT "):
            return Result(crash=f"unexpected output from the grading process: {text[:200]}", lost=True)
        return Result.from_json(text.split(" ", 1)[1])

    def stop(self) -> None:
        """Kill the process and its kernels now, whatever job it is on (grading is stopping):
        the job in hand ends as a crash, and no later job starts it again."""
        with self.killing:
            self.stopped = True
            self._kill()

    def hang_up(self) -> None:
        """Tell the process that no job follows (its stdin closed): it ends on its own."""
        with self.killing, contextlib.suppress(OSError):
            if self.proc is not None and self.proc.stdin is not None:
                self.proc.stdin.close()

    def close(self) -> None:
        """Let the process end (at most 30 s), then make sure it and its kernels are gone."""
        self.hang_up()
        if self.proc is not None and self.proc.poll() is None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
        self._kill()


AHEAD = "AUTOGRADER-AHEAD "  # a line of the pipeline's: start this job's sandboxes now, it comes next


def _channels() -> tuple:
    """The job and answer channels on descriptors of their own (not inheritable), and /dev/null
    and stderr in their places: no process this one starts can read or forge them."""
    jobs = os.fdopen(os.dup(0), "r")
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    os.dup2(2, 1)
    return jobs, answers


def _end_with_pipeline(interval: float = 0.5) -> None:
    """A thread that ends this process, and the kernels and children it started, as soon as the
    pipeline that started it is gone (killed with SIGKILL: it could not stop us), so that no
    write of a grading that was stopped lands after it, beside the next grading's."""
    pipeline = os.getppid()

    def watch() -> None:
        while os.getppid() == pipeline:
            time.sleep(interval)
        processes.kill_tree(os.getpid(), itself=False)
        os._exit(1)

    threading.Thread(target=watch, name="end-with-pipeline", daemon=True).start()


def serve() -> None:
    """Grade the jobs read from stdin, one JSON line each, answering one line each: a
    long-lived worker imports nbgrader once for many notebooks."""
    _end_with_pipeline()
    jobs, answers = _channels()
    with contextlib.ExitStack() as stack:
        stack.callback(ahead.discard_all)  # no job follows: nothing started ahead outlives this process
        locked = False
        for line in jobs:
            if line.startswith(AHEAD):  # the job this worker gets next: its sandboxes start now
                ahead.start(Job.from_json(line[len(AHEAD) :]))
                continue
            job = Job.from_json(line)
            os.chdir(job.root)
            if job.lock and not locked:  # once a process: the first job that names the lock
                from autograder.grading.grader.output import gradebook

                stack.enter_context(gradebook.turns(job.lock))
                locked = True
            answers.write("AUTOGRADER-RESULT " + _answer(job).to_json() + "\n")
            answers.flush()


def _answer(job: Job) -> Result:
    """What the pipeline gets for one job: the grading's result, or what stopped it."""
    from autograder.grading.grader.run import preflight
    from autograder.grading.grader.run.independent_check import GraderError

    try:
        return preflight.run(job) if job.preflight else run(job)
    except GraderError as err:
        return Result(grader_error=str(err))
    except Exception as err:  # reported to the pipeline, which goes on
        return Result(autograde=Run(False, "", f"{type(err).__name__}: {err}"))
    finally:  # what was started ahead for this job and not used ends with it
        ahead.discard(job)


if __name__ == "__main__":
    serve()
    # Every answer is written and the gradebook's lock released: skip the interpreter's
    # teardown of torch and nbgrader (about a second, and the pipeline waits for it).
    sys.stdout.flush()  # on the worker's stderr since _channels, like stderr itself
    sys.stderr.flush()
    os._exit(0)
