"""What grading wrote about one lab, read for an LMS: each student's score from the gradebook
(``output.gradebook.scores``), who they are in the LMS from intake's record
(``submitted/.intake.json``: ``John Smith (Moodle 201)``, ``smithjohn (Canvas 501)``,
``eve (Blackboard eve)``), the LMS's late flag, the points error carried forward earned
(``verdicts.json``) and the feedback page. Read only: nothing here writes the course."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from autograder.grading.grader.intake import intake_record
from autograder.grading.grader.output import gradebook
from autograder.grading.grader.run.nbconfig import course_id
from autograder.grading.grader.verdicts_json import FILENAME, VerdictsFileError, read_verdicts
from autograder.grading.layout import CourseLayout
from autograder.grading.lms import LMSES

__all__ = ["LMSES", "LmsRecord", "carried_forward", "for_lms", "identity", "read"]
# who a student is, as intake records it: the name, then the LMS and what it records as unique
_ACCOUNT = re.compile(r"^(?P<name>.*) \((?P<lms>Moodle|Canvas|Blackboard) (?P<account>[^()]+)\)$")


@dataclass
class LmsRecord:
    """One student's graded lab, with who they are in the LMS ("" where intake read no LMS)."""

    student: str  # the id grading gave
    lab: str
    score: float
    max_score: float
    who: str  # as intake recorded it (the id itself when nothing else was recorded)
    lms: str = ""  # "moodle", "canvas", "blackboard" or ""
    name: str = ""  # the name the LMS gave (Moodle's full name, Canvas's name, Blackboard's user name)
    account: str = ""  # Moodle's participant id, Canvas's user id, Blackboard's user name
    late: str = ""  # the LMS's "LATE", a submission time, or both
    carried: float = 0.0  # points earned by error carried forward
    carried_exercises: tuple[str, ...] = ()
    feedback: Path | None = None  # the student's feedback page, where there is one

    @property
    def comment(self) -> str:
        """The feedback comment: the score, then the late flag and error carried forward."""
        parts = [f"Autograded: {self.score:g}/{self.max_score:g}."]
        if self.late:
            parts.append(f"Late: {self.late}.")
        if self.carried:
            parts.append(
                f"Error carried forward: {self.carried:g} of these points ({', '.join(self.carried_exercises)}) "
                "were earned by answers that were right once an earlier mistake was set aside."
            )
        return " ".join(parts)


def identity(who: str) -> tuple[str, str, str]:
    """(lms, name, account) of who intake recorded: ``("moodle", "John Smith", "201")`` for
    ``John Smith (Moodle 201)``; ``("", who, "")`` when no LMS is recorded (a folder's student)."""
    if match := _ACCOUNT.match(who):
        return match["lms"].lower(), match["name"], match["account"].strip()
    return "", who, ""


def carried_forward(root: Path, student: str, lab: str) -> tuple[float, tuple[str, ...]]:
    """The points an exercise earned only by error carried forward (it failed as written and
    passed once the earlier exercises were made right), from ``verdicts.json``; none when the
    file is missing or unreadable."""
    path = CourseLayout(root).autograded / student / lab / FILENAME
    try:
        verdicts = read_verdicts(path)
    except (OSError, VerdictsFileError):
        return 0.0, ()
    carried = [e for e in verdicts.exercises if e.status != "passed" and e.status_alone == "passed"]
    return sum(e.points_alone or 0.0 for e in carried), tuple(e.exercise for e in carried)


def read(root: Path, lab: str, db_url: str | None = None) -> list[LmsRecord]:
    """Every student of ``lab`` the gradebook holds, sorted by id, with what intake recorded."""
    root = Path(root)
    layout = CourseLayout(root)
    recorded = intake_record.load(root)
    url, course = db_url or layout.db_url, course_id(root)
    if not any(graded_lab == lab for _, graded_lab in gradebook.held(url, course)):  # nor is a gradebook made
        return []
    scores = gradebook.scores(url, course)
    out = []
    for (student, graded_lab), (score, max_score) in sorted(scores.items()):
        if graded_lab != lab:
            continue
        who = recorded.identities.get(student, student)
        lms, name, account = identity(who)
        carried, exercises = carried_forward(root, student, lab)
        page = layout.feedback / student / lab / f"{lab}.html"
        out.append(
            LmsRecord(
                student=student,
                lab=lab,
                score=float(score or 0.0),
                max_score=float(max_score or 0.0),
                who=who,
                lms=lms,
                name=name,
                account=account,
                late=recorded.late.get((student, lab), ""),
                carried=carried,
                carried_exercises=exercises,
                feedback=page if page.is_file() and not page.is_symlink() else None,
            )
        )
    return out


_ID_NAMES = {"moodle": "Moodle participant id", "canvas": "Canvas user id", "blackboard": "Blackboard user name"}


def for_lms(records: list[LmsRecord], lms: str) -> tuple[list[LmsRecord], list[tuple[str, str]]]:
    """The records ``lms`` knows (intake read its id), and every other student with the reason:
    a student graded from a folder, or from another LMS, is never written under an id of ours."""
    mine, others = [], []
    for record in records:
        if record.lms == lms and record.account:
            mine.append(record)
        elif record.lms:
            others.append((record.student, f"handed in through {record.lms.title()} ({record.who}), not {lms.title()}"))
        else:
            others.append((record.student, f"no {_ID_NAMES[lms]} recorded (graded from a folder: {record.who})"))
    return mine, others
