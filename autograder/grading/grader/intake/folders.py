"""Collecting from a folder of student folders (STUDENT/LAB/, STUDENT/LAB.ipynb, loose LMS
files), or from ROOT/submitted in place, as nbgrader's exchange leaves it."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

from autograder.grading.grader.intake import intake_record
from autograder.grading.grader.intake.ids import nfc
from autograder.grading.grader.intake.lmsnames import Name, parse_name, why_not
from autograder.grading.grader.intake.submitted import (
    Candidate,
    Collected,
    Collision,
    ignored,
    place,
    place_empty,
    read_first,
    settle,
    student_id,
    superseded,
)
from autograder.grading.grader.intake.untrusted import Refused, close_to_others, read_plain, why_not_plain
from autograder.grading.layout import CourseLayout

CLAIMED = (
    "timestamp.txt: the time the student's own nbgrader submit wrote (a claim: lateness is "
    "never taken from it), claims "
)
EXCHANGE_LATE = (
    "the late column is empty for submissions collected by nbgrader's exchange: their "
    "timestamp.txt is written by the student's own submit, so it is listed as a claim and "
    "not used; the time that counts is when you collected (collect at the deadline)"
)
_ROOT_FILES = (intake_record.NAME,)  # ours, at the top of ROOT/submitted


def _walk(folder: Path) -> Iterator[tuple[Path, os.stat_result]]:
    """Every entry under ``folder`` but its real folders, links not followed, each with its lstat."""
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if ignored((entry.name,)):
            continue
        path = Path(entry.path)
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            yield from _walk(path)
        else:
            yield path, st


def _closed(source: Path, folder: Path, out: Collected) -> bool:
    """Make ``folder`` closed to others before it is read (a note when it was repaired);
    False, with the folder listed, when it cannot be."""
    shown = folder.relative_to(source).as_posix()
    try:
        if note := close_to_others(folder):
            out.notes.append(f"{shown}/: {note}")
    except Refused as err:
        out.not_graded.append((f"{shown}/", str(err)))
        return False
    return True


def _lab_folder(source: Path, folder: Path, student: str, lab: str, out: Collected) -> Candidate | bool:
    """The notebook of a lab folder (LAB.ipynb, else its only notebook) as a candidate; every
    other file there is listed (nbgrader's exchange leaves timestamp.txt, submission_secret.txt).
    False: the folder itself is refused; True: it holds no notebook that can be graded."""
    if not _closed(source, folder, out):
        return False
    shown = folder.relative_to(source).as_posix()
    main, others, listed = None, [], []
    for path, st in _walk(folder):
        rel = path.relative_to(folder).as_posix()
        top = "/" not in rel
        if reason := why_not_plain(st):
            listed.append((f"{shown}/{rel}", reason))
        elif top and rel == f"{lab}.ipynb":
            main = path
        elif rel.lower().endswith(".ipynb"):
            others.append((path, top))
        elif top and rel == "timestamp.txt":
            try:
                claim = read_plain(path, limit=200).decode(errors="replace").strip()
            except (OSError, Refused):
                claim = "(unreadable)"
            listed.append((f"{shown}/{rel}", CLAIMED + repr(claim)))
            if EXCHANGE_LATE not in out.notes:
                out.notes.append(EXCHANGE_LATE)
        elif top and rel == "submission_secret.txt":
            listed.append((f"{shown}/{rel}", "nbgrader's submission secret (from the exchange), not graded"))
        else:
            listed.append((f"{shown}/{rel}", "an extra file beside the notebook: not copied, not graded"))
    out.not_graded += listed
    tops = [p for p, top in others if top]
    pick = main or (tops[0] if len(tops) == 1 else None)
    _list_other_notebooks(folder, shown, lab, pick, [path for path, _ in others], out)
    if pick is None:
        return True
    return Candidate(f"{shown}/", Name(lab, 0, student), (), pick, graded_name="" if pick == main else pick.name)


def _list_other_notebooks(
    folder: Path, shown: str, lab: str, pick: Path | None, others: list[Path], out: Collected
) -> None:
    """List as not graded every notebook of a lab folder but ``pick`` (the graded one, if any),
    except a copy of it (ours, from an earlier rename, is not news)."""
    try:
        graded = read_plain(pick) if pick else None
    except (OSError, Refused):
        graded = None
    for path in others:
        if path == pick:
            continue
        try:
            same = graded is not None and read_plain(path) == graded
        except (OSError, Refused):
            same = False
        if not same:
            why = (
                f"another notebook beside {lab}.ipynb, which is graded"
                if pick
                else f"one of several notebooks, none named {lab}.ipynb: not graded"
            )
            out.not_graded.append((f"{shown}/{path.relative_to(folder).as_posix()}", why))


def _settle_folder(
    root: Path,
    source: Path,
    raw: str,
    student: str,
    lab: str,
    lab_folder: Path | None,
    files: list[Candidate],
    in_place: bool,
    out: Collected,
    record: intake_record.IntakeRecord,
) -> None:
    """Of a student's lab folder and their loose files for that lab, copy the newest notebook
    into submitted/ (in place: leave it there) and list the others."""
    ordered = sorted(files, key=lambda c: c.order, reverse=True)
    found = _lab_folder(source, lab_folder, student, lab, out) if lab_folder is not None else False
    folder = found if isinstance(found, Candidate) else None
    if folder is not None:
        newest_first = not ordered or os.lstat(folder.path).st_mtime >= os.lstat(ordered[0].path).st_mtime
        ordered.insert(0 if newest_first else 1, folder)
    if (student, lab) in out.pairs:  # the same name twice, in two Unicode forms
        out.not_graded += [
            (
                c.name,
                f"a second folder for the student {student} (the same name written "
                f"another way): the first one is graded",
            )
            for c in ordered
        ]
        return
    if not ordered:
        if found is True:  # a lab folder with nothing to grade in it: the student scores 0, with the reason
            if not (in_place and student == raw):
                place_empty(root, student, lab)
            out.pairs.append((student, lab))
        return
    for candidate in ordered:
        try:
            if note := close_to_others(candidate.path):
                out.notes.append(f"{candidate.name}: {note}")
        except (Refused, OSError):
            pass  # read_plain refuses it below, with the reason
    if (picked := read_first(ordered, out)) is None:
        return
    winner, data = picked
    for loser in ordered[ordered.index(winner) + 1 :]:  # read before the winner may be written over one
        try:
            same = read_plain(loser.path) == data
        except (OSError, Refused):
            same = False
        if not (in_place and same):  # in place: our own copy of it
            out.not_graded.append(superseded(loser, winner))
    keep = in_place and student == raw
    if not (keep and winner is folder):
        place(root, student, lab, data, winner.graded_name or f"{lab}.ipynb", keep)
    if not in_place:
        record.late.pop((student, lab), None)  # a folder has no LMS time: an earlier one no longer holds
    out.pairs.append((student, lab))


def _folder_student(folder: Path, in_place: bool, present: set[str], out: Collected) -> str:
    """The id of a student folder's owner. In place, a folder an earlier collection named keeps
    its name, and the id of a folder is never another folder that is there (it is someone's)."""
    raw = nfc(folder.name)
    if in_place and raw in out.owners:
        out.originals[raw] = out.owners[raw]
        return raw
    student = student_id(folder.name, out)
    if in_place and student != raw and student in present:
        out.forget(student)
        raise Collision(
            f"not graded: {raw!r} would be graded as {student!r}, the folder of another "
            f"submission in submitted/ (grading never writes into it: rename one of them)"
        )
    return student


def _from_student_folder(
    root: Path,
    source: Path,
    folder: Path,
    labs: list[str],
    in_place: bool,
    out: Collected,
    record: intake_record.IntakeRecord,
    present: set[str],
) -> None:
    """STUDENT/LAB/ and STUDENT/LAB.ipynb (or a name like it): the newer of the two is graded.
    Every file here counts for STUDENT, whatever its name says."""
    raw = nfc(folder.name)
    if not _closed(source, folder, out):
        return
    try:
        student = _folder_student(folder, in_place, present, out)
    except Collision as err:
        out.not_graded.append((f"{folder.name}/", str(err)))
        return
    groups: dict[str, list[Candidate]] = {}
    lab_folders: dict[str, Path] = {}
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        path = Path(entry.path)
        if ignored((entry.name,)):
            continue
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode) and nfc(entry.name) in labs:
            lab_folders[nfc(entry.name)] = path
        elif stat.S_ISDIR(st.st_mode):
            out.not_graded += [
                (p.relative_to(source).as_posix(), why_not_plain(s) or "not in a lab's folder") for p, s in _walk(path)
            ]
        elif reason := why_not_plain(st):
            out.not_graded.append((path.relative_to(source).as_posix(), reason))
        else:
            info = parse_name(entry.name, labs)
            if (reason := why_not(entry.name, info, labs, need_student=False)) or info is None:
                out.not_graded.append((path.relative_to(source).as_posix(), reason or "not a submission"))
            else:
                info.student = student  # the folder's student, whatever the name's prefix says
                groups.setdefault(info.lab, []).append(
                    Candidate(path.relative_to(source).as_posix(), info, (info.version, st.st_mtime, entry.name), path)
                )
    for lab in labs:
        if lab in groups or lab in lab_folders:
            _settle_folder(
                root, source, raw, student, lab, lab_folders.get(lab), groups.get(lab, []), in_place, out, record
            )


def from_folder(root: Path, source: Path, labs: list[str], out: Collected, record: intake_record.IntakeRecord) -> None:
    """A folder of student folders (STUDENT/LAB/, STUDENT/LAB.ipynb) and loose LMS files; in
    place when it is ROOT/submitted itself."""
    in_place = source.resolve() == CourseLayout(root).submitted.resolve()
    try:
        if note := close_to_others(source):
            out.notes.append(f"{source}: {note}")
    except Refused as err:
        out.not_graded.append((str(source), str(err)))
        return
    names = sorted(os.listdir(source))
    # in place, the copy we made of a folder that is there is not a student of its own
    there = {nfc(n) for n in names}
    ours = {s for s, who in out.owners.items() if who != s and who in there} if in_place else set()
    present = there - ours
    loose: dict[tuple[str, str], list[Candidate]] = {}
    for name in names:
        path = source / name
        if ignored((name,)) or nfc(name) in ours or (in_place and name.startswith(_ROOT_FILES)):
            continue
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            _from_student_folder(root, source, path, labs, in_place, out, record, present)
        elif reason := why_not_plain(st):
            out.not_graded.append((name, reason))
        else:
            _loose(path, labs, in_place, loose, out)
    settle(root, loose, out, record)


def _loose(
    path: Path, labs: list[str], in_place: bool, loose: dict[tuple[str, str], list[Candidate]], out: Collected
) -> None:
    """A file at the top of a folder: an unzipped LMS download, named STUDENT_..._LAB.ipynb."""
    info = parse_name(path.name, labs)
    if (reason := "not in a student's folder" if in_place else why_not(path.name, info, labs)) or info is None:
        out.not_graded.append((path.name, reason or "not a submission"))
        return
    try:
        info.student = student_id(info.student, out, info.account)
    except Collision as err:
        out.not_graded.append((path.name, str(err)))
    else:
        loose.setdefault((info.student, info.lab), []).append(
            Candidate(path.name, info, (info.version, os.lstat(path).st_mtime, path.name), path)
        )
