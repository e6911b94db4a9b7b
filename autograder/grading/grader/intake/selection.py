"""Which (student, lab) pairs a grading grades: the submissions collected into submitted/,
with ``--student`` and ``--lab`` applied, and the files and notes that are no one pair's."""

from __future__ import annotations

from pathlib import Path

from autograder.grading.course import labs as course_labs
from autograder.grading.grader.grading import Options, Outcome, Outcomes
from autograder.grading.grader.intake.collect import collect
from autograder.grading.grader.intake.ids import nfc, safe_id
from autograder.grading.grader.intake.untrusted import other_people, readable_by_others
from autograder.grading.layout import CourseLayout


class UnknownSelection(ValueError):
    """A --student or --lab that names nothing there is to grade (the message names what there is)."""


def _check_selection(names: list[str] | None, known: list[str], what: str, where: str) -> None:
    unknown = [n for n in names or [] if n not in known]
    if unknown:
        shown = ", ".join(known[:50]) + (f", ... ({len(known)} in all)" if len(known) > 50 else "")
        raise UnknownSelection(f"no {what} {', '.join(unknown)} {where} ({what}s: {shown or 'none'})")


def _readable_by_others(layout: CourseLayout, db_url: str) -> list[str]:
    """Warnings for the solutions (hidden tests) and an SQLite gradebook that any user can read,
    where this machine has other people's accounts (a hub, a shared server; not a laptop)."""
    gradebook = Path(db_url.removeprefix("sqlite:///")) if db_url.startswith("sqlite:///") else None
    if not other_people():
        return []
    return [
        f"{shown} ({path}) can be read by every user of this machine: chmod o-rwx it "
        "(see the instructor guide's hub section)"
        for shown, path in (("solutions/", layout.solutions), ("the gradebook", gradebook))
        if path is not None and readable_by_others(path)
    ]


def select(root: Path, source: Path, options: Options) -> tuple[list[tuple[str, str]], Outcomes]:
    """Collect ``source`` into submitted/; the (student, lab) pairs to grade, and an outcome for
    each file that is not graded. A --lab or --student naming nothing there is an error."""
    known_labs = course_labs(root)
    _check_selection(options.labs, known_labs, "lab", "in solutions/")
    collected = collect(root, source, known_labs)
    # the id, the name, or who it is ("John Smith (Moodle 202)"), in any Unicode form
    students = [collected.ids.get(nfc(s)) or safe_id(s) for s in options.students or []]
    _check_selection(students, sorted({s for s, _ in collected.pairs}), "student", f"in {source}")
    pairs = [
        (s, lab)
        for s, lab in collected.pairs
        if (not options.labs or lab in options.labs) and (not students or s in students)
    ]
    not_graded = [Outcome("", "", graded=False, file=name, notes=[reason]) for name, reason in collected.not_graded]
    layout = CourseLayout(root)
    notes = collected.notes + _readable_by_others(layout, options.db_url or layout.db_url)
    return pairs, Outcomes(not_graded, notes)
