"""``grade``: collect submissions, autograde every lab in parallel, feedback, grades.csv, summary.

Each (student, lab) is graded by nbgrader in its own process (autograder.grading.worker),
in a kernel whose memory is limited (autograder.grading.kernel), under a wall-clock limit;
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
import zipfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from autograder.grading import kernel
from autograder.grading.course import generate, labs as course_labs, nbgrader, tool_env
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

    @property
    def status(self) -> str:
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


def default_db_url(root: Path) -> str:
    return "sqlite:///" + str(root / "gradebook.db")


# ----------------------------------------------------------------------------- collect

def _zip_collect(root: Path, archive: Path, labs: list[str]) -> None:
    """An LMS download: nbgrader zip_collect, one lab at a time. Files are named
    ``STUDENT_..._LAB.ipynb`` (anything between the student id and the lab is ignored)."""
    names = [n for n in zipfile.ZipFile(archive).namelist() if n.endswith(".ipynb")]
    for lab in labs:
        if not any(n.endswith(f"{lab}.ipynb") for n in names):
            continue
        folder = root / "downloaded" / lab / "archive"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(archive, folder / archive.name)
        regexp = rf"^.*/(?P<student_id>[A-Za-z0-9][A-Za-z0-9.-]*)_(?:[^/]*_)?(?P<file_id>{lab})\.ipynb$"
        nbgrader(root, "zip_collect", lab, "--force", f"--FileNameCollectorPlugin.named_regexp={regexp}")


def collect(root: Path, source: Path, labs: list[str]) -> None:
    """Bring submissions into ROOT/submitted/STUDENT/LAB/: from a zip (LMS download), or a
    folder laid out STUDENT/LAB/*.ipynb or STUDENT/LAB.ipynb (copied over earlier copies)."""
    submitted = root / "submitted"
    if source.is_file() and zipfile.is_zipfile(source):
        _zip_collect(root, source, labs)
        return
    if source.resolve() == submitted.resolve():
        return
    for student in sorted(p for p in source.iterdir() if p.is_dir()):
        for lab in labs:
            dest = submitted / student.name / lab
            if (student / lab).is_dir():
                shutil.rmtree(dest, ignore_errors=True)
                shutil.copytree(student / lab, dest)
            elif (student / f"{lab}.ipynb").is_file():
                shutil.rmtree(dest, ignore_errors=True)
                dest.mkdir(parents=True)
                shutil.copy2(student / f"{lab}.ipynb", dest / f"{lab}.ipynb")


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


def write_csv(path: Path, scores: dict[tuple[str, str], tuple[float, float]]) -> None:
    """grades.csv: one row per student and lab, sorted, so that reruns give the same bytes."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["student_id", "lab", "score", "max_score"])
    for (student, lab), (score, max_score) in sorted(scores.items()):
        writer.writerow([student, lab, f"{score:g}", f"{max_score:g}"])
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
    root = Path(root).resolve()
    if str(Path(sys.executable).parent) not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = tool_env()["PATH"]  # nbgrader's Gradebook calls `alembic` by name
    db_url = options.db_url or default_db_url(root)
    course_id = _course_id(root)
    wanted_labs = options.labs or course_labs(root)
    collect(root, Path(source), wanted_labs)
    submitted = root / "submitted"
    pairs = sorted((s.name, lab) for s in submitted.iterdir() if s.is_dir()
                   for lab in wanted_labs if (s / lab).is_dir()) if submitted.is_dir() else []
    if options.students:
        pairs = [(s, lab) for s, lab in pairs if s in options.students]
    scratch = Path(tempfile.mkdtemp(prefix="autograder-grade-"))
    undo_lock = None
    every_worker: list[WorkerProcess] = []
    try:
        lock = str(scratch / "gradebook.lock") if db_url.startswith("sqlite") else ""
        if lock:
            undo_lock = lock_gradebook(lock)  # the parent takes turns too
        _ensure_labs(root, sorted({lab for _, lab in pairs}), db_url, course_id, scratch)
        kernel.install(scratch / "jupyter", options.memory_mb)
        outcomes: dict[tuple[str, str], Outcome] = {}
        jobs = []
        for student, lab in pairs:
            outcome = outcomes[(student, lab)] = Outcome(student, lab)
            found = inspect_submission(submitted / student / lab, lab, root / "notebooks" / lab / f"{lab}.ipynb")
            outcome.notes += found.notes
            if found.problem:
                outcome.graded = False
                outcome.notes.append(found.problem)
                continue
            config = {"CourseDirectory.db_url": db_url, "Execute.kernel_name": kernel.NAME}
            if options.timeout:
                config["Execute.timeout"] = options.timeout
            jobs.append({"root": str(root), "lab": lab, "student": student, "lock": lock,
                         "config": config, "jupyter_path": str(scratch / "jupyter")})
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
                                                      for key, part in result.items() if key != "crash"))
                outcome = outcomes[(job["student"], job["lab"])]
                outcome.seconds = seconds
                outcome.autograde_seconds = result.get("autograde", {}).get("seconds", 0.0)
                if "crash" in result or not result["autograde"]["success"]:
                    outcome.graded = False
                    outcome.notes.append(_failure_reason(result))
                elif not result.get("feedback", {}).get("success", False):
                    outcome.notes.append("feedback could not be generated")
                outcome.notes += after_grading(root / "autograded" / job["student"] / job["lab"] / f"{job['lab']}.ipynb")
        for outcome in outcomes.values():
            if not outcome.graded:
                _record_zero(db_url, course_id, outcome.student, outcome.lab)
        scores = _scores(db_url, course_id)
        for key, outcome in outcomes.items():
            outcome.score, outcome.max_score = scores.get(key, (0.0, 0.0))
        write_csv(options.csv_path or root / "grades.csv", scores)
        return [outcomes[key] for key in sorted(outcomes)]
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
        lines.append(f"{o.student:<20} {o.lab:<28} {o.score:>4g}/{o.max_score:<4g}  {o.status}")
    attention = [f"  {o.student} / {o.lab}: {note}" for o in outcomes for note in o.notes]
    lines.append("")
    lines.append("Needs an instructor's eyes:" if attention else "Nothing needs an instructor's eyes.")
    lines += attention
    return "\n".join(lines)
