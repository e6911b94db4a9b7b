"""``grade``: collect submissions, autograde every lab in parallel, feedback, grades.csv, summary.

Each (student, lab) is graded by nbgrader in its own process (autograder.grading.grader.worker),
in a sandboxed kernel (autograder.grading.sandboxed.kernel, .launcher), under a wall-clock limit;
whatever happens to one submission is reported and the others go on.

``grade`` runs these steps in order: ``_select`` (collect the submissions into submitted/,
apply --student and --lab), ``gradebook.ensure_labs`` (the gradebook knows every lab), ``_jobs`` (a
look at each notebook, one job for each that can be graded, its bytes staged in a folder of
ours that nbgrader reads instead of submitted/), ``_run`` (the jobs on worker
processes, each result recorded), ``_scores_and_csv`` (0 for what could not be graded, the
scores read back, grades.csv).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import queue
import shutil
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from autograder.grading.course import labs as course_labs
from autograder.grading.course import tool_env
from autograder.grading.grader import gradebook, kernelspec, nbconfig, preflight, sandbox
from autograder.grading.grader.collect import collect, recorded_late, recorded_originals
from autograder.grading.grader.export import write_csv
from autograder.grading.grader.files import readable_by_others
from autograder.grading.grader.ids import printable, safe_id
from autograder.grading.grader.screening import after_grading, inspect_submission
from autograder.grading.grader.staging import stage
from autograder.grading.grader.worker import WorkerProcess
from autograder.grading.protocol import boot


@dataclass
class Outcome:
    """The result of one student's lab."""

    student: str
    lab: str
    score: float = 0.0
    max_score: float = 0.0
    graded: bool = True
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0  # wall clock of its job (autograde and feedback)
    autograde_seconds: float = 0.0  # nbgrader autograde alone, kernel start included
    check_seconds: float = 0.0  # the independent check, its sandboxed child included
    file: str = ""  # a file handed in but not graded (its path in the source; notes say why)
    late: str = ""  # the LMS's late flag and submission time
    sandboxed: bool = True  # False: graded with --no-sandbox (each summary line says so)
    original_id: str = ""  # the name the student id was made from, when it had to be mapped

    @property
    def status(self) -> str:
        if self.file:
            return "not graded"
        return "ok" if self.graded and not self.notes else ("check" if self.graded else "FAILED")


class Outcomes(list):
    """The outcomes of a grading, and ``notes`` about no one submission (folders repaired, files
    others can read, how to read the late column) that the summary shows first."""

    def __init__(self, outcomes=(), notes: list[str] | None = None) -> None:
        super().__init__(outcomes)
        self.notes = list(notes or [])


@dataclass
class Options:
    jobs: int = 1
    db_url: str | None = None  # default: the course's gradebook.db (nbgrader_config.py)
    students: list[str] | None = None
    labs: list[str] | None = None
    timeout: int | None = None  # per cell, seconds (default: nbgrader_config.py)
    memory_mb: int = 4096  # address-space limit of a grading kernel
    job_timeout: int = 600  # wall clock for one student's lab, seconds
    csv_path: Path | None = None  # default: ROOT/grades.csv
    progress: bool = True
    sandbox: bool = True  # False (--no-sandbox): student code runs unconfined, for a class you trust
    package: Path | None = None  # the autograder every grading process imports (default: boot.package_dir)


def default_db_url(root: Path) -> str:
    return "sqlite:///" + str(root / "gradebook.db")


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


def _readable_by_others(root: Path, db_url: str) -> list[str]:
    """Warnings for the solutions (hidden tests) and an SQLite gradebook that any user can read."""
    gradebook = Path(db_url.removeprefix("sqlite:///")) if db_url.startswith("sqlite:///") else None
    return [f"{shown} ({path}) can be read by every user of this machine: chmod o-rwx it "
            "(see the instructor guide's hub section)"
            for shown, path in (("solutions/", root / "solutions"), ("the gradebook", gradebook))
            if path is not None and readable_by_others(path)]


def _select(root: Path, source: Path, options: Options) -> tuple[list[tuple[str, str]], Outcomes]:
    """Collect ``source`` into submitted/; the (student, lab) pairs to grade, and an outcome for
    each file that is not graded. A --lab or --student naming nothing there is an error."""
    known_labs = course_labs(root)
    _check_selection(options.labs, known_labs, "lab", "in solutions/")
    collected = collect(root, source, known_labs)
    students = [safe_id(s) for s in options.students or []]  # the name or its id, in any Unicode form
    _check_selection(students, sorted({s for s, _ in collected.pairs}), "student", f"in {source}")
    pairs = [(s, lab) for s, lab in collected.pairs
             if (not options.labs or lab in options.labs) and (not students or s in students)]
    not_graded = [Outcome("", "", graded=False, file=name, notes=[reason]) for name, reason in collected.not_graded]
    notes = collected.notes + _readable_by_others(root, options.db_url or default_db_url(root))
    return pairs, Outcomes(not_graded, notes)


def _jobs(root: Path, pairs: list[tuple[str, str]], options: Options, db_url: str, lock: str,
          scratch: Path) -> tuple[dict[tuple[str, str], Outcome], list[dict]]:
    """An outcome for every pair, and a job for each submission that can be graded (the others
    are marked not graded, with the reason, after a look at the notebook)."""
    outcomes: dict[tuple[str, str], Outcome] = {}
    jobs: list[dict] = []
    late = recorded_late(root)
    originals = recorded_originals(root)
    for student, lab in pairs:
        outcome = outcomes[(student, lab)] = Outcome(student, lab, sandboxed=options.sandbox,
                                                     original_id=originals.get(student, ""))
        found = inspect_submission(root / "submitted" / student / lab, lab, root / "notebooks" / lab / f"{lab}.ipynb")
        outcome.notes += found.notes
        if found.problem:
            outcome.graded = False
            outcome.notes.append(found.problem)
            continue
        stage(root, scratch / "staged", student, lab, found.data, late.get((student, lab), ""))
        # a sandboxed kernel of its own: kernelspec, IPC folder and scratch under scratch/k/N
        config: dict = {"CourseDirectory.db_url": db_url, **kernelspec.install(
            scratch / "jupyter", options.memory_mb, scratch / "k" / str(len(jobs)),
            name=f"{kernelspec.NAME}-{len(jobs)}", enabled=options.sandbox, package=options.package)}
        config["CourseDirectory.submitted_directory"] = str(scratch / "staged")  # absolute: replaces ROOT/submitted
        if options.timeout:
            config["Execute.timeout"] = options.timeout
        jobs.append({"root": str(root), "lab": lab, "student": student, "lock": lock,
                     "config": config, "jupyter_path": str(scratch / "jupyter"),
                     "memory_mb": options.memory_mb, "scratch": str(scratch), "sandbox": options.sandbox,
                     "package": str(options.package or boot.package_dir(root))})
    return outcomes, jobs


def _failure_reason(result: dict) -> str:
    if "grader_error" in result:
        return f"GRADER ERROR, not the student's: regrade this submission once it is fixed ({result['grader_error']})"
    if "crash" in result:
        return result["crash"]
    text = result["autograde"]["log"] + result["autograde"]["error"]
    if "DeadKernelError" in text or "Kernel died" in text or "kernel died" in text.lower():
        return "the kernel died (os._exit, a segfault or the memory limit); scored 0"
    last = [line for line in text.strip().splitlines() if line.strip()][-1:] or ["no log"]
    return f"nbgrader autograde failed ({last[0][:160]}; see grading-logs/); scored 0"


def _record_result(root: Path, outcome: Outcome, result: dict) -> None:
    """Write a job's log to grading-logs/ and put its times and notes into its outcome."""
    outcome.seconds = result.pop("seconds", 0.0)
    (root / "grading-logs" / f"{outcome.student}--{outcome.lab}.log").write_text(
        result.get("crash", "") + "".join(part.get("log", "") + part.get("error", "")
                                          for part in result.values() if isinstance(part, dict)))
    outcome.autograde_seconds = result.get("autograde", {}).get("seconds", 0.0)
    outcome.check_seconds = result.get("check_seconds", 0.0)
    if "crash" in result or "grader_error" in result or not result["autograde"]["success"]:
        outcome.graded = False
        outcome.notes.append(_failure_reason(result))
    elif not result.get("feedback", {}).get("success", False):
        outcome.notes.append("feedback could not be generated")
    outcome.notes += result.get("notes", [])  # the independent check's disagreements
    outcome.notes += after_grading(root / "autograded" / outcome.student / outcome.lab / f"{outcome.lab}.ipynb")


def _preflight_job(root: Path, jobs: list[dict], options: Options, scratch: Path) -> dict:
    """A job for the preflight: the first job's lab, in a kernel of its own."""
    config = {**jobs[0]["config"], **kernelspec.install(
        scratch / "jupyter", options.memory_mb, scratch / "k" / "preflight", name=f"{kernelspec.NAME}-preflight",
        enabled=options.sandbox, package=options.package)}
    return {**jobs[0], "config": config, "student": ""}


def _run(root: Path, jobs: list[dict], outcomes: dict[tuple[str, str], Outcome], options: Options,
         scratch: Path) -> None:
    """Grade the known-good notebook (preflight: PreflightFailed if it does not get full marks),
    then run the jobs on ``options.jobs`` worker processes, each job under its wall-clock limit,
    and record every result in its outcome as it comes (in the jobs' order)."""
    workers: queue.Queue[WorkerProcess] = queue.Queue()
    for _ in range(max(1, min(options.jobs, len(jobs)))):
        workers.put(WorkerProcess(scratch, str(scratch / "jupyter"), options.package))
    every_worker = list(workers.queue)
    if jobs:
        try:
            preflight.check(every_worker[0], _preflight_job(root, jobs, options, scratch), options.job_timeout)
        except BaseException:
            every_worker[0].close()
            raise

    def run_job(job: dict) -> dict:
        worker = workers.get()
        try:
            return worker.run(job, options.job_timeout)
        finally:
            workers.put(worker)

    (root / "grading-logs").mkdir(exist_ok=True)
    try:
        with ThreadPoolExecutor(max(1, options.jobs)) as pool, \
                tqdm(total=len(jobs), desc="grading", unit="notebook", ascii=True, file=sys.stderr,
                     disable=not options.progress or not jobs) as bar:
            futures = [(job, pool.submit(run_job, job)) for job in jobs]
            for job, future in futures:
                result = future.result()
                bar.update(1)
                _record_result(root, outcomes[(job["student"], job["lab"])], result)
    finally:
        for worker in every_worker:
            worker.close()


def _scores_and_csv(root: Path, outcomes: dict[tuple[str, str], Outcome], db_url: str, course_id: str,
                    csv_path: Path | None) -> None:
    """Score 0 what could not be graded, read every score back from the gradebook with the
    late flags, and write grades.csv (every submission the gradebook holds, not just these)."""
    for outcome in outcomes.values():
        if not outcome.graded:
            gradebook.record_zero(db_url, course_id, outcome.student, outcome.lab)
    scores = gradebook.scores(db_url, course_id)
    late = recorded_late(root)
    originals = recorded_originals(root)
    for key, outcome in outcomes.items():
        outcome.score, outcome.max_score = scores.get(key, (0.0, 0.0))
        outcome.late = late.get(key, "")
        outcome.original_id = originals.get(outcome.student, "")
    write_csv(csv_path or root / "grades.csv", scores, late, originals)


def grade(root: Path, source: Path, options: Options | None = None) -> list[Outcome]:
    """Grade every submission in ``source`` (a folder or an LMS zip) and return the outcomes;
    writes autograded/, feedback/, the gradebook and grades.csv under ``root``."""
    root = Path(root).resolve()
    options = options or Options()
    options = dataclasses.replace(options, package=options.package or boot.package_dir(root))
    if options.sandbox and (problem := sandbox.probe(options.package)):  # refuse rather than run unconfined
        raise sandbox.Unavailable(problem)
    db_url = options.db_url or default_db_url(root)
    pairs, not_graded = _select(root, Path(source), options)
    scratch = Path(tempfile.mkdtemp(prefix="autograder-grade-"))
    try:
        # nbgrader_config.py puts the scripts on PATH too when it is read: inside the block
        with _scripts_on_path(), gradebook.turns(gradebook.lock_path(scratch, db_url)) as lock:
            course_id = nbconfig.course_id(root)
            gradebook.ensure_labs(root, sorted({lab for _, lab in pairs}), db_url, course_id, scratch)
            outcomes, jobs = _jobs(root, pairs, options, db_url, lock, scratch)
            _run(root, jobs, outcomes, options, scratch)
            _scores_and_csv(root, outcomes, db_url, course_id, options.csv_path)
        return Outcomes([outcomes[key] for key in sorted(outcomes)] + not_graded, not_graded.notes)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def summary(outcomes: list[Outcome]) -> str:
    """A per-student, per-lab table, then the lines that need an instructor's eyes. Every name
    and note is shown on one line (``printable``): no file or folder name can forge a line.
    ``Outcomes.notes`` (about no one submission) come first."""
    lines = [f"{'student':<20} {'lab':<28} {'score':>9}  status"]
    graded = [o for o in outcomes if o.student and not o.file]
    for o in graded:
        late = f" ({printable(o.late)})" if o.late else ""
        unconfined = "" if o.sandboxed else " (no sandbox)"
        lines.append(f"{printable(o.student):<20} {printable(o.lab):<28} {o.score:>4g}/{o.max_score:<4g}  "
                     f"{o.status}{late}{unconfined}")
    attention = [f"  {printable(note)}" for note in getattr(outcomes, "notes", [])]
    mapped = {o.student: o.original_id for o in graded if o.original_id and o.original_id != o.student}
    attention += [f"  {student}: the student id made from the name \"{printable(name)}\" (grades.csv: original_id)"
                  for student, name in sorted(mapped.items())]
    attention += [f"  {printable(o.student)} / {printable(o.lab)}: {printable(note)}"
                  for o in graded for note in o.notes]
    attention += [f"  not graded: {printable(o.file)}: {printable(note)}"
                  for o in outcomes if o.file for note in o.notes]
    lines.append("")
    lines.append("Needs an instructor's eyes:" if attention else "Nothing needs an instructor's eyes.")
    lines += attention
    return "\n".join(lines)
