"""The run station's steps on the worker processes: the start-up check alone (``check_grader``,
what ``grade --intake`` adds), or with every job after it (``grade_each``), each result
recorded in its outcome as it comes, its stamp written last."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from autograder.grading.grader.grading import Grading, Outcome
from autograder.grading.grader.in_parts import stamps
from autograder.grading.grader.job import Job, Result
from autograder.grading.grader.run.jobs import job_for
from autograder.grading.grader.run.pool import run_jobs
from autograder.grading.grader.verdict.kernel_notes import after_grading
from autograder.grading.layout import CourseLayout


def _failure_reason(result: Result) -> str:
    if result.grader_error is not None:
        return f"GRADER ERROR, not the student's: regrade this submission once it is fixed ({result.grader_error})"
    if result.crash is not None:
        return result.crash
    text = result.autograde.log + result.autograde.error if result.autograde else ""
    if "DeadKernelError" in text or "Kernel died" in text or "kernel died" in text.lower():
        return "the kernel died (os._exit, a segfault or the memory limit); scored 0"
    last = [line for line in text.strip().splitlines() if line.strip()][-1:] or ["no log"]
    return f"nbgrader autograde failed ({last[0][:160]}; see grading-logs/); scored 0"


def record_result(root: Path, outcome: Outcome, result: Result, key: str) -> None:
    """Write a job's log to grading-logs/ and put its times and notes into its outcome; then,
    last, its stamp (``key``), unless no answer came for a reason not the student's (the
    grading process died or was stopped, the grader failed): that submission is graded again."""
    layout, outcome.seconds = CourseLayout(root), result.seconds
    (layout.grading_logs / f"{outcome.student}--{outcome.lab}.log").write_text(result.log())
    outcome.autograde_seconds = result.autograde.seconds if result.autograde else 0.0
    outcome.check_seconds = result.check_seconds
    outcome.steps, outcome.warm = dict(result.steps), result.warm
    if result.failed:
        outcome.graded = False
        outcome.notes.append(_failure_reason(result))
    elif not (result.feedback and result.feedback.success):
        outcome.notes.append("feedback could not be generated")
    outcome.notes += result.notes  # the independent check's disagreements
    outcome.notes += after_grading(layout.autograded_notebook(outcome.student, outcome.lab))
    if not result.lost and result.grader_error is None:
        written = stamps.Stamp(key, outcome.graded, outcome.notes, stamps.results(layout, outcome.student, outcome.lab))
        stamps.write_stamp(layout, outcome.student, outcome.lab, written)


def _first_check(g: Grading, lab: str | None) -> Job | None:
    """The preflight of ``lab`` (its solution notebook, in a kernel of its own), unless it
    already passed in this state of the course."""
    layout = CourseLayout(g.root)
    if lab is None:
        return None
    if stamps.was_checked(layout, g.checked_key):
        return None
    print(
        f"Checking the grader before the first student: the solution of {lab} must get full marks "
        "in the sandbox (about 20 seconds)...",
        file=sys.stderr,
        flush=True,
    )
    return dataclasses.replace(job_for(g, "", lab, "preflight"), preflight=True)


def _on_workers(g: Grading, first: Job | None, jobs: list[Job]) -> None:
    """The preflight ``first`` (its pass recorded), then ``jobs`` on the worker processes,
    each result recorded in its outcome."""
    run_jobs(
        jobs,
        first,
        lambda job, result: record_result(
            g.root, g.outcomes[(job.student, job.lab)], result, g.keys[(job.student, job.lab)]
        ),
        processes=g.options.jobs,
        job_timeout=g.options.job_timeout,
        scratch=g.scratch,
        package=g.options.package,
        progress=g.options.progress,
        checked=lambda: stamps.record_checked(CourseLayout(g.root), g.checked_key),
    )


def grade_each(g: Grading) -> None:
    """The preflight (once per state of the course), then every job on the worker processes,
    each result recorded in its outcome."""
    CourseLayout(g.root).grading_logs.mkdir(exist_ok=True)
    if g.skipped:
        print(
            f"{g.skipped} submission(s) already graded with the same bytes: not graded again (--regrade does)",
            file=sys.stderr,
        )
    _on_workers(g, _first_check(g, g.jobs[0].lab if g.jobs else None), g.jobs)


def check_grader(g: Grading) -> None:
    """The preflight alone (``grade --intake``), on the first pair's lab, unless it already
    passed in this state of the course."""
    if first := _first_check(g, g.pairs[0][1] if g.pairs else None):
        _on_workers(g, first, [])
