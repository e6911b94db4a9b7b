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

import contextlib
import dataclasses
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.course import labs as course_labs
from autograder.grading.course import tool_env
from autograder.grading.grader.intake.collect import collect, recorded_late, recorded_originals
from autograder.grading.grader.intake.ids import nfc, safe_id
from autograder.grading.grader.intake.screening import after_grading, inspect_submission
from autograder.grading.grader.intake.staging import stage
from autograder.grading.grader.intake.untrusted import other_people, readable_by_others
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


class UnknownSelection(ValueError):
    """A --student or --lab that names nothing there is to grade (the message names what there is)."""


def _check_selection(names: list[str] | None, known: list[str], what: str, where: str) -> None:
    unknown = [n for n in names or [] if n not in known]
    if unknown:
        shown = ", ".join(known[:50]) + (f", ... ({len(known)} in all)" if len(known) > 50 else "")
        raise UnknownSelection(f"no {what} {', '.join(unknown)} {where} ({what}s: {shown or 'none'})")


# ----------------------------------------------------------------------------- steps


@contextlib.contextmanager
def _scripts_on_path() -> Iterator[None]:
    """This Python's scripts first on PATH while the block runs (nbgrader's Gradebook calls
    ``alembic`` by name); the caller's PATH is put back afterwards."""
    before = os.environ.get("PATH")
    os.environ["PATH"] = tool_env()["PATH"]
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PATH", None)
        else:
            os.environ["PATH"] = before


def _readable_by_others(layout: CourseLayout, db_url: str) -> list[str]:
    """Warnings for the solutions (hidden tests) and an SQLite gradebook that any user can read,
    where this machine has other people's accounts (a hub, a shared server; not a laptop)."""
    gradebook = Path(db_url.removeprefix("sqlite:///")) if db_url.startswith("sqlite:///") else None
    if not other_people():
        return []
    return [
        f"{shown} ({path}) can be read by every user of this machine: chmod o-rwx it "
        "(see the instructor guide's hub section)"
        for shown, path in (("solutions/", layout.solutions), ("the gradebook", gradebook))
        if path is not None and readable_by_others(path)
    ]


def _select(root: Path, source: Path, options: Options) -> tuple[list[tuple[str, str]], Outcomes]:
    """Collect ``source`` into submitted/; the (student, lab) pairs to grade, and an outcome for
    each file that is not graded. A --lab or --student naming nothing there is an error."""
    known_labs = course_labs(root)
    _check_selection(options.labs, known_labs, "lab", "in solutions/")
    collected = collect(root, source, known_labs)
    # the id, the name, or who it is ("John Smith (Moodle 202)"), in any Unicode form
    students = [collected.ids.get(nfc(s)) or safe_id(s) for s in options.students or []]
    _check_selection(students, sorted({s for s, _ in collected.pairs}), "student", f"in {source}")
    pairs = [
        (s, lab)
        for s, lab in collected.pairs
        if (not options.labs or lab in options.labs) and (not students or s in students)
    ]
    not_graded = [Outcome("", "", graded=False, file=name, notes=[reason]) for name, reason in collected.not_graded]
    layout = CourseLayout(root)
    notes = collected.notes + _readable_by_others(layout, options.db_url or layout.db_url)
    return pairs, Outcomes(not_graded, notes)


def _jobs(g: Grading) -> tuple[dict[tuple[str, str], Outcome], list[Job]]:
    """An outcome for every pair, and a job for each submission that can be graded (the others
    are marked not graded, with the reason, after a look at the notebook)."""
    outcomes: dict[tuple[str, str], Outcome] = {}
    jobs: list[Job] = []
    layout, options, scratch = CourseLayout(g.root), g.options, g.scratch
    for student, lab in g.pairs:
        outcome = outcomes[(student, lab)] = Outcome(
            student, lab, sandboxed=options.sandbox, original_id=g.originals.get(student, "")
        )
        found = inspect_submission(layout.submission(student, lab), lab, layout.release(lab), layout.source(lab))
        outcome.notes += found.notes
        if found.problem:
            outcome.graded = False
            outcome.notes.append(found.problem)
            continue
        # a sandboxed kernel of its own: kernelspec, IPC folder and scratch under scratch/k/N
        config: dict = {
            "CourseDirectory.db_url": g.db_url,
            **kernelspec.install(
                scratch / "jupyter",
                options.limits,
                scratch / "k" / str(len(jobs)),
                name=f"{kernelspec.NAME}-{len(jobs)}",
                enabled=options.sandbox,
                package=options.package,
            ),
        }
        config["CourseDirectory.submitted_directory"] = str(scratch / "staged")  # absolute: replaces ROOT/submitted
        if options.timeout:
            config["Execute.timeout"] = options.timeout
        job = Job(
            str(g.root),
            lab,
            student,
            config,
            lock=g.lock,
            jupyter_path=str(scratch / "jupyter"),
            limits=options.limits,
            scratch=str(scratch),
            sandbox=options.sandbox,
            package=str(options.package or boot.package_dir(g.root)),
            original_id=g.originals.get(student, ""),
            late=g.late.get((student, lab), ""),
        )
        stage(layout, scratch / "staged", job, found.data)
        jobs.append(job)
    return outcomes, jobs


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


def _record_result(root: Path, outcome: Outcome, result: Result) -> None:
    """Write a job's log to grading-logs/ and put its times and notes into its outcome."""
    outcome.seconds = result.seconds
    (CourseLayout(root).grading_logs / f"{outcome.student}--{outcome.lab}.log").write_text(result.log())
    outcome.autograde_seconds = result.autograde.seconds if result.autograde else 0.0
    outcome.check_seconds = result.check_seconds
    if result.failed:
        outcome.graded = False
        outcome.notes.append(_failure_reason(result))
    elif not (result.feedback and result.feedback.success):
        outcome.notes.append("feedback could not be generated")
    outcome.notes += result.notes  # the independent check's disagreements
    outcome.notes += after_grading(CourseLayout(root).autograded_notebook(outcome.student, outcome.lab))


def _preflight_job(root: Path, jobs: list[Job], options: Options, scratch: Path) -> Job:
    """A job for the preflight: the first job's lab, in a kernel of its own."""
    config = {
        **jobs[0].config,
        **kernelspec.install(
            scratch / "jupyter",
            options.limits,
            scratch / "k" / "preflight",
            name=f"{kernelspec.NAME}-preflight",
            enabled=options.sandbox,
            package=options.package,
        ),
    }
    return dataclasses.replace(jobs[0], config=config, student="", preflight=True)


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


def intake(g: Grading) -> None:
    """Collect the submissions into submitted/, with --student and --lab applied, and read what
    intake recorded of the class (late flags, who each student is) once, for every later step."""
    g.pairs, g.not_graded = _select(g.root, g.source, g.options)
    g.late, g.originals = recorded_late(g.root), recorded_originals(g.root)


def prepare(g: Grading) -> None:
    """The gradebook knows the course and every lab to grade."""
    g.course_id = nbconfig.course_id(g.root)
    gradebook.ensure_labs(g.root, sorted({lab for _, lab in g.pairs}), g.db_url, g.course_id, g.scratch)


def make_jobs(g: Grading) -> None:
    g.outcomes, g.jobs = _jobs(g)


def grade_each(g: Grading) -> None:
    """The preflight, then every job on the worker processes, each result recorded in its outcome."""
    CourseLayout(g.root).grading_logs.mkdir(exist_ok=True)
    first = _preflight_job(g.root, g.jobs, g.options, g.scratch) if g.jobs else None
    if first is not None:
        print(
            f"Checking the grader before the first student: the solution of {first.lab} must get full marks "
            "in the sandbox (about 20 seconds)...",
            file=sys.stderr,
            flush=True,
        )
    run_jobs(
        g.jobs,
        first,
        lambda job, result: _record_result(g.root, g.outcomes[(job.student, job.lab)], result),
        processes=g.options.jobs,
        job_timeout=g.options.job_timeout,
        scratch=g.scratch,
        package=g.options.package,
        progress=g.options.progress,
    )


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


# The steps of a grading, in order; a new one (a class report) is appended here.
STEPS: list[Callable[[Grading], None]] = [intake, prepare, make_jobs, grade_each, score, export, report]


def grade(
    root: Path, source: Path, options: Options | None = None, steps: list[Callable[[Grading], None]] = STEPS
) -> list[Outcome]:
    """Grade every submission in ``source`` (a folder or an LMS zip) and return the outcomes;
    writes autograded/, feedback/, the gradebook and grades.csv under ``root``."""
    root = Path(root).resolve()
    options = options or Options()
    options = dataclasses.replace(options, package=options.package or boot.package_dir(root))
    nbconfig.check_paths(root)  # an older copy of the config: a clear error before anything is written
    if options.sandbox and (problem := bwrap.probe(options.package)):  # refuse rather than run unconfined
        raise bwrap.Unavailable(problem)
    db_url = options.db_url or CourseLayout(root).db_url
    g = Grading(root, Path(source), options, db_url, Path(tempfile.mkdtemp(prefix="autograder-grade-")))
    try:
        # nbgrader_config.py puts the scripts on PATH too when it is read: inside the block
        with _scripts_on_path(), gradebook.turns(gradebook.lock_path(g.scratch, db_url)) as g.lock:
            for step in steps:
                step(g)
        return Outcomes([g.outcomes[key] for key in sorted(g.outcomes)] + g.not_graded, g.not_graded.notes)
    finally:
        shutil.rmtree(g.scratch, ignore_errors=True)
