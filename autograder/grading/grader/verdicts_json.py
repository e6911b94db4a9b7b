"""The verdicts of one student's lab as data: ``autograded/STUDENT/LAB/verdicts.json``.

Per graded exercise (a test cell): passed, failed or left blank, the points grades.csv gets,
the stable id of the first mistake its check named (``autograder/checks/kit/mistakes.py``) and
the check's message; and the source of every answer cell as submitted. A class report is
rebuilt from these files without grading again. The grader writes them; students never see
them (they are not part of the feedback).

The schema is versioned (``SCHEMA``); ``read_verdicts`` refuses any other version::

    {"schema": "autograder.verdicts/1", "student": ..., "original_id": ... or null, "lab": ...,
     "exercises": [{"exercise", "answer_cells", "status", "points", "max_points", "mistake",
                    "message", "points_alone", "status_alone"}, ...],
     "answers": {answer cell's grade id: its source}}

``points_alone`` and ``status_alone`` are optional (a file written before them has neither, and
reads as if both were null): the points and status of the exercise *on its own*, when grading
re-ran its check with the earlier exercises it uses replaced by the reference (error carried
forward). Null means not re-run: on its own, the exercise earned what ``points`` and ``status``
say. The class report ranks exercises by the points lost on their own.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from autograder.grading.grader.in_parts.atomic import write_atomic

SCHEMA = "autograder.verdicts/1"
FILENAME = "verdicts.json"
STATUSES = ("passed", "failed", "blank")


class VerdictsFileError(ValueError):
    """A verdicts file that this version cannot read: another schema, or malformed."""


@dataclass
class ExerciseVerdict:
    """One graded exercise of one submission."""

    exercise: str  # the test cell's grade id
    answer_cells: list[str]  # the solution cells it tests (since the previous graded test cell)
    status: str  # "passed", "failed" or "blank" (every answer cell as released)
    points: float
    max_points: float
    mistake: str | None  # the first named mistake's id, "unnamed", or None unless failed
    message: str  # the check's message ("" when passed), as the feedback shows it
    points_alone: float | None = None  # on its own (earlier exercises replaced by the reference); None: not re-run
    status_alone: str | None = None  # the status on its own, one of STATUSES; None: not re-run


@dataclass
class LabVerdicts:
    """Every graded exercise of one student's lab, and the answers as submitted."""

    student: str
    original_id: str | None
    lab: str
    exercises: list[ExerciseVerdict] = field(default_factory=list)
    answers: dict[str, str] = field(default_factory=dict)
    schema: str = SCHEMA

    def to_json(self) -> str:
        data = asdict(self)
        return json.dumps({"schema": data.pop("schema"), **data}, indent=1, ensure_ascii=False)


def _expect(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise VerdictsFileError(f"{where}: expected {getattr(kind, '__name__', kind)}, found {value!r:.80}")
    return value


def _exercise(data: Any, where: str) -> ExerciseVerdict:
    _expect(data, dict, where)
    status = _expect(data.get("status"), str, f"{where}.status")
    if status not in STATUSES:
        raise VerdictsFileError(f"{where}.status: {status!r} is none of {', '.join(STATUSES)}")
    mistake = data.get("mistake")
    if (mistake is None) != (status != "failed"):
        raise VerdictsFileError(
            f"{where}.mistake: an id when failed, null otherwise (status {status}, mistake {mistake!r})"
        )
    cells = _expect(data.get("answer_cells"), list, f"{where}.answer_cells")
    alone, status_alone = data.get("points_alone"), data.get("status_alone")
    if status_alone is not None and status_alone not in STATUSES:
        raise VerdictsFileError(f"{where}.status_alone: {status_alone!r} is none of {', '.join(STATUSES)} (or null)")
    return ExerciseVerdict(
        exercise=_expect(data.get("exercise"), str, f"{where}.exercise"),
        answer_cells=[_expect(c, str, f"{where}.answer_cells") for c in cells],
        status=status,
        points=float(_expect(data.get("points"), (int, float), f"{where}.points")),
        max_points=float(_expect(data.get("max_points"), (int, float), f"{where}.max_points")),
        mistake=None if mistake is None else _expect(mistake, str, f"{where}.mistake"),
        message=_expect(data.get("message"), str, f"{where}.message"),
        points_alone=None if alone is None else float(_expect(alone, (int, float), f"{where}.points_alone")),
        status_alone=status_alone,
    )


def parse_verdicts(text: str, where: str = "verdicts") -> LabVerdicts:
    """The verdicts in ``text`` (a verdicts file's JSON), checked against the schema."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise VerdictsFileError(f"{where}: not JSON ({err})") from err
    _expect(data, dict, where)
    schema = data.get("schema")
    if schema != SCHEMA:
        raise VerdictsFileError(f"{where}: schema {schema!r} is not {SCHEMA!r}, the only one this version reads")
    original = data.get("original_id")
    answers = _expect(data.get("answers"), dict, f"{where}.answers")
    return LabVerdicts(
        student=_expect(data.get("student"), str, f"{where}.student"),
        original_id=None if original is None else _expect(original, str, f"{where}.original_id"),
        lab=_expect(data.get("lab"), str, f"{where}.lab"),
        exercises=[
            _exercise(e, f"{where}.exercises[{i}]")
            for i, e in enumerate(_expect(data.get("exercises"), list, f"{where}.exercises"))
        ],
        answers={
            _expect(k, str, f"{where}.answers"): _expect(v, str, f"{where}.answers[{k!r}]") for k, v in answers.items()
        },
    )


def read_verdicts(path: Path | str) -> LabVerdicts:
    """The verdicts file at ``path``; ``VerdictsFileError`` for an unknown schema id or a
    malformed file."""
    return parse_verdicts(Path(path).read_text(encoding="utf-8"), str(path))


def write_verdicts(path: Path, verdicts: LabVerdicts) -> None:
    """Write ``path`` anew, atomically (``atomic.write_atomic``)."""
    write_atomic(path, verdicts.to_json())
