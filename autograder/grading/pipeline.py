"""``grade``: collect submissions, autograde every lab in parallel, feedback, grades.csv, summary.

Each (student, lab) is graded by nbgrader in its own process (autograder.grading.worker),
in a sandboxed kernel (autograder.grading.kernel, .sandbox), under a wall-clock limit;
whatever happens to one submission is reported and the others go on.
"""

from __future__ import annotations

import csv
import io
import os
import queue
import shutil
import sys
import tempfile
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from autograder.grading import kernel, sandbox
from autograder.grading.collect import collect, recorded_late
from autograder.grading.course import generate, labs as course_labs, tool_env
from autograder.grading.inspect import after_grading, inspect_submission
from autograder.grading.worker import WorkerProcess, lock_gradebook


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

    @property
    def status(self) -> str:
        if self.file:
            return "not graded"
        return "ok" if self.graded and not self.notes else ("check" if self.graded else "FAILED")


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


def default_db_url(root: Path) -> str:
    return "sqlite:///" + str(root / "gradebook.db")


class UnknownSelection(ValueError):
    """A --student or --lab that names nothing there is to grade (the message names what there is)."""


def _check_selection(names: list[str] | None, known: list[str], what: str, where: str) -> None:
    unknown = [n for n in names or [] if n not in known]
    if unknown:
        shown = ", ".join(known[:50]) + (f", ... ({len(known)} in all)" if len(known) > 50 else "")
        raise UnknownSelection(f"no {what} {', '.join(unknown)} {where} ({what}s: {shown or 'none'})")


# ----------------------------------------------------------------------------- gradebook

def _gradebook(db_url: str, course_id: str):
    from nbgrader.api import Gradebook

    return Gradebook(db_url, course_id)


def _course_id(root: Path) -> str:
    from autograder.grading.worker import load_config

    return load_config(root, {}).CourseDirectory.course_id or "default_course"


def _ensure_labs(root: Path, labs: list[str], db_url: str, course_id: str, scratch: Path) -> None:
    """``autograde`` needs the cells that ``generate_assignment`` records in the gradebook:
    record any lab the gradebook lacks (the release goes to a scratch folder)."""
    from nbgrader.api import MissingEntry

    missing = []
    with _gradebook(db_url, course_id) as gb:
        for lab in labs:
            try:
                if not gb.find_assignment(lab).notebooks:
                    missing.append(lab)
            except MissingEntry:
                missing.append(lab)
    for lab in missing:
        generate(root, lab, release_dir=scratch / "release", db_url=db_url)


def _record_zero(db_url: str, course_id: str, student: str, lab: str) -> None:
    """A submission nbgrader could not grade scores 0 (and still appears in grades.csv)."""
    with _gradebook(db_url, course_id) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SQLAlchemy's autoflush notes inside nbgrader
        gb.update_or_create_student(student)
        submission = gb.update_or_create_submission(lab, student)
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                grade.auto_score = 0
                grade.manual_score = None
                grade.needs_manual_grade = False
        gb.db.commit()


def _scores(db_url: str, course_id: str) -> dict[tuple[str, str], tuple[float, float]]:
    out = {}
    with _gradebook(db_url, course_id) as gb:
        for assignment in gb.assignments:
            for submission in assignment.submissions:
                out[(submission.student_id, assignment.name)] = (submission.score, submission.max_score)
    return out


def write_csv(path: Path, scores: dict[tuple[str, str], tuple[float, float]],
              late: dict[tuple[str, str], str] | None = None) -> None:
    """grades.csv: one row per student and lab, sorted, so that reruns give the same bytes;
    ``late`` holds the LMS's late flag and submission time (empty when it gave none)."""
    late = late or {}
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student_id", "lab", "score", "max_score", "late"])
    for (student, lab), (score, max_score) in sorted(scores.items()):
        writer.writerow([student, lab, f"{score:g}", f"{max_score:g}", late.get((student, lab), "")])
    path.write_text(buffer.getvalue())


# ----------------------------------------------------------------------------- run

def _failure_reason(result: dict) -> str:
    if "crash" in result:
        return result["crash"]
    text = result["autograde"]["log"] + result["autograde"]["error"]
    if "DeadKernelError" in text or "Kernel died" in text or "kernel died" in text.lower():
        return "the kernel died (os._exit, a segfault or the memory limit); scored 0"
    last = [line for line in text.strip().splitlines() if line.strip()][-1:] or ["no log"]
    return f"nbgrader autograde failed ({last[0][:160]}; see grading-logs/); scored 0"


def grade(root: Path, source: Path, options: Options | None = None) -> list[Outcome]:
    """Grade every submission in ``source`` (a folder or an LMS zip) and return the outcomes;
    writes autograded/, feedback/, the gradebook and grades.csv under ``root``."""
    options = options or Options()
    if options.sandbox and (problem := sandbox.probe()):  # refuse rather than run student code unconfined
        raise sandbox.Unavailable(problem)
    root = Path(root).resolve()
    if str(Path(sys.executable).parent) not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = tool_env()["PATH"]  # nbgrader's Gradebook calls `alembic` by name
    db_url = options.db_url or default_db_url(root)
    course_id = _course_id(root)
    known_labs = course_labs(root)
    _check_selection(options.labs, known_labs, "lab", "in solutions/")
    collected = collect(root, Path(source), known_labs)
    _check_selection(options.students, sorted({s for s, _ in collected.pairs}), "student", f"in {source}")
    submitted = root / "submitted"
    pairs = [(s, lab) for s, lab in collected.pairs
             if (not options.labs or lab in options.labs) and (not options.students or s in options.students)]
    not_graded = [Outcome("", "", graded=False, file=name, notes=[reason]) for name, reason in collected.not_graded]
    scratch = Path(tempfile.mkdtemp(prefix="autograder-grade-"))
    undo_lock = None
    every_worker: list[WorkerProcess] = []
    try:
        lock = str(scratch / "gradebook.lock") if db_url.startswith("sqlite") else ""
        if lock:
            undo_lock = lock_gradebook(lock)  # the parent takes turns too
        _ensure_labs(root, sorted({lab for _, lab in pairs}), db_url, course_id, scratch)
        outcomes: dict[tuple[str, str], Outcome] = {}
        jobs = []
        for student, lab in pairs:
            outcome = outcomes[(student, lab)] = Outcome(student, lab, sandboxed=options.sandbox)
            found = inspect_submission(submitted / student / lab, lab, root / "notebooks" / lab / f"{lab}.ipynb")
            outcome.notes += found.notes
            if found.problem:
                outcome.graded = False
                outcome.notes.append(found.problem)
                continue
            # a sandboxed kernel of its own: kernelspec, IPC folder and scratch under scratch/k/N
            config = {"CourseDirectory.db_url": db_url, **kernel.install(
                scratch / "jupyter", options.memory_mb, scratch / "k" / str(len(jobs)),
                name=f"{kernel.NAME}-{len(jobs)}", enabled=options.sandbox)}
            if options.timeout:
                config["Execute.timeout"] = options.timeout
            jobs.append({"root": str(root), "lab": lab, "student": student, "lock": lock,
                         "config": config, "jupyter_path": str(scratch / "jupyter"),
                         "memory_mb": options.memory_mb, "scratch": str(scratch), "sandbox": options.sandbox})
        workers: queue.Queue[WorkerProcess] = queue.Queue()
        for _ in range(max(1, min(options.jobs, len(jobs)))):
            workers.put(WorkerProcess(scratch, str(scratch / "jupyter")))
        every_worker += list(workers.queue)

        def run_job(job: dict) -> dict:
            worker = workers.get()
            try:
                return worker.run(job, options.job_timeout)
            finally:
                workers.put(worker)

        with ThreadPoolExecutor(max(1, options.jobs)) as pool, \
                tqdm(total=len(jobs), desc="grading", unit="notebook", ascii=True, file=sys.stderr,
                     disable=not options.progress or not jobs) as bar:
            futures = [(job, pool.submit(run_job, job)) for job in jobs]
            logs = root / "grading-logs"
            logs.mkdir(exist_ok=True)
            for job, future in futures:
                result = future.result()
                seconds = result.pop("seconds", 0.0)
                bar.update(1)
                (logs / f"{job['student']}--{job['lab']}.log").write_text(
                    result.get("crash", "") + "".join(part.get("log", "") + part.get("error", "")
                                                      for part in result.values() if isinstance(part, dict)))
                outcome = outcomes[(job["student"], job["lab"])]
                outcome.seconds = seconds
                outcome.autograde_seconds = result.get("autograde", {}).get("seconds", 0.0)
                outcome.check_seconds = result.get("check_seconds", 0.0)
                if "crash" in result or not result["autograde"]["success"]:
                    outcome.graded = False
                    outcome.notes.append(_failure_reason(result))
                elif not result.get("feedback", {}).get("success", False):
                    outcome.notes.append("feedback could not be generated")
                outcome.notes += result.get("notes", [])  # the independent check's disagreements
                outcome.notes += after_grading(root / "autograded" / job["student"] / job["lab"] / f"{job['lab']}.ipynb")
        for outcome in outcomes.values():
            if not outcome.graded:
                _record_zero(db_url, course_id, outcome.student, outcome.lab)
        scores = _scores(db_url, course_id)
        for key, outcome in outcomes.items():
            outcome.score, outcome.max_score = scores.get(key, (0.0, 0.0))
        late = recorded_late(root)
        for key, outcome in outcomes.items():
            outcome.late = late.get(key, "")
        write_csv(options.csv_path or root / "grades.csv", scores, late)
        return [outcomes[key] for key in sorted(outcomes)] + not_graded
    finally:
        for worker in every_worker:
            worker.close()
        if undo_lock:
            undo_lock()
        shutil.rmtree(scratch, ignore_errors=True)


def summary(outcomes: list[Outcome]) -> str:
    """A per-student, per-lab table, then the lines that need an instructor's eyes."""
    lines = [f"{'student':<20} {'lab':<28} {'score':>9}  status"]
    for o in outcomes:
        if not o.file:
            late = f" ({o.late})" if o.late else ""
            unconfined = "" if o.sandboxed else " (no sandbox)"
            lines.append(f"{o.student:<20} {o.lab:<28} {o.score:>4g}/{o.max_score:<4g}  {o.status}{late}{unconfined}")
    attention = [f"  {o.student} / {o.lab}: {note}" for o in outcomes if not o.file for note in o.notes]
    attention += [f"  not graded: {o.file}: {note}" for o in outcomes if o.file for note in o.notes]
    lines.append("")
    lines.append("Needs an instructor's eyes:" if attention else "Nothing needs an instructor's eyes.")
    lines += attention
    return "\n".join(lines)
