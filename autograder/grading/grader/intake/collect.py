"""Bring a class's submissions into ROOT/submitted/STUDENT/LAB/, the notebook alone, and say
what was not brought in and why.

Sources:
    an LMS zip        files named STUDENT_..._LAB.ipynb, in folders or not (Canvas, Moodle,
                      Blackboard's ..._STUDENT_attempt_TIME_LAB.ipynb); a file named just
                      LAB.ipynb takes its student from the nearest folder, named STUDENT_...
    a folder          STUDENT/LAB/*.ipynb or STUDENT/LAB.ipynb (copied over earlier copies)
    ROOT/submitted    the same layouts, in place (nbgrader's exchange collects here): a flat
                      STUDENT/LAB.ipynb is copied into STUDENT/LAB/

File names are read generously: a resubmission suffix (LAB-2.ipynb, LAB (2).ipynb: the
highest number wins), Colab's "Copy of LAB.ipynb", and "_" or " " for "-" in the lab's name.
Names are data: a student is who the LMS says, the name and the account it records as unique
(Canvas's user id, Moodle's participant id), and keeps the id it was first given
(``submitted.student_id``; two John Smiths get two ids, the original of each kept beside it); a file
in a student's folder counts for that student whatever its name says (Moodle's folders too);
only the parts of a file name that the LMS writes are read for a student or a late flag.

Only the notebook is copied. Every other file is listed with its reason, never copied, never
followed: links, named pipes and devices are not even opened (``untrusted.read_plain``); only the
litter of operating systems and Jupyter (``IGNORED``) is passed over without a word. A folder
others can write is closed to them (or, another user's, refused) before it is read.
Lateness comes only from the LMS (kept in ``intake_record``); nbgrader's ``timestamp.txt``, written by
the student's own submit, is listed as a claim.
"""

from __future__ import annotations

import re
import tempfile
import zipfile
from pathlib import Path

from autograder.grading.grader.intake import intake_record, zipread
from autograder.grading.grader.intake.folders import from_folder
from autograder.grading.grader.intake.ids import nfc
from autograder.grading.grader.intake.lmsnames import member_student, parse_name, why_not
from autograder.grading.grader.intake.submitted import (
    IGNORED,
    Candidate,
    Collected,
    Collision,
    ignored,
    settle,
    student_id,
)
from autograder.grading.grader.intake.untrusted import is_folder
from autograder.grading.layout import CourseLayout

__all__ = ["IGNORED", "Collected", "collect", "parse_name", "recorded_late", "recorded_originals"]


def recorded_late(root: Path) -> dict[tuple[str, str], str]:
    """The LMS's late flags that this and earlier collections kept."""
    return intake_record.load(root).late


def recorded_originals(root: Path) -> dict[str, str]:
    """Who each student id is, where the id alone does not say it (id: name, and the LMS's
    account where it has one), as this and earlier collections found."""
    return intake_record.load(root).originals


def _from_zip(root: Path, archive: Path, labs: list[str], out: Collected, record: intake_record.IntakeRecord) -> None:
    groups: dict[tuple[str, str], list[Candidate]] = {}
    budget = zipread.Budget()
    with tempfile.TemporaryDirectory(prefix="autograder-zip-") as scratch:
        try:
            zf = zipfile.ZipFile(archive)
        except (zipfile.BadZipFile, OSError) as err:
            out.not_graded.append((archive.name, f"not a readable zip archive ({err})"))
            return
        with zf:
            for number, member in enumerate(zf.infolist()):
                name = nfc(zipread.member_name(member))
                parts = tuple(p for p in re.split(r"[/\\]", name) if p)
                if member.is_dir() or not parts or ignored(parts):
                    continue
                info = member_student(parts, labs)
                reason = "a symbolic link, not followed" if zipread.is_link(member) else why_not(parts[-1], info, labs)
                if reason is None:
                    reason = zipread.extract(zf, member, Path(scratch) / str(number), budget)
                if reason is not None or info is None:
                    out.not_graded.append((name, reason or "not a submission"))
                    continue
                try:
                    info.student = student = student_id(info.student, out, info.account)
                except Collision as err:
                    out.not_graded.append((name, str(err)))
                    continue
                groups.setdefault((student, info.lab), []).append(
                    Candidate(name, info, (info.version, member.date_time, name), Path(scratch) / str(number))
                )
        settle(root, groups, out, record)


def collect(root: Path, source: Path, labs: list[str]) -> Collected:
    """Bring the submissions in ``source`` (an LMS zip, a folder, or ROOT/submitted itself)
    into ROOT/submitted/STUDENT/LAB/, and say why each other file is not graded.

    Args:
        root: the course root.
        source: the zip or folder the instructor named.
        labs: the course's labs (a file for any other lab is listed, not collected).

    Returns:
        The (student id, lab) pairs collected, the files not graded with their reasons, the
        late flags and submission times the LMS gave, and the name each student id came from.
    """
    root, source = Path(root), Path(source)
    out = Collected()
    record = intake_record.load(root)
    out.know(record.identities)
    before = (dict(record.late), dict(record.identities))
    if source.is_file() and not source.is_symlink() and zipfile.is_zipfile(source):
        _from_zip(root, source, labs, out, record)
    elif is_folder(source) or (source.is_dir() and source.resolve() == CourseLayout(root).submitted.resolve()):
        from_folder(root, source, labs, out, record)
    else:
        out.not_graded.append((source.name, "neither a folder nor a zip archive"))
    out.pairs.sort()
    students = {s for s, _ in out.pairs}
    out.originals = {s: who for s, who in out.originals.items() if s in students}
    record.identities.update(out.originals)
    if (record.late, record.identities) != before:
        intake_record.save(root, record)
    out.late = {pair: record.late[pair] for pair in out.pairs if record.late.get(pair)}
    return out
