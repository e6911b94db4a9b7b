"""Where a course keeps its files: the one description of the course folder's layout, read by
the course's tools and by every station of grading (``CourseLayout``).

The names agree with the ``CourseDirectory`` settings of the course's ``nbgrader_config.py``
(``tests/grading/test_layout.py`` holds them together): nbgrader finds the same folders there.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class CourseLayout:
    """The folders and files of one course, under its root."""

    root: Path

    @property
    def solutions(self) -> Path:
        """The labs' sources: solutions and hidden tests (nbgrader's ``source``)."""
        return self.root / "solutions"

    @property
    def notebooks(self) -> Path:
        """The labs as released to students (nbgrader's ``release``)."""
        return self.root / "notebooks"

    @property
    def submitted(self) -> Path:
        """What intake brought in: ``STUDENT/LAB/LAB.ipynb``."""
        return self.root / "submitted"

    @property
    def autograded(self) -> Path:
        """What grading made of each submission, and its ``verdicts.json``."""
        return self.root / "autograded"

    @property
    def feedback(self) -> Path:
        return self.root / "feedback"

    @property
    def reports(self) -> Path:
        """The class reports, ``LAB/index.html`` and CSV files."""
        return self.root / "reports"

    @property
    def exports(self) -> Path:
        """The files an LMS imports, ``LMS/LAB/`` (``python -m autograder export``)."""
        return self.root / "exports"

    @property
    def grading_logs(self) -> Path:
        """One log per graded submission, ``STUDENT--LAB.log``."""
        return self.root / "grading-logs"

    @property
    def grading_state(self) -> Path:
        """What the next grading reads of the earlier ones, under ``grading-logs/state``: the
        start-up check's record, a grading in shards' plan and its shards' states
        (``grader/in_parts/stamps``, ``grader/in_parts/shards``)."""
        return self.grading_logs / "state"

    def stamp(self, student: str, lab: str) -> Path:
        """The stamp of a finished submission, beside its log (``grader/in_parts/stamps``)."""
        return self.grading_logs / f"{student}--{lab}.stamp.json"

    @property
    def grades_csv(self) -> Path:
        return self.root / "grades.csv"

    @property
    def db_url(self) -> str:
        """The gradebook unless ``--db`` names another: SQLite beside the course."""
        return "sqlite:///" + str(self.root / "gradebook.db")

    def source(self, lab: str) -> Path:
        """The lab's source notebook: its test cells, hidden tests included."""
        return self.solutions / lab / f"{lab}.ipynb"

    def release(self, lab: str) -> Path:
        """The lab's notebook as students got it."""
        return self.notebooks / lab / f"{lab}.ipynb"

    def submission(self, student: str, lab: str) -> Path:
        """The folder of one student's lab under ``submitted``."""
        return self.submitted / student / lab

    def autograded_notebook(self, student: str, lab: str) -> Path:
        return self.autograded / student / lab / f"{lab}.ipynb"
