"""The recorded verdicts of a class, read for the report: one ``Sheet`` per student and lab.

The grader writes ``autograded/STUDENT/LAB/verdicts.json`` (``grader/verdicts_json.py``, a
versioned schema) after the independent check; the report is rebuilt from those files,
without grading again. ``_read`` is the one place that reads a file, through that module's loader.

Beside each, the autograded notebook (``LAB.ipynb``) gives the code cells the student wrote, in
order: the answer cells and the cells they added (the course's own are restored by nbgrader),
since an answer may stand in a cell of the student's own under the untouched stub (``bound``).
It is read as data, never run. Where it is not there, the answer cells recorded in
verdicts.json stand for it; where it cannot be read, a note says so and they stand for it too.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import nbformat

from autograder import notebook_cells
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
    cells: tuple[tuple[str | None, str], ...] = ()  # the code cells the student wrote: (answer cell or None, source)

    @property
    def score(self) -> float:
        return sum(r.points for r in self.rows)

    @property
    def max_score(self) -> float:
        return sum(r.max_points for r in self.rows)


class UnreadableNotebook(ValueError):
    """An autograded notebook the report cannot read (the message names it and what is compared instead)."""


def _written(notebook: Path) -> tuple[tuple[str | None, str], ...]:
    """The code cells the student wrote in ``notebook``, in order: answer cells by grade id, the
    other cells without a grade id (those they added) as None, as the verdict station's
    ``retyped`` finds them; () when there is no notebook."""
    if not notebook.is_file():
        return ()
    try:
        nb = nbformat.read(str(notebook), as_version=4)
        return tuple(
            (notebook_cells.name_of(c) if notebook_cells.is_plain_answer(c) else None, str(c.source))
            for c in nb.cells
            if c.cell_type == "code" and (notebook_cells.is_plain_answer(c) or notebook_cells.name_of(c) == "None")
        )
    except Exception as err:  # a file a student's code shaped: whatever breaks, the record stands
        raise UnreadableNotebook(
            f"{notebook}: not readable ({type(err).__name__}: {err}); its recorded answer cells are compared instead"
        ) from None


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
    each file that could not be read (a verdicts.json: the report goes on without that student;
    a notebook: with the answer cells its verdicts.json recorded)."""
    sheets, notes = [], []
    for path in sorted(CourseLayout(root).autograded.glob(f"*/{lab}/{FILENAME}")):
        try:
            sheet = _read(path)
        except BadVerdicts as err:
            notes.append(str(err))
            continue
        try:
            sheets.append(replace(sheet, cells=_written(path.parent / f"{lab}.ipynb")))
        except UnreadableNotebook as err:
            notes.append(str(err))
            sheets.append(sheet)
    return sheets, notes


def recorded_labs(root: Path) -> list[str]:
    """The labs for which some student has a verdicts.json."""
    return sorted({p.parent.name for p in CourseLayout(root).autograded.glob(f"*/*/{FILENAME}")})
