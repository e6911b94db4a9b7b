"""The recorded verdicts of a class, read for the report: one ``Sheet`` per student and lab.

The grader writes ``autograded/STUDENT/LAB/verdicts.json`` (``grader/verdicts_json.py``, a
versioned schema) after the independent check; the report is rebuilt from those files alone,
without grading again. ``_read`` is the one place that reads a file, through that module's loader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.grader.verdicts_json import FILENAME, VerdictsFileError, read_verdicts
from autograder.grading.layout import CourseLayout


class BadVerdicts(ValueError):
    """A verdicts.json the report cannot read (the message names the file and why)."""


@dataclass(frozen=True)
class Row:
    """One exercise of one student: its status, points and the first mistake its check found."""

    exercise: str
    answer_cells: tuple[str, ...]
    status: str  # passed | failed | blank
    points: float
    max_points: float
    mistake: str | None  # a mistake id, "unnamed", or None unless failed
    message: str = ""
    points_alone: float | None = None  # on its own (error carried forward); None: not re-run, as ``points``

    @property
    def lost_alone(self) -> float:
        """The points lost on this exercise on its own: what a mistake in it costs, not one carried from before."""
        return self.max_points - (self.points if self.points_alone is None else self.points_alone)


@dataclass(frozen=True)
class Sheet:
    """A student's verdicts on one lab, with the answer cells as submitted."""

    student: str
    original_id: str | None
    lab: str
    rows: tuple[Row, ...]
    answers: dict[str, str] = field(default_factory=dict)

    @property
    def score(self) -> float:
        return sum(r.points for r in self.rows)

    @property
    def max_score(self) -> float:
        return sum(r.max_points for r in self.rows)


def _read(path: Path) -> Sheet:
    """The sheet of one verdicts.json, read and checked by the grader's own loader (verdicts_file)."""
    try:
        verdicts = read_verdicts(path)
    except (OSError, UnicodeDecodeError, VerdictsFileError) as err:
        raise BadVerdicts(f"{path}: {err}") from None
    rows = tuple(
        Row(e.exercise, tuple(e.answer_cells), e.status, e.points, e.max_points, e.mistake, e.message, e.points_alone)
        for e in verdicts.exercises
    )
    return Sheet(verdicts.student, verdicts.original_id, verdicts.lab, rows, dict(verdicts.answers))


def read_class(root: Path, lab: str) -> tuple[list[Sheet], list[str]]:
    """Every student's sheet for ``lab`` under ``root/autograded``, sorted by id, and a note for
    each file that could not be read (the report goes on without it)."""
    sheets, notes = [], []
    for path in sorted(CourseLayout(root).autograded.glob(f"*/{lab}/{FILENAME}")):
        try:
            sheets.append(_read(path))
        except BadVerdicts as err:
            notes.append(str(err))
    return sheets, notes


def recorded_labs(root: Path) -> list[str]:
    """The labs for which some student has a verdicts.json."""
    return sorted({p.parent.name for p in CourseLayout(root).autograded.glob(f"*/*/{FILENAME}")})
