"""The recorded verdicts of a class, read for the report: one ``Sheet`` per student and lab.

The grader writes ``autograded/STUDENT/LAB/verdicts.json`` (schema ``autograder.verdicts/1``)
after the independent check; the report is rebuilt from those files alone, without grading
again. ``_read`` is the one place that parses a file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

SCHEMA = "autograder.verdicts/1"
STATUSES = ("passed", "failed", "blank")


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
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise BadVerdicts(f"{path}: not readable JSON ({err})") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        found = data.get("schema") if isinstance(data, dict) else type(data).__name__
        raise BadVerdicts(f"{path}: schema {found!r}, the report reads {SCHEMA!r}")
    try:
        rows = tuple(Row(str(e["exercise"]), tuple(map(str, e.get("answer_cells", []))), str(e["status"]),
                         float(e["points"]), float(e["max_points"]),
                         None if e.get("mistake") is None else str(e["mistake"]), str(e.get("message", "")))
                     for e in data["exercises"])
        answers = {str(k): str(v) for k, v in (data.get("answers") or {}).items()}
        sheet = Sheet(str(data["student"]), data.get("original_id"), str(data["lab"]), rows, answers)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise BadVerdicts(f"{path}: a field is missing or of the wrong type ({err!r})") from None
    if bad := [r.exercise for r in rows if r.status not in STATUSES]:
        raise BadVerdicts(f"{path}: unknown status for {', '.join(bad)} (one of {', '.join(STATUSES)})")
    return sheet


def read_class(root: Path, lab: str) -> tuple[list[Sheet], list[str]]:
    """Every student's sheet for ``lab`` under ``root/autograded``, sorted by id, and a note for
    each file that could not be read (the report goes on without it)."""
    sheets, notes = [], []
    for path in sorted((root / "autograded").glob(f"*/{lab}/verdicts.json")):
        try:
            sheets.append(_read(path))
        except BadVerdicts as err:
            notes.append(str(err))
    return sheets, notes


def recorded_labs(root: Path) -> list[str]:
    """The labs for which some student has a verdicts.json."""
    return sorted({p.parent.name for p in (root / "autograded").glob("*/*/verdicts.json")})
