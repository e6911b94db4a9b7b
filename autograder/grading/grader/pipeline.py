"""``grade``: collect submissions, autograde every lab in parallel, feedback, grades.csv, summary.

Each (student, lab) is graded by nbgrader in its own process (autograder.grading.grader.run.worker),
in a sandboxed kernel (autograder.grading.sandboxed.kernel, .launcher), under a wall-clock limit;
whatever happens to one submission is reported and the others go on.

``grade`` runs the steps of ``STEPS`` in order on one ``Grading``: ``intake`` (collect the
submissions into submitted/, apply --student and --lab), ``prepare`` (the gradebook knows
every lab), ``make_jobs`` (a look at each notebook, one job for each that can be graded, its
bytes staged in a folder of ours that nbgrader reads instead of submitted/), ``grade_each``
(the jobs on worker processes, each result recorded), ``score`` (0 for what could not be
graded, the scores read back), ``export`` (grades.csv) and ``report`` (the class report of each
lab, from the verdicts the workers recorded). The summary is ``outcomes.summary``.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.course import labs as course_labs
from autograder.grading.course import scripts_on_path
from autograder.grading.grader import resume
from autograder.grading.grader.intake.collect import recorded_late, recorded_originals
from autograder.grading.grader.intake.screening import after_grading, inspect_submission
from autograder.grading.grader.intake.selection import UnknownSelection, select
from autograder.grading.grader.intake.staging import stage
from autograder.grading.grader.job import Job, Result
from autograder.grading.grader.outcomes import Outcome, Outcomes, results, summary
from autograder.grading.grader.output import gradebook
from autograder.grading.grader.output.grades_csv import write_csv
from autograder.grading.grader.report.step import report
from autograder.grading.grader.run import bwrap, kernelspec, nbconfig
from autograder.grading.grader.run.pool import run_jobs
from autograder.grading.layout import CourseLayout
from autograder.grading.protocol import boot
from autograder.grading.protocol.confinement import JOB_SECONDS, Limits

__all__ = ["STEPS", "Grading", "Options", "Outcome", "Outcomes", "UnknownSelection", "grade", "results", "summary"]


@dataclass
class Options:
    jobs: int = 1
    db_url: str | None = None  # default: the course's gradebook.db (nbgrader_config.py)
    students: list[str] | None = None
    labs: list[str] | None = None
    timeout: int | None = None  # per cell, seconds (default: nbgrader_config.py)
    limits: Limits = field(default_factory=Limits)  # what each sandboxed process may use (--memory-mb)
    job_timeout: int = JOB_SECONDS  # wall clock for one student's lab, seconds
    csv_path: Path | None = None  # default: ROOT/grades.csv
    progress: bool = True
    sandbox: bool = True  # False (--no-sandbox): student code runs unconfined, for a class you trust
    package: Path | None = None  # the autograder every grading process imports (default: boot.package_dir)
    regrade: bool = False  # grade every submission, also those already graded with the same bytes


# ----------------------------------------------------------------------------- steps


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


def _job(g: Grading, student: str, lab: str, kernel: str) -> Job:
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


def look(g: Grading) -> None:
    """Every pair's outcome so far, after a look at its notebook; for each that can be graded its
    bytes staged, its key (``g.keys``; "" for one that cannot) and a job. Nothing is written
    outside the scratch folder: a shard compares these keys with its plan's before it writes."""
    layout = CourseLayout(g.root)
    for student, lab in g.pairs:
        outcome = g.outcomes[(student, lab)] = Outcome(
            student, lab, sandboxed=g.options.sandbox, original_id=g.originals.get(student, "")
        )
        found = inspect_submission(layout.submission(student, lab), lab, layout.release(lab), layout.source(lab))
        outcome.notes += found.notes
        if found.problem:
            outcome.graded, g.keys[(student, lab)] = False, ""
            outcome.notes.append(found.problem)
            continue
        job = _job(g, student, lab, str(len(g.jobs)))
        staged = stage(layout, g.scratch / "staged", job, found.data)
        g.keys[(student, lab)] = resume.submission_key(g.lab_states[lab], staged, job.original_id)
        g.jobs.append(job)


def keep_jobs(g: Grading) -> None:
    """Of the jobs ``look`` made, keep those not graded already with the same bytes (a finished
    one, its results all in place, keeps what its stamp says); the stamp of each kept is
    removed, and a pair that cannot be graded gets its stamp now."""
    layout, finished = CourseLayout(g.root), set()
    held = gradebook.held(g.db_url, g.course_id) if g.pairs else set()
    for pair, outcome in g.outcomes.items():
        stamp = resume.complete(layout, *pair, held) if g.keys[pair] else None
        if not g.keys[pair]:
            resume.write_stamp(layout, *pair, resume.Stamp("", False, outcome.notes))
        elif stamp is not None and stamp.key == g.keys[pair] and not g.options.regrade:
            outcome.graded, outcome.notes = stamp.graded, stamp.notes
            finished.add(pair)
        else:
            resume.forget(layout, *pair)
    g.skipped += len(finished)
    g.jobs = [job for job in g.jobs if (job.student, job.lab) not in finished]


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


def _record_result(root: Path, outcome: Outcome, result: Result, key: str) -> None:
    """Write a job's log to grading-logs/ and put its times and notes into its outcome; then,
    last, its stamp (``key``), unless no answer came for a reason not the student's (the
    grading process died or was stopped, the grader failed): that submission is graded again."""
    layout, outcome.seconds = CourseLayout(root), result.seconds
    (layout.grading_logs / f"{outcome.student}--{outcome.lab}.log").write_text(result.log())
    outcome.autograde_seconds = result.autograde.seconds if result.autograde else 0.0
    outcome.check_seconds = result.check_seconds
    if result.failed:
        outcome.graded = False
        outcome.notes.append(_failure_reason(result))
    elif not (result.feedback and result.feedback.success):
        outcome.notes.append("feedback could not be generated")
    outcome.notes += result.notes  # the independent check's disagreements
    outcome.notes += after_grading(layout.autograded_notebook(outcome.student, outcome.lab))
    if not result.lost and result.grader_error is None:
        written = resume.Stamp(key, outcome.graded, outcome.notes, resume.results(layout, outcome.student, outcome.lab))
        resume.write_stamp(layout, outcome.student, outcome.lab, written)


def _preflight_job(g: Grading, lab: str) -> Job:
    """A job for the preflight: ``lab``'s solution notebook, in a kernel of its own."""
    return dataclasses.replace(_job(g, "", lab, "preflight"), preflight=True)


@dataclass
class Grading:
    """What the steps of one grading share: where, with which options, and what each step left."""

    root: Path
    source: Path
    options: Options
    db_url: str
    scratch: Path
    lock: str = ""  # the gradebook's lock file ("" for a server database)
    course_id: str = ""
    pairs: list[tuple[str, str]] = field(default_factory=list)  # (student, lab) to grade
    not_graded: Outcomes = field(default_factory=Outcomes)  # files handed in but not graded, and notes
    outcomes: dict[tuple[str, str], Outcome] = field(default_factory=dict)
    jobs: list[Job] = field(default_factory=list)
    scores: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)  # all the gradebook holds
    late: dict[tuple[str, str], str] = field(default_factory=dict)  # intake's record: (student, lab) -> late flag
    originals: dict[str, str] = field(default_factory=dict)  # intake's record: student -> who they are
    state: str = ""  # the hash of what every submission is graded with (resume.course_state)
    lab_states: dict[str, str] = field(default_factory=dict)  # every lab of the course -> resume.lab_state
    keys: dict[tuple[str, str], str] = field(default_factory=dict)  # (student, lab) -> resume.submission_key
    checked_key: str = ""  # the course's state with every lab's: the start-up check runs once in each
    skipped: int = 0  # submissions not graded again: their stamps say they were, with the same bytes


def intake(g: Grading) -> None:
    """Collect the submissions into submitted/, with --student and --lab applied, and read what
    intake recorded of the class."""
    g.pairs, g.not_graded = select(g.root, g.source, g.options)
    read_record(g)


def read_record(g: Grading) -> None:
    """What intake recorded of the class (late flags, who each student is), read once for every
    later step."""
    g.late, g.originals = recorded_late(g.root), recorded_originals(g.root)


def prepare(g: Grading) -> None:
    """The gradebook knows the course and every lab to grade; the course's state is hashed."""
    g.course_id = nbconfig.course_id(g.root)
    layout = CourseLayout(g.root)
    g.state = resume.course_state(layout, Path(g.options.package or boot.package_dir(g.root)), _settings(g.options))
    g.lab_states = {lab: resume.lab_state(g.state, layout, lab) for lab in course_labs(g.root)}
    g.checked_key = resume.labs_state(g.lab_states)
    gradebook.ensure_labs(g.root, sorted({lab for _, lab in g.pairs}), g.db_url, g.course_id, g.scratch)


def make_jobs(g: Grading) -> None:
    """A job for each submission that can be graded and was not graded already with the same bytes."""
    look(g)
    keep_jobs(g)


def _first_check(g: Grading, lab: str | None) -> Job | None:
    """The preflight of ``lab``, unless it already passed in this state of the course."""
    if lab is None or resume.was_checked(CourseLayout(g.root), g.checked_key):
        return None
    print(
        f"Checking the grader before the first student: the solution of {lab} must get full marks "
        "in the sandbox (about 20 seconds)...",
        file=sys.stderr,
        flush=True,
    )
    return _preflight_job(g, lab)


def _on_workers(g: Grading, first: Job | None, jobs: list[Job]) -> None:
    """The preflight ``first`` (its pass recorded), then ``jobs`` on the worker processes,
    each result recorded in its outcome."""
    run_jobs(
        jobs,
        first,
        lambda job, result: _record_result(
            g.root, g.outcomes[(job.student, job.lab)], result, g.keys[(job.student, job.lab)]
        ),
        processes=g.options.jobs,
        job_timeout=g.options.job_timeout,
        scratch=g.scratch,
        package=g.options.package,
        progress=g.options.progress,
        checked=lambda: resume.record_checked(CourseLayout(g.root), g.checked_key),
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


def score(g: Grading) -> None:
    """Score 0 what could not be graded, then read every score back from the gradebook, with
    the late flags and original names, into the outcomes."""
    for outcome in g.outcomes.values():
        if not outcome.graded:
            gradebook.record_zero(g.db_url, g.course_id, outcome.student, outcome.lab)
    g.scores = gradebook.scores(g.db_url, g.course_id)
    for key, outcome in g.outcomes.items():
        outcome.score, outcome.max_score = g.scores.get(key, (0.0, 0.0))
        outcome.late = g.late.get(key, "")
        outcome.original_id = g.originals.get(outcome.student, "")


def export(g: Grading) -> None:
    """grades.csv: every submission the gradebook holds, not just these."""
    write_csv(g.options.csv_path or CourseLayout(g.root).grades_csv, g.scores, g.late, g.originals)


Step = Callable[[Grading], None]
# The steps of a grading, in order; a new one (a class report) is appended here.
STEPS: list[Step] = [intake, prepare, make_jobs, grade_each, score, export, report]


def run(root: Path, source: Path, options: Options, steps: list[Step], sandboxes: bool = True) -> Grading:
    """Run ``steps`` on a new ``Grading`` of the course at ``root``, after the checks that come
    before anything is written (an older config; a sandbox that cannot start, when ``sandboxes``
    are started), with the gradebook used in turns; the scratch folder is removed afterwards."""
    root = Path(root).resolve()
    options = dataclasses.replace(options, package=options.package or boot.package_dir(root))
    nbconfig.check_paths(root)  # an older copy of the config: a clear error before anything is written
    if sandboxes and options.sandbox and (problem := bwrap.probe(options.package)):  # refuse rather than run unconfined
        raise bwrap.Unavailable(problem)
    db_url = options.db_url or CourseLayout(root).db_url
    g = Grading(root, Path(source), options, db_url, Path(tempfile.mkdtemp(prefix="autograder-grade-")))
    try:
        # nbgrader_config.py puts the scripts on PATH too when it is read: inside the block
        with scripts_on_path(), gradebook.turns(gradebook.lock_for(db_url)) as g.lock:
            for step in steps:
                step(g)
        return g
    finally:
        shutil.rmtree(g.scratch, ignore_errors=True)


def outcomes(g: Grading) -> Outcomes:
    """The outcome of every pair graded, sorted, then the files not graded; the notes first."""
    return Outcomes([g.outcomes[key] for key in sorted(g.outcomes)] + g.not_graded, g.not_graded.notes)


def grade(root: Path, source: Path, options: Options | None = None, steps: list[Step] = STEPS) -> list[Outcome]:
    """Grade every submission in ``source`` (a folder or an LMS zip) and return the outcomes;
    writes autograded/, feedback/, the gradebook and grades.csv under ``root``. A submission
    already graded with the same bytes (its stamp, ``resume``) is not graded again unless
    ``options.regrade``."""
    return outcomes(run(root, source, options or Options(), steps))
