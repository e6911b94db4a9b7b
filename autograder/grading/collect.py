"""Bring a class's submissions into ROOT/submitted/STUDENT/LAB/LAB.ipynb, and say what was not.

Sources:
    an LMS zip        files named STUDENT_..._LAB.ipynb, in folders or not (Canvas, Moodle,
                      Blackboard's ..._STUDENT_attempt_TIME_LAB.ipynb); a file named just
                      LAB.ipynb takes its student from the nearest folder, named STUDENT_...
    a folder          STUDENT/LAB/*.ipynb or STUDENT/LAB.ipynb (copied over earlier copies)
    ROOT/submitted    the same layouts, in place: a flat STUDENT/LAB.ipynb is copied into
                      STUDENT/LAB/

File names are read generously: a resubmission suffix (LAB-2.ipynb, LAB (2).ipynb: the
highest number wins), Colab's "Copy of LAB.ipynb", and "_" or " " for "-" in the lab's name.
An LMS "LATE" tag and a submission time go into ``Collected.late`` and are kept beside the
notebook (``LATE_FILE``, and nbgrader's timestamp.txt), so that a later regrade still knows.
Every other file is listed with its reason; only the litter of operating systems and
Jupyter (``IGNORED``) is passed over without a word.
"""

from __future__ import annotations

import re
import shutil
import urllib.parse
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

LATE_FILE = "lms-late.txt"  # the LMS's late flag and submission time, beside the notebook
IGNORED = {".ipynb_checkpoints", "__pycache__", "__MACOSX", ".DS_Store", "Thumbs.db", "desktop.ini"}
MAX_BYTES = 100 * 2**20  # a larger "notebook" in a zip is listed, not unpacked

_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[-T ](\d\d)[-:]?(\d\d)[-:]?(\d\d)")
_STUDENT = re.compile(r"^[A-Za-z0-9][\w .@+-]*$")


@dataclass
class Collected:
    """What ``collect`` did: every file handed in is either in ``pairs`` or in ``not_graded``."""

    pairs: list[tuple[str, str]] = field(default_factory=list)  # (student, lab) now in submitted/
    not_graded: list[tuple[str, str]] = field(default_factory=list)  # (file name, reason)
    late: dict[tuple[str, str], str] = field(default_factory=dict)  # "LATE", a time, or both


@dataclass
class _Name:
    """What a submitted file's name says."""

    lab: str
    version: int  # 0, or N of a resubmission suffix
    student: str = ""  # "" when the name has no STUDENT_ prefix
    late: str = ""


@dataclass
class _Candidate:
    """One file (or lab folder) that may be a student's submission of a lab."""

    name: str  # its path in the source, as the instructor will look for it
    info: _Name
    order: tuple  # among a student's candidates for a lab, the greatest is graded
    path: Path | None = None  # in a folder source (a file, or a lab folder)
    data: bytes | None = None  # from a zip


def _lab_patterns(labs: list[str]) -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for lab in sorted(labs, key=len, reverse=True):  # "03-x-2" before "03-x" with version 2
        body = "[-_ ]".join(re.escape(part) for part in lab.split("-"))
        out.append((lab, re.compile(rf"^(?:(?P<prefix>.*?)_)?(?:copy[ _+-]of[ _+-])*{body}"
                                    rf"(?:[-_ ](?P<version>\d+)| ?\((?P<copy>\d+)\))?$", re.IGNORECASE)))
    return out


def _prefix(prefix: str) -> tuple[str, str]:
    """(student, late) from an LMS prefix such as ``ada_LATE_12345_678`` (Canvas) or
    ``Lab 2_ada_attempt_2024-03-01-15-00-00`` (Blackboard)."""
    tokens = [t.strip() for t in prefix.split("_") if t.strip()]
    if not tokens:
        return "", ""
    lowered = [t.lower() for t in tokens]
    student = tokens[lowered.index("attempt") - 1] if "attempt" in lowered[1:] else tokens[0]
    flags = ["LATE"] if "late" in lowered[1:] else []
    for token in tokens[1:]:
        if match := _TIME.match(token):
            year, month, day, hour, minute, second = match.groups()
            flags.append(f"{year}-{month}-{day} {hour}:{minute}:{second}")
            break
    return student, " ".join(flags)


def parse_name(name: str, labs: list[str]) -> _Name | None:
    """The lab, resubmission number, student and late flag a file name gives (None: no lab)."""
    stem = urllib.parse.unquote(name)
    if not stem.lower().endswith(".ipynb"):
        return None
    stem = stem[: -len(".ipynb")].strip()
    for lab, pattern in _lab_patterns(labs):
        if match := pattern.match(stem):
            student, late = _prefix(match["prefix"] or "")
            return _Name(lab, int(match["version"] or match["copy"] or 0), student, late)
    return None


def recorded_late(root: Path) -> dict[tuple[str, str], str]:
    """The late flags kept in ROOT/submitted/STUDENT/LAB/ by this and earlier collections."""
    return {(p.parent.parent.name, p.parent.name): p.read_text().strip()
            for p in sorted((Path(root) / "submitted").glob(f"*/*/{LATE_FILE}"))}


def _ignored(parts: tuple[str, ...]) -> bool:
    return any(p in IGNORED or p.startswith("._") for p in parts)


def _why_not(name: str, info: _Name | None, labs: list[str], need_student: bool = True) -> str | None:
    """Why a file cannot be a submission (None: it can)."""
    if not name.lower().endswith(".ipynb"):
        return "not a notebook"
    if info is None:
        return f"no lab of the course in its name (labs: {', '.join(labs)})"
    if need_student and not _STUDENT.match(info.student):
        return "no student id in its name (STUDENT_..._LAB.ipynb) or its folder's"
    return None


def _write_marks(dest: Path, late: str) -> None:
    """Keep the late flag and submission time beside the notebook (nbgrader reads timestamp.txt)."""
    for name in (LATE_FILE, "timestamp.txt"):
        (dest / name).unlink(missing_ok=True)
    if late:
        (dest / LATE_FILE).write_text(late + "\n")
        if match := re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", late):
            (dest / "timestamp.txt").write_text(match.group() + "\n")


def _settle(root: Path, groups: dict[tuple[str, str], list[_Candidate]], out: Collected) -> None:
    """For each student and lab, write the latest file to submitted/ and list the others."""
    for (student, lab), candidates in sorted(groups.items()):
        if (student, lab) in out.pairs:  # already collected from the student's folder
            out.not_graded += [(c.name, f"a second submission of {student}'s {lab}: the one in the "
                                        f"folder {student}/ is graded") for c in candidates]
            continue
        winner = max(candidates, key=lambda c: c.order)
        out.not_graded += [_superseded(c, winner) for c in candidates if c is not winner]
        dest = root / "submitted" / student / lab
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True)
        if winner.path is not None:
            shutil.copy2(winner.path, dest / f"{lab}.ipynb")
        else:
            (dest / f"{lab}.ipynb").write_bytes(winner.data or b"")
        _write_marks(dest, winner.info.late)
        out.pairs.append((student, lab))


def _superseded(loser: _Candidate, winner: _Candidate) -> tuple[str, str]:
    return loser.name, (f"an older or duplicate submission of {winner.info.student}'s {winner.info.lab}: "
                        f"{winner.name} is graded instead")


def _from_zip(root: Path, archive: Path, labs: list[str], out: Collected) -> None:
    groups: dict[tuple[str, str], list[_Candidate]] = {}
    with zipfile.ZipFile(archive) as zf:
        for member in zf.infolist():
            parts = tuple(p for p in member.filename.split("/") if p)
            if member.is_dir() or not parts or _ignored(parts):
                continue
            info = _with_folder_student(parts, labs)
            reason = _why_not(parts[-1], info, labs)
            if reason is None and member.file_size > MAX_BYTES:
                reason = f"larger than {MAX_BYTES // 2**20} MB"
            if reason is not None:
                out.not_graded.append((member.filename, reason))
                continue
            groups.setdefault((info.student, info.lab), []).append(_Candidate(
                member.filename, info, (info.version, member.date_time, member.filename), data=zf.read(member)))
    _settle(root, groups, out)


def _with_folder_student(parts: tuple[str, ...], labs: list[str]) -> _Name | None:
    """A zip member's name; a file named just LAB.ipynb takes its student from its folder."""
    info = parse_name(parts[-1], labs)
    if info is None or info.student:
        return info
    for folder in reversed(parts[:-1]):
        if folder not in labs:
            info.student, info.late = _prefix(folder + "_")
            break
    return info


def _links(folder: str, names: list[str]) -> list[str]:
    return [n for n in names if Path(folder, n).is_symlink()]


def _notebooks(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.ipynb")
                  if p.is_file() and not p.is_symlink() and not _ignored(p.relative_to(folder).parts))


def _from_student_folder(root: Path, source: Path, folder: Path, labs: list[str], in_place: bool,
                         out: Collected) -> None:
    """STUDENT/LAB/ and STUDENT/LAB.ipynb (or a name like it): the newer of the two is graded."""
    student = folder.name
    groups: dict[str, list[_Candidate]] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if _ignored(rel.parts):
            continue
        if path.is_symlink():  # it could point at the grader's files: never followed
            out.not_graded.append((path.relative_to(source).as_posix(), "a symbolic link, not followed"))
            continue
        if not path.is_file() or (len(rel.parts) > 1 and rel.parts[0] in labs):
            continue
        info = parse_name(path.name, labs) if len(rel.parts) == 1 else None
        if info is not None:
            info.student = student
        shown = path.relative_to(source).as_posix()
        if reason := _why_not(path.name, info, labs, need_student=False):
            out.not_graded.append((shown, reason))
        else:
            groups.setdefault(info.lab, []).append(
                _Candidate(shown, info, (info.version, path.stat().st_mtime, path.name), path=path))
    for lab in labs:
        _settle_folder(root, source, folder / lab, groups.get(lab, []), in_place, out)


def _settle_folder(root: Path, source: Path, lab_folder: Path, files: list[_Candidate], in_place: bool,
                   out: Collected) -> None:
    """Of a student's lab folder and their loose files for that lab, copy the newest into
    submitted/ (in place: leave it there) and list the others and any stray notebook beside it."""
    student, lab = lab_folder.parent.name, lab_folder.name
    winner = max(files, key=lambda c: c.order) if files else None
    candidates = list(files)
    if lab_folder.is_dir() and not lab_folder.is_symlink():
        newest = max((p.stat().st_mtime for p in _notebooks(lab_folder)), default=0.0)
        folder = _Candidate(f"{lab_folder.relative_to(source).as_posix()}/", _Name(lab, 0, student),
                            (), path=lab_folder)
        candidates.append(folder)
        if winner is None or newest >= winner.path.stat().st_mtime:
            winner = folder
    if winner is None:
        return
    dest = root / "submitted" / student / lab
    if winner.path.is_dir() and not in_place:
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(winner.path, dest, ignore=_links)
    elif not winner.path.is_dir():
        if not in_place:
            shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True, exist_ok=True)
        if not (dest / f"{lab}.ipynb").is_file() or (dest / f"{lab}.ipynb").read_bytes() != winner.path.read_bytes():
            shutil.copy2(winner.path, dest / f"{lab}.ipynb")
        _write_marks(dest, winner.info.late)
    graded = dest / f"{lab}.ipynb"
    graded_bytes = graded.read_bytes() if graded.is_file() else None
    for loser in candidates:
        same = loser.path.is_file() and loser.path.read_bytes() == graded_bytes
        if loser is not winner and not (in_place and same):  # in place: our own copy of it
            out.not_graded.append(_superseded(loser, winner))
    if winner.path.is_dir() and graded_bytes is not None:
        out.not_graded += [(f"{winner.name}{p.relative_to(dest).as_posix()}",
                            f"another notebook beside {lab}.ipynb, which is graded")
                           for p in _notebooks(dest) if p != graded and p.read_bytes() != graded_bytes]
    out.pairs.append((student, lab))


def _from_folder(root: Path, source: Path, labs: list[str], out: Collected) -> None:
    """A folder of student folders (STUDENT/LAB/, STUDENT/LAB.ipynb) and loose LMS files; in
    place when it is ROOT/submitted itself."""
    in_place = source.resolve() == (root / "submitted").resolve()
    loose: dict[tuple[str, str], list[_Candidate]] = {}
    for path in sorted(source.iterdir()):
        if _ignored((path.name,)):
            continue
        if path.is_symlink():
            out.not_graded.append((path.name, "a symbolic link, not followed"))
        elif path.is_dir():
            _from_student_folder(root, source, path, labs, in_place, out)
        else:
            _loose(path, labs, in_place, loose, out)
    _settle(root, loose, out)


def _loose(path: Path, labs: list[str], in_place: bool, loose: dict[tuple[str, str], list[_Candidate]],
           out: Collected) -> None:
    """A file at the top of a folder: an unzipped LMS download, named STUDENT_..._LAB.ipynb."""
    info = parse_name(path.name, labs)
    if reason := "not in a student's folder" if in_place else _why_not(path.name, info, labs):
        out.not_graded.append((path.name, reason))
    else:
        loose.setdefault((info.student, info.lab), []).append(
            _Candidate(path.name, info, (info.version, path.stat().st_mtime, path.name), path=path))


def collect(root: Path, source: Path, labs: list[str]) -> Collected:
    """Bring the submissions in ``source`` (an LMS zip, a folder, or ROOT/submitted itself)
    into ROOT/submitted/STUDENT/LAB/, and say why each other file is not graded.

    Args:
        root: the course root.
        source: the zip or folder the instructor named.
        labs: the course's labs (a file for any other lab is listed, not collected).

    Returns:
        The (student, lab) pairs collected, the files not graded with their reasons, and the
        late flags and submission times the LMS gave.
    """
    root, source = Path(root), Path(source)
    out = Collected()
    if source.is_file() and zipfile.is_zipfile(source):
        _from_zip(root, source, labs, out)
    elif source.is_dir():
        _from_folder(root, source, labs, out)
    else:
        out.not_graded.append((source.name, "neither a folder nor a zip archive"))
    late = recorded_late(root)
    out.pairs.sort()
    out.late = {pair: late[pair] for pair in out.pairs if late.get(pair)}
    return out
