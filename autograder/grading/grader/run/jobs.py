"""The run station's steps before the workers: the course's state hashed and the gradebook told
every lab (``prepare``), then a ``Job`` for each submission staged, with the key it is graded
with (``make_jobs``: ``plan_jobs``, then ``keep_jobs``, which leaves out what was graded
already with the same bytes)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from autograder.grading.course import labs as course_labs
from autograder.grading.grader.grading import Grading, Options
from autograder.grading.grader.in_parts import stamps
from autograder.grading.grader.job import Job
from autograder.grading.grader.output import gradebook
from autograder.grading.grader.run import kernelspec, nbconfig
from autograder.grading.layout import CourseLayout
from autograder.grading.protocol import boot


def _config(g: Grading, kernel: str) -> dict:
    """nbgrader's settings for one job: the gradebook, and a sandboxed kernel of its own
    (kernelspec, IPC folder and scratch under scratch/k/KERNEL)."""
    options = g.options
    config: dict = {
        "CourseDirectory.db_url": g.db_url,
        **kernelspec.install(
            g.scratch / "jupyter",
            options.limits,
            g.scratch / "k" / kernel,
            name=f"{kernelspec.NAME}-{kernel}",
            enabled=options.sandbox,
            package=options.package,
        ),
    }
    config["CourseDirectory.submitted_directory"] = str(g.scratch / "staged")  # absolute: replaces ROOT/submitted
    if options.timeout:
        config["Execute.timeout"] = options.timeout
    return config


def job_for(g: Grading, student: str, lab: str, kernel: str) -> Job:
    """The job of ``student``'s ``lab`` (``kernel``: the name of its kernel of its own)."""
    options = g.options
    return Job(
        str(g.root),
        lab,
        student,
        _config(g, kernel),
        lock=g.lock,
        jupyter_path=str(g.scratch / "jupyter"),
        limits=options.limits,
        scratch=str(g.scratch),
        sandbox=options.sandbox,
        package=str(options.package or boot.package_dir(g.root)),
        original_id=g.originals.get(student, ""),
        late=g.late.get((student, lab), ""),
    )


def _settings(options: Options) -> dict:
    """The options that change what a grading writes (the course's state hashes them)."""
    return {
        "timeout": options.timeout,
        "limits": dataclasses.asdict(options.limits),
        "job_timeout": options.job_timeout,
        "sandbox": options.sandbox,
    }


def prepare(g: Grading) -> None:
    """The gradebook knows the course and every lab to grade; the course's state is hashed."""
    g.course_id = nbconfig.course_id(g.root)
    layout = CourseLayout(g.root)
    g.course_key = stamps.course_key(layout, Path(g.options.package or boot.package_dir(g.root)), _settings(g.options))
    g.lab_keys = {lab: stamps.lab_key(g.course_key, layout, lab) for lab in course_labs(g.root)}
    g.checked_key = stamps.preflight_key(g.lab_keys)
    gradebook.ensure_labs(g.root, sorted({lab for _, lab in g.pairs}), g.db_url, g.course_id, g.scratch)


def plan_jobs(g: Grading) -> None:
    """A job for each pair staged, and every pair's key (``g.keys``; "" for one that cannot be
    graded). Nothing is written outside the scratch folder: a shard compares these keys with its
    plan's before it writes."""
    for student, lab in g.pairs:
        if (student, lab) not in g.staged:
            g.keys[(student, lab)] = ""
            continue
        planned = job_for(g, student, lab, str(len(g.jobs)))
        g.keys[(student, lab)] = stamps.submission_key(g.lab_keys[lab], g.staged[(student, lab)], planned.original_id)
        g.jobs.append(planned)


def keep_jobs(g: Grading) -> None:
    """Of the jobs ``plan_jobs`` made, keep those not graded already with the same bytes (a
    finished one, its results all in place, keeps what its stamp says); the stamp of each kept
    is removed, and a pair that cannot be graded gets its stamp now."""
    layout, finished = CourseLayout(g.root), set()
    held = gradebook.held(g.db_url, g.course_id) if g.pairs else set()
    for pair, outcome in g.outcomes.items():
        stamp = stamps.complete(layout, *pair, held) if g.keys[pair] else None
        if not g.keys[pair]:
            stamps.write_stamp(layout, *pair, stamps.Stamp("", False, outcome.notes))
        elif stamp is not None and stamp.key == g.keys[pair] and not g.options.regrade:
            outcome.graded, outcome.notes = stamp.graded, stamp.notes
            finished.add(pair)
        else:
            stamps.forget(layout, *pair)
    g.skipped += len(finished)
    g.jobs = [job for job in g.jobs if (job.student, job.lab) not in finished]


def make_jobs(g: Grading) -> None:
    """A job for each submission staged that was not graded already with the same bytes."""
    plan_jobs(g)
    keep_jobs(g)
