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
Names are data: a student's id is made safe by ``ids.safe_id`` (the original is kept); a file
in a student's folder counts for that student whatever its name says (Moodle's folders too);
only the parts of a file name that the LMS writes are read for a student or a late flag.

Only the notebook is copied. Every other file is listed with its reason, never copied, never
followed: links, named pipes and devices are not even opened (``files.read_plain``); only the
litter of operating systems and Jupyter (``IGNORED``) is passed over without a word. A folder
others can write is closed to them (or, another user's, refused) before it is read.
Lateness comes only from the LMS (kept in ``marks``); nbgrader's ``timestamp.txt``, written by
the student's own submit, is listed as a claim.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import urllib.parse
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading import marks as class_marks
from autograder.grading import zipread
from autograder.grading.files import Refused, close_to_others, is_folder, read_plain, why_not_plain
from autograder.grading.ids import nfc, safe_id

IGNORED = {".ipynb_checkpoints", "__pycache__", "__MACOSX", ".DS_Store", "Thumbs.db", "desktop.ini"}
CLAIMED = ("timestamp.txt: the time the student's own nbgrader submit wrote (a claim: lateness is "
           "never taken from it), claims ")
EXCHANGE_LATE = ("the late column is empty for submissions collected by nbgrader's exchange: their "
                 "timestamp.txt is written by the student's own submit, so it is listed as a claim and "
                 "not used; the time that counts is when you collected (collect at the deadline)")

_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[-T ](\d\d)[-:]?(\d\d)[-:]?(\d\d)")
_MOODLE = re.compile(r"^(?P<student>.+?)_\d+_assign(?:submission|feedback)_", re.IGNORECASE)
_ROOT_FILES = (class_marks.NAME,)  # ours, at the top of ROOT/submitted


@dataclass
class Collected:
    """What ``collect`` did: every file handed in is either graded or in ``not_graded``."""

    pairs: list[tuple[str, str]] = field(default_factory=list)  # (student id, lab) now in submitted/
    not_graded: list[tuple[str, str]] = field(default_factory=list)  # (file name, reason)
    late: dict[tuple[str, str], str] = field(default_factory=dict)  # the LMS's "LATE", a time, or both
    originals: dict[str, str] = field(default_factory=dict)  # student id: the name it was made from
    notes: list[str] = field(default_factory=list)  # for the instructor, about no one submission


@dataclass
class _Name:
    """What a submitted file's name says."""

    lab: str
    version: int  # 0, or N of a resubmission suffix
    student: str = ""  # "" when the name has no STUDENT_ prefix
    late: str = ""
    lms: bool = False  # the prefix has an LMS's shape (Canvas ids, Blackboard attempt), not a student's


@dataclass
class _Candidate:
    """One file (or lab folder) that may be a student's submission of a lab."""

    name: str  # its path in the source, as the instructor will look for it
    info: _Name
    order: tuple  # among a student's candidates for a lab, the greatest is graded
    path: Path  # the notebook: in the source, or unpacked from a zip into our scratch
    graded_name: str = ""  # its name in submitted/ ("": LAB.ipynb)


def _lab_patterns(labs: list[str]) -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for lab in sorted(labs, key=len, reverse=True):  # "03-x-2" before "03-x" with version 2
        body = "[-_ ]".join(re.escape(part) for part in lab.split("-"))
        out.append((lab, re.compile(rf"^(?:(?P<prefix>.*?)_)?(?:copy[ _+-]of[ _+-])*{body}"
                                    rf"(?:[-_ ](?P<version>\d+)| ?\((?P<copy>\d+)\))?$", re.IGNORECASE)))
    return out


def _prefix(prefix: str) -> tuple[str, str, bool]:
    """(student, late, LMS-shaped) from an LMS prefix: Canvas ``ada_LATE_12345_678`` (then the
    student's own file name) or Blackboard ``Lab 2_ada_attempt_2024-03-01-15-00-00``. Only
    the LMS's tokens are read: a time or a LATE that the student put in their file name is not."""
    tokens = [t.strip() for t in prefix.split("_") if t.strip()]
    if not tokens:
        return "", "", False
    lowered = [t.lower() for t in tokens]
    if "attempt" in lowered[1:]:  # Blackboard: the first "attempt" is the LMS's
        at = lowered.index("attempt", 1)
        late = ""
        if at + 1 < len(tokens) and (match := _TIME.match(tokens[at + 1])):
            year, month, day, hour, minute, second = match.groups()
            late = f"{year}-{month}-{day} {hour}:{minute}:{second}"
        return tokens[at - 1], late, True
    rest = tokens[1:]
    flagged = bool(rest) and rest[0] == "LATE"
    ids = rest[1:] if flagged else rest
    canvas = len(ids) >= 2 and ids[0].isdigit() and ids[1].isdigit()
    return tokens[0], "LATE" if flagged and canvas else "", canvas


def parse_name(name: str, labs: list[str]) -> _Name | None:
    """The lab, resubmission number, student and late flag a file name gives (None: no lab)."""
    stem = nfc(urllib.parse.unquote(name))
    if not stem.lower().endswith(".ipynb"):
        return None
    stem = stem[: -len(".ipynb")].strip()
    for lab, pattern in _lab_patterns(labs):
        if match := pattern.match(stem):
            student, late, lms = _prefix(match["prefix"] or "")
            return _Name(lab, int(match["version"] or match["copy"] or 0), student, late, lms)
    return None


def recorded_late(root: Path) -> dict[tuple[str, str], str]:
    """The LMS's late flags that this and earlier collections kept."""
    return class_marks.load(root).late


def recorded_originals(root: Path) -> dict[str, str]:
    """The names that this and earlier collections mapped to safe ids (id: name)."""
    return class_marks.load(root).originals


def _ignored(parts: tuple[str, ...]) -> bool:
    return any(p in IGNORED or p.startswith("._") for p in parts)


def _why_not(name: str, info: _Name | None, labs: list[str], need_student: bool = True) -> str | None:
    """Why a file cannot be a submission (None: it can)."""
    if not name.lower().endswith(".ipynb"):
        return "not a notebook"
    if info is None:
        return f"no lab of the course in its name (labs: {', '.join(labs)})"
    if need_student and not info.student:
        return "no student id in its name (STUDENT_..._LAB.ipynb) or its folder's"
    return None


def _walk(folder: Path) -> Iterator[tuple[Path, os.stat_result]]:
    """Every entry under ``folder`` but its real folders, links not followed, each with its lstat."""
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if _ignored((entry.name,)):
            continue
        path = Path(entry.path)
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            yield from _walk(path)
        else:
            yield path, st


def _student(raw: str, out: Collected) -> str:
    student = safe_id(raw)
    out.originals[student] = nfc(raw)
    return student


def _place(root: Path, student: str, lab: str, data: bytes, name: str, keep: bool) -> None:
    """Write the graded notebook into submitted/STUDENT/LAB/ (``keep``: that folder is the
    source itself, in place, and only the notebook is written)."""
    dest = root / "submitted" / student / lab
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


def _read_first(candidates: list[_Candidate], out: Collected) -> tuple[_Candidate, bytes] | None:
    """The first candidate that reads as a plain file (those that do not are listed), and its bytes."""
    for candidate in candidates:
        try:
            return candidate, read_plain(candidate.path)
        except Refused as err:
            out.not_graded.append((candidate.name, str(err)))
        except OSError as err:
            out.not_graded.append((candidate.name, f"could not be read ({err.strerror})"))
    return None


def _superseded(loser: _Candidate, winner: _Candidate) -> tuple[str, str]:
    return loser.name, (f"an older or duplicate submission of {winner.info.student}'s {winner.info.lab}: "
                        f"{winner.name} is graded instead")


def _settle(root: Path, groups: dict[tuple[str, str], list[_Candidate]], out: Collected,
            marks: class_marks.Marks) -> None:
    """For each student and lab of an LMS source, write the latest file to submitted/ and list the others."""
    for (student, lab), candidates in sorted(groups.items()):
        if (student, lab) in out.pairs:  # already collected from the student's folder
            out.not_graded += [(c.name, f"a second submission of {student}'s {lab}: the one in the "
                                        f"student's folder is graded") for c in candidates]
            continue
        ordered = sorted(candidates, key=lambda c: c.order, reverse=True)
        if (picked := _read_first(ordered, out)) is None:
            continue
        winner, data = picked
        out.not_graded += [_superseded(c, winner) for c in ordered[ordered.index(winner) + 1:]]
        _place(root, student, lab, data, f"{lab}.ipynb", keep=False)
        marks.late[(student, lab)] = winner.info.late
        out.pairs.append((student, lab))


def _member_student(parts: tuple[str, ...], labs: list[str]) -> _Name | None:
    """A zip member's name. A file in a Moodle submission folder is that student's, whatever its
    own name says; a name without an LMS's shape takes its student from its nearest folder."""
    info = parse_name(parts[-1], labs)
    if info is None:
        return None
    for folder in reversed(parts[:-1]):
        if match := _MOODLE.match(folder):
            info.student, info.late = match["student"].strip(), ""
            return info
    if info.lms:
        return info
    for folder in reversed(parts[:-1]):
        if folder not in labs:
            info.student, info.late, _ = _prefix(folder + "_")
            break
    return info


def _from_zip(root: Path, archive: Path, labs: list[str], out: Collected, marks: class_marks.Marks) -> None:
    groups: dict[tuple[str, str], list[_Candidate]] = {}
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
                if member.is_dir() or not parts or _ignored(parts):
                    continue
                info = _member_student(parts, labs)
                reason = "a symbolic link, not followed" if zipread.is_link(member) else _why_not(parts[-1], info, labs)
                if reason is None:
                    reason = zipread.extract(zf, member, Path(scratch) / str(number), budget)
                if reason is not None or info is None:
                    out.not_graded.append((name, reason or "not a submission"))
                    continue
                student = _student(info.student, out)
                info.student = student
                groups.setdefault((student, info.lab), []).append(_Candidate(
                    name, info, (info.version, member.date_time, name), Path(scratch) / str(number)))
        _settle(root, groups, out, marks)


def _lab_folder(source: Path, folder: Path, student: str, lab: str, out: Collected) -> _Candidate | None:
    """The notebook of a lab folder (LAB.ipynb, else its only notebook) as a candidate; every
    other file there is listed (nbgrader's exchange leaves timestamp.txt, submission_secret.txt)."""
    shown = folder.relative_to(source).as_posix()
    try:
        if note := close_to_others(folder):
            out.notes.append(f"{shown}/: {note}")
    except Refused as err:
        out.not_graded.append((f"{shown}/", str(err)))
        return None
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
    try:
        graded = read_plain(pick) if pick else None
    except (OSError, Refused):
        graded = None
    for path, _ in others:
        if path == pick:
            continue
        try:
            same = graded is not None and read_plain(path) == graded
        except (OSError, Refused):
            same = False
        if not same:  # a copy of the graded notebook (ours, from an earlier rename) is not news
            why = f"another notebook beside {lab}.ipynb, which is graded" if pick else \
                f"one of several notebooks, none named {lab}.ipynb: not graded"
            out.not_graded.append((f"{shown}/{path.relative_to(folder).as_posix()}", why))
    if pick is None:
        return None
    return _Candidate(f"{shown}/", _Name(lab, 0, student), (), pick,
                      graded_name="" if pick == main else pick.name)


def _settle_folder(root: Path, source: Path, raw: str, student: str, lab: str, lab_folder: Path | None,
                   files: list[_Candidate], in_place: bool, out: Collected, marks: class_marks.Marks) -> None:
    """Of a student's lab folder and their loose files for that lab, copy the newest notebook
    into submitted/ (in place: leave it there) and list the others."""
    ordered = sorted(files, key=lambda c: c.order, reverse=True)
    folder = _lab_folder(source, lab_folder, student, lab, out) if lab_folder is not None else None
    if folder is not None:
        newest_first = not ordered or os.lstat(folder.path).st_mtime >= os.lstat(ordered[0].path).st_mtime
        ordered.insert(0 if newest_first else 1, folder)
    if not ordered:
        return
    if (student, lab) in out.pairs:  # the same name twice, in two Unicode forms
        out.not_graded += [(c.name, f"a second folder for the student {student} (the same name written "
                                    f"another way): the first one is graded") for c in ordered]
        return
    for candidate in ordered:
        try:
            if note := close_to_others(candidate.path):
                out.notes.append(f"{candidate.name}: {note}")
        except (Refused, OSError):
            pass  # read_plain refuses it below, with the reason
    if (picked := _read_first(ordered, out)) is None:
        return
    winner, data = picked
    for loser in ordered[ordered.index(winner) + 1:]:  # read before the winner may be written over one
        try:
            same = read_plain(loser.path) == data
        except (OSError, Refused):
            same = False
        if not (in_place and same):  # in place: our own copy of it
            out.not_graded.append(_superseded(loser, winner))
    keep = in_place and student == raw
    if not (keep and winner is folder):
        _place(root, student, lab, data, winner.graded_name or f"{lab}.ipynb", keep)
    if not in_place:
        marks.late.pop((student, lab), None)  # a folder has no LMS time: an earlier one no longer holds
    out.pairs.append((student, lab))


def _from_student_folder(root: Path, source: Path, folder: Path, labs: list[str], in_place: bool,
                         out: Collected, marks: class_marks.Marks) -> None:
    """STUDENT/LAB/ and STUDENT/LAB.ipynb (or a name like it): the newer of the two is graded.
    Every file here counts for STUDENT, whatever its name says."""
    raw = nfc(folder.name)
    shown = folder.relative_to(source).as_posix()
    try:
        if note := close_to_others(folder):
            out.notes.append(f"{shown}/: {note}")
    except Refused as err:
        out.not_graded.append((f"{shown}/", str(err)))
        return
    student = _student(folder.name, out)
    groups: dict[str, list[_Candidate]] = {}
    lab_folders: dict[str, Path] = {}
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        path = Path(entry.path)
        if _ignored((entry.name,)):
            continue
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode) and nfc(entry.name) in labs:
            lab_folders[nfc(entry.name)] = path
        elif stat.S_ISDIR(st.st_mode):
            out.not_graded += [(p.relative_to(source).as_posix(), why_not_plain(s) or "not in a lab's folder")
                               for p, s in _walk(path)]
        elif reason := why_not_plain(st):
            out.not_graded.append((path.relative_to(source).as_posix(), reason))
        else:
            info = parse_name(entry.name, labs)
            if (reason := _why_not(entry.name, info, labs, need_student=False)) or info is None:
                out.not_graded.append((path.relative_to(source).as_posix(), reason or "not a submission"))
            else:
                info.student = student  # the folder's student, whatever the name's prefix says
                groups.setdefault(info.lab, []).append(_Candidate(
                    path.relative_to(source).as_posix(), info, (info.version, st.st_mtime, entry.name), path))
    for lab in labs:
        if lab in groups or lab in lab_folders:
            _settle_folder(root, source, raw, student, lab, lab_folders.get(lab), groups.get(lab, []),
                           in_place, out, marks)


def _from_folder(root: Path, source: Path, labs: list[str], out: Collected, marks: class_marks.Marks) -> None:
    """A folder of student folders (STUDENT/LAB/, STUDENT/LAB.ipynb) and loose LMS files; in
    place when it is ROOT/submitted itself."""
    in_place = source.resolve() == (root / "submitted").resolve()
    try:
        if note := close_to_others(source):
            out.notes.append(f"{source}: {note}")
    except Refused as err:
        out.not_graded.append((str(source), str(err)))
        return
    names = sorted(os.listdir(source))
    # in place, the copy we made of a folder whose name had to be mapped is not a student of its own
    ours = {safe_id(n) for n in names if safe_id(n) != n} if in_place else set()
    loose: dict[tuple[str, str], list[_Candidate]] = {}
    for name in names:
        path = source / name
        if _ignored((name,)) or name in ours or (in_place and name.startswith(_ROOT_FILES)):
            continue
        st = os.lstat(path)
        if stat.S_ISDIR(st.st_mode):
            _from_student_folder(root, source, path, labs, in_place, out, marks)
        elif reason := why_not_plain(st):
            out.not_graded.append((name, reason))
        else:
            _loose(path, labs, in_place, loose, out)
    _settle(root, loose, out, marks)


def _loose(path: Path, labs: list[str], in_place: bool, loose: dict[tuple[str, str], list[_Candidate]],
           out: Collected) -> None:
    """A file at the top of a folder: an unzipped LMS download, named STUDENT_..._LAB.ipynb."""
    info = parse_name(path.name, labs)
    if (reason := "not in a student's folder" if in_place else _why_not(path.name, info, labs)) or info is None:
        out.not_graded.append((path.name, reason or "not a submission"))
    else:
        info.student = _student(info.student, out)
        loose.setdefault((info.student, info.lab), []).append(
            _Candidate(path.name, info, (info.version, os.lstat(path).st_mtime, path.name), path))


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
    marks = class_marks.load(root)
    before = (dict(marks.late), dict(marks.originals))
    if source.is_file() and not source.is_symlink() and zipfile.is_zipfile(source):
        _from_zip(root, source, labs, out, marks)
    elif is_folder(source) or (source.is_dir() and source.resolve() == (root / "submitted").resolve()):
        _from_folder(root, source, labs, out, marks)
    else:
        out.not_graded.append((source.name, "neither a folder nor a zip archive"))
    out.pairs.sort()
    students = {s for s, _ in out.pairs}
    out.originals = {s: name for s, name in out.originals.items() if s in students}
    marks.originals.update({s: name for s, name in out.originals.items() if name != s})
    if (marks.late, marks.originals) != before:
        class_marks.save(root, marks)
    out.late = {pair: marks.late[pair] for pair in out.pairs if marks.late.get(pair)}
    return out
