"""What collecting learnt about a class that its files cannot be trusted to say again: the
LMS's late flags and submission times, and who each student id is: the name it was made from,
with what the LMS records as unique beside it (``John Smith (Moodle 201)``). An id, once given,
stays that person's: a later collection gives it to no one else.

Kept in one file of ours, ``ROOT/submitted/.intake.json``, not beside the notebooks: a file
beside a notebook may have been written by the student (nbgrader's exchange copies whatever
the student's submit put there, ``timestamp.txt`` included), so nothing there decides a grade.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.grader.intake.untrusted import Refused, read_plain
from autograder.grading.layout import CourseLayout

NAME = ".intake.json"


@dataclass
class IntakeRecord:
    late: dict[tuple[str, str], str] = field(default_factory=dict)  # (student, lab): "LATE", a time, or both
    identities: dict[str, str] = field(default_factory=dict)  # every student id: who it is

    @property
    def originals(self) -> dict[str, str]:
        """The ids that differ from who they are (a mapped name, or an LMS account): id: who."""
        return {student: who for student, who in self.identities.items() if who != student}


def path(root: Path) -> Path:
    return CourseLayout(Path(root)).submitted / NAME


def load(root: Path) -> IntakeRecord:
    """The record kept so far (none when the file is missing or damaged)."""
    try:
        data = json.loads(read_plain(path(root)))
        late = {(s, lab): str(v) for s, labs in data.get("late", {}).items() for lab, v in labs.items() if v}
        # "originals" is how files written before identities were kept name the mapped ids
        identities = {str(k): str(v) for key in ("originals", "identities") for k, v in data.get(key, {}).items()}
        return IntakeRecord(late, identities)
    except (OSError, Refused, ValueError, AttributeError, TypeError):
        return IntakeRecord()


def save(root: Path, record: IntakeRecord) -> None:
    late: dict[str, dict[str, str]] = {}
    for (student, lab), value in sorted(record.late.items()):
        if value:
            late.setdefault(student, {})[lab] = value
    target = path(root)
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(NAME + ".new")
    temporary.unlink(missing_ok=True)
    temporary.write_text(
        json.dumps({"late": late, "identities": dict(sorted(record.identities.items()))}, ensure_ascii=False, indent=1)
        + "\n"
    )
    os.replace(temporary, target)
