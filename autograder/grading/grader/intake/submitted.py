"""The steps every source of submissions shares: the record of what was collected, and writing
one student's chosen notebook, alone, into ROOT/submitted/STUDENT/LAB/."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading.grader.intake import intake_record
from autograder.grading.grader.intake.ids import mapped_id, nfc, safe_id
from autograder.grading.grader.intake.lmsnames import Name
from autograder.grading.grader.intake.untrusted import Refused, is_folder, read_plain
from autograder.grading.layout import CourseLayout

IGNORED = {".ipynb_checkpoints", "__pycache__", "__MACOSX", ".DS_Store", "Thumbs.db", "desktop.ini"}


@dataclass
class Collected:
    """What ``collect`` did: every file handed in is either graded or in ``not_graded``."""

    pairs: list[tuple[str, str]] = field(default_factory=list)  # (student id, lab) now in submitted/
    not_graded: list[tuple[str, str]] = field(default_factory=list)  # (file name, reason)
    late: dict[tuple[str, str], str] = field(default_factory=dict)  # the LMS's "LATE", a time, or both
    originals: dict[str, str] = field(default_factory=dict)  # student id: who it is (``IntakeRecord.identities``)
    notes: list[str] = field(default_factory=list)  # for the instructor, about no one submission
    owners: dict[str, str] = field(default_factory=dict)  # every id given so far, ever: who it is
    ids: dict[str, str] = field(default_factory=dict)  # who: their id

    def know(self, identities: dict[str, str]) -> None:
        """Take the ids given by earlier collections (``IntakeRecord.identities``) as given."""
        self.owners.update(identities)
        self.ids.update({who: student for student, who in identities.items()})

    def forget(self, student: str) -> None:
        """Take back an id given in this collection (its owner is not graded after all)."""
        who = self.originals.pop(student, None)
        if who is not None:
            self.owners.pop(student, None)
            self.ids.pop(who, None)


@dataclass
class Candidate:
    """One file (or lab folder) that may be a student's submission of a lab."""

    name: str  # its path in the source, as the instructor will look for it
    info: Name
    order: tuple  # among a student's candidates for a lab, the greatest is graded
    path: Path  # the notebook: in the source, or unpacked from a zip into our scratch
    graded_name: str = ""  # its name in submitted/ ("": LAB.ipynb)


def ignored(parts: tuple[str, ...]) -> bool:
    return any(p in IGNORED or p.startswith("._") for p in parts)


class Collision(Exception):
    """Two people whose ids would be one: the later is not graded, and the message names both."""


def student_id(raw: str, out: Collected, account: str = "") -> str:
    """The id of the person named ``raw`` (``account``: what the LMS records as unique, such as
    ``Moodle 201``). The id this person had before; else the name made safe, unless another
    person has it (two Moodle participants named John Smith, or a name that maps onto a kept
    one), then an id made from the name and the account. Raises ``Collision`` when both are another's."""
    who = f"{nfc(raw)} ({account})" if account else nfc(raw)
    chosen = out.ids.get(who)
    for student in [chosen] if chosen else [safe_id(raw), mapped_id(who)]:
        if out.owners.get(student, who) == who:
            out.originals[student] = out.owners[student] = who
            out.ids[who] = student
            return student
    raise Collision(
        f"not graded: {who!r} would get the id {student!r}, which is {out.owners[student]!r}'s "
        f"(two names that grading cannot tell apart: rename one of them)"
    )


def place(root: Path, student: str, lab: str, data: bytes, name: str, keep: bool) -> None:
    """Write the graded notebook into submitted/STUDENT/LAB/ (``keep``: that folder is the
    source itself, in place, and only the notebook is written)."""
    dest = CourseLayout(root).submission(student, lab)
    for level in (dest.parent, dest):  # a link left there by an earlier in-place source: never written through
        if os.path.lexists(level) and not is_folder(level):
            level.unlink()
    if not keep:
        shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / name
    try:
        if read_plain(target) == data:
            return
    except (OSError, Refused):
        pass
    target.unlink(missing_ok=True)
    target.write_bytes(data)


def place_empty(root: Path, student: str, lab: str) -> None:
    """An empty submitted/STUDENT/LAB/: the lab was handed in with no notebook that can be read."""
    dest = CourseLayout(root).submission(student, lab)
    for level in (dest.parent, dest):
        if os.path.lexists(level) and not is_folder(level):
            level.unlink()
    shutil.rmtree(dest, ignore_errors=True)
    dest.mkdir(parents=True)


def read_first(candidates: list[Candidate], out: Collected) -> tuple[Candidate, bytes] | None:
    """The first candidate that reads as a plain file (those that do not are listed), and its bytes."""
    for candidate in candidates:
        try:
            return candidate, read_plain(candidate.path)
        except Refused as err:
            out.not_graded.append((candidate.name, str(err)))
        except OSError as err:
            out.not_graded.append((candidate.name, f"could not be read ({err.strerror})"))
    return None


def superseded(loser: Candidate, winner: Candidate) -> tuple[str, str]:
    return loser.name, (
        f"an older or duplicate submission of {winner.info.student}'s {winner.info.lab}: "
        f"{winner.name} is graded instead"
    )


def settle(
    root: Path, groups: dict[tuple[str, str], list[Candidate]], out: Collected, record: intake_record.IntakeRecord
) -> None:
    """For each student and lab of an LMS source, write the latest file to submitted/ and list the others."""
    for (student, lab), candidates in sorted(groups.items()):
        if (student, lab) in out.pairs:  # already collected from the student's folder
            out.not_graded += [
                (c.name, f"a second submission of {student}'s {lab}: the one in the student's folder is graded")
                for c in candidates
            ]
            continue
        ordered = sorted(candidates, key=lambda c: c.order, reverse=True)
        if (picked := read_first(ordered, out)) is None:
            continue
        winner, data = picked
        out.not_graded += [superseded(c, winner) for c in ordered[ordered.index(winner) + 1 :]]
        place(root, student, lab, data, f"{lab}.ipynb", keep=False)
        record.late[(student, lab)] = winner.info.late
        out.pairs.append((student, lab))
