"""A grading of a class: its ``Options``, what its steps share (``Grading``), what came of each
student's lab (``Outcome``), and the summary an instructor reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.grader.job import Job
from autograder.grading.grader.safe_text import printable
from autograder.grading.layout import CourseLayout
from autograder.grading.protocol.confinement import JOB_SECONDS, Limits

LEGEND = (
    "Status: ok = graded, nothing to read; check = graded, with notes above to read; FAILED = not graded, "
    "scored 0 (its note above says why); not graded = a file handed in that is no lab's notebook."
)


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
    steps: dict[str, float] = field(default_factory=dict)  # seconds of each of its worker's steps
    warm: bool = False  # its kernel and check child were started ahead (run.ahead)
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
    limits: Limits = field(default_factory=Limits)  # what each sandboxed process may use (--memory-mb)
    job_timeout: int = JOB_SECONDS  # wall clock for one student's lab, seconds
    csv_path: Path | None = None  # default: ROOT/grades.csv
    progress: bool = True
    sandbox: bool = True  # False (--no-sandbox): student code runs unconfined, for a class you trust
    package: Path | None = None  # the autograder every grading process imports (default: boot.package_dir)
    regrade: bool = False  # grade every submission, also those already graded with the same bytes


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
    staged: dict[tuple[str, str], Path] = field(default_factory=dict)  # each pair that can be graded: its bytes
    jobs: list[Job] = field(default_factory=list)
    scores: dict[tuple[str, str], tuple[float, float]] = field(default_factory=dict)  # all the gradebook holds
    late: dict[tuple[str, str], str] = field(default_factory=dict)  # intake's record: (student, lab) -> late flag
    originals: dict[str, str] = field(default_factory=dict)  # intake's record: student -> who they are
    course_key: str = ""  # the hash of what every submission is graded with (stamps.course_key)
    lab_keys: dict[str, str] = field(default_factory=dict)  # every lab of the course -> stamps.lab_key
    keys: dict[tuple[str, str], str] = field(default_factory=dict)  # (student, lab) -> stamps.submission_key
    checked_key: str = ""  # the course's state with every lab's: the start-up check runs once in each
    skipped: int = 0  # submissions not graded again: their stamps say they were, with the same bytes

    def every_outcome(self) -> Outcomes:
        """The outcome of every pair graded, sorted, then the files not graded; the notes first."""
        return Outcomes([self.outcomes[key] for key in sorted(self.outcomes)] + self.not_graded, self.not_graded.notes)


def summary(outcomes: list[Outcome]) -> str:
    """A per-student, per-lab table, then the lines that need an instructor's eyes. Every name
    and note is shown on one line (``printable``): no file or folder name can forge a line.
    ``Outcomes.notes`` (about no one submission) come first."""
    lines = [f"{'student':<20} {'lab':<28} {'score':>9}  status"]
    graded = [o for o in outcomes if o.student and not o.file]
    for o in graded:
        late = f" ({printable(o.late)})" if o.late else ""
        unconfined = "" if o.sandboxed else " (no sandbox)"
        lines.append(
            f"{printable(o.student):<20} {printable(o.lab):<28} {o.score:>4g}/{o.max_score:<4g}  "
            f"{o.status}{late}{unconfined}"
        )
    attention = [f"  {printable(note)}" for note in getattr(outcomes, "notes", [])]
    mapped = {o.student: o.original_id for o in graded if o.original_id and o.original_id != o.student}
    attention += [
        f'  {student}: the student id made from the name "{printable(name)}" (grades.csv: original_id)'
        for student, name in sorted(mapped.items())
    ]
    attention += [
        f"  {printable(o.student)} / {printable(o.lab)}: {printable(note)}" for o in graded for note in o.notes
    ]
    attention += [
        f"  not graded: {printable(o.file)}: {printable(note)}" for o in outcomes if o.file for note in o.notes
    ]
    lines.append("")
    lines.append("Needs an instructor's eyes:" if attention else "Nothing needs an instructor's eyes.")
    lines += attention
    return "\n".join(lines)


def results(outcomes: list[Outcome], layout: CourseLayout, csv_path: Path | None = None) -> str:
    """The lines that end a grading: the status column's legend, then where grades.csv, the
    feedback pages and the class report of each lab graded are (one path to a line, last)."""
    labs = sorted({o.lab for o in outcomes if o.student and not o.file})
    reports = [(lab, layout.reports / lab / "index.html") for lab in labs]
    return "\n".join(
        [
            LEGEND,
            "",
            "Results:",
            f"  grades: {csv_path or layout.grades_csv}",
            f"  feedback (STUDENT/LAB/LAB.html, one page each): {layout.feedback}",
            *(f"  class report of {lab}: {path}" for lab, path in reports if path.is_file()),
        ]
    )
