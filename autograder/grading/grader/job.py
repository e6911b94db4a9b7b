"""What the pipeline asks a worker process (``Job``) and what it answers (``Result``): typed
here, JSON on the pipe between them (one line each way), every field named; and, in the worker,
what the steps of one submission share (``Submission``), with the independent check's verdict
of each exercise (``Verdict``).

Both ends are the grader's own processes, but the worker's answer is still read as data:
``Result.from_json`` keeps the fields it knows, of the types it expects.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from autograder.grading.layout import CourseLayout
from autograder.grading.protocol.confinement import Limits


@dataclass
class Job:
    """One student's lab to grade (or, with ``preflight``, the lab's solution notebook), with all
    that grading it needs: no step of the worker goes back to intake or to the pipeline."""

    root: str  # the course folder
    lab: str
    student: str
    config: dict[str, Any] = field(default_factory=dict)  # nbgrader settings over nbgrader_config.py
    lock: str = ""  # the gradebook's lock file ("" for a server database)
    jupyter_path: str = ""  # where the job's kernelspec lies
    limits: Limits = field(default_factory=Limits)  # what each sandboxed process of the job may use
    scratch: str | None = None  # the grading's scratch folder (temporary folders go under it)
    sandbox: bool = True  # False: --no-sandbox
    package: str | None = None  # the autograder every process of the job imports
    preflight: bool = False  # grade the lab's solution notebook, to check the grader itself
    original_id: str = ""  # who the student is, as intake recorded it ("" when the id is the name)
    late: str = ""  # the LMS's late flag and hand-in time, as intake recorded it

    @property
    def layout(self) -> CourseLayout:
        return CourseLayout(Path(self.root))

    @property
    def source(self) -> Path:
        """The lab's source notebook: its test cells, hidden tests included."""
        return self.layout.source(self.lab)

    @property
    def autograded(self) -> Path:
        return self.layout.autograded_notebook(self.student, self.lab)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Job:
        data = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}
        job = cls(**{key: value for key, value in data.items() if key in names})
        return dataclasses.replace(job, limits=Limits(**job.limits)) if isinstance(job.limits, dict) else job


@dataclass
class Run:
    """One nbgrader command's outcome (autograde or generate_feedback), its log cut short."""

    success: bool = False
    log: str = ""
    error: str = ""
    seconds: float = 0.0

    @classmethod
    def of(cls, answer: dict[str, Any], seconds: float = 0.0) -> Run:
        """From what ``NbGraderAPI`` returns: the end of its log and error kept."""
        return cls(bool(answer["success"]), answer.get("log", "")[-20000:], answer.get("error", "")[-5000:], seconds)


@dataclass
class Result:
    """What came of a job: nbgrader's runs, the independent check's notes, or why it stopped."""

    autograde: Run | None = None
    feedback: Run | None = None
    notes: list[str] = field(default_factory=list)  # the independent check's disagreements, flags
    check_seconds: float = 0.0  # the independent check, its sandboxed child's start included
    crash: str | None = None  # the worker died, hung or answered nonsense
    grader_error: str | None = None  # the grader's own failure (never the student's zero)
    preflight: str | None = None  # for a preflight job: "" when the solution got full marks, else why not
    lost: bool = False  # no answer, for no fault of the student's (the grading process died or was stopped)
    seconds: float = 0.0  # wall clock of the job, as the pipeline saw it
    steps: dict[str, float] = field(default_factory=dict)  # seconds of each worker step, and of its starts
    warm: bool = False  # the job's kernel and check child were started ahead, while the one before it was graded

    @property
    def failed(self) -> bool:
        """Nothing to score: the job stopped, or nbgrader could not autograde."""
        stopped = self.crash is not None or self.grader_error is not None
        return stopped or self.autograde is None or not self.autograde.success

    def log(self) -> str:
        """Everything the job said, for grading-logs/."""
        return (self.crash or "") + "".join(run.log + run.error for run in (self.autograde, self.feedback) if run)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Result:
        data = json.loads(text)
        if not isinstance(data, dict):
            return cls(crash=f"unexpected answer from the grading process: {text[:200]}")
        runs = {
            key: Run(**{k: v for k, v in data[key].items() if k in {f.name for f in dataclasses.fields(Run)}})
            for key in ("autograde", "feedback")
            if isinstance(data.get(key), dict)
        }
        plain = {
            f.name: data[f.name]
            for f in dataclasses.fields(cls)
            if f.name in data and f.name not in ("autograde", "feedback")
        }
        return dataclasses.replace(cls(**plain), autograde=runs.get("autograde"), feedback=runs.get("feedback"))


@dataclass
class Verdict:
    """The independent check's result for one graded exercise (its test cell)."""

    passed: bool
    message: str = ""
    error: BaseException | None = field(default=None, repr=False, compare=False)  # as raised here, for the feedback
    exercise: str = ""  # the test cell's grade id
    points: float = 0.0  # what the exercise scores, once the gradebook is settled
    max_points: float = 0.0
    mistake: str = "unnamed"  # the id of the mistake the failing check named (autograder/checks/kit/mistakes.py)
    alone: bool | None = None  # error carried forward: passed with the earlier wrong answers made right (None: not run)
    given: list[str] = field(default_factory=list)  # the names made right for that run

    def to_dict(self) -> dict[str, object]:
        """The verdict as plain JSON values (the raised exception stays here)."""
        return {
            "exercise": self.exercise,
            "passed": self.passed,
            "points": self.points,
            "max_points": self.max_points,
            "message": self.message,
            "mistake": self.mistake,
            "alone": self.alone,
            "given": self.given,
        }


@dataclass
class Submission:
    """What the steps of one job share: the job, nbgrader's settings and API, the verdicts so
    far, and the result being written."""

    job: Job
    config: Any  # traitlets Config: nbgrader_config.py and the job's overrides
    api: Any  # nbgrader.apps.NbGraderAPI
    result: Result = field(default_factory=Result)
    verdicts: dict[str, Verdict] = field(default_factory=dict)

    @property
    def root(self) -> Path:
        return Path(self.job.root)

    @property
    def source(self) -> Path:
        """The lab's source notebook: its test cells, hidden tests included."""
        return self.job.source

    @property
    def autograded(self) -> Path:
        return self.job.autograded
