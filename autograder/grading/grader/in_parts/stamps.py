"""What a grading has finished, so that the next one grades only the rest: one stamp per
(student, lab), written last, and the start-up check's stamp for the course's state.

A stamp, ``grading-logs/STUDENT--LAB.stamp.json`` beside the submission's log, holds the key of what was graded and what
came of it (graded or not, the notes of its summary line). The key is a hash of the exact
bytes graded (the staged notebook and the time it was handed in), the lab's release and
source, every file of the ``autograder`` package every grading process imports (its templates
too), the grading's settings (``nbgrader_config.py``, the limits, the sandbox) and the versions
of what grades and renders. The stamp also lists the files the submission's grading wrote. A
submission whose stamp has the key of today's bytes, and whose results are all in place (its
row in the gradebook and every file its stamp lists), is not graded again.

A stamp is the last write of a submission, and it is written to a temporary name and renamed:
a grading stopped at any point leaves either a stamp over complete results or no stamp. Before
a submission is graded, its stamp is removed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import platform
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from autograder.grading.grader.in_parts.atomic import write_atomic
from autograder.grading.grader.verdicts_json import FILENAME
from autograder.grading.layout import CourseLayout

# What a grading imports besides the package: what runs the notebook and the checks, and what
# renders and sanitises the feedback page (a new nbconvert, nh3 or latex2mathml may write another page).
VERSIONS = (
    "nbgrader",
    "nbclient",
    "nbconvert",
    "nbformat",
    "mistune",
    "jinja2",
    "pygments",
    "nh3",
    "latex2mathml",
    "torch",
    "numpy",
)


def _digest(*parts: bytes) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(len(part).to_bytes(8, "big"))
        hasher.update(part)
    return hasher.hexdigest()


def _files(folder: Path) -> list[bytes]:
    """The relative name and the bytes of every file under ``folder`` (Python's caches left out), sorted."""
    found = sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")
    return [part for p in found for part in (str(p.relative_to(folder)).encode(), p.read_bytes())]


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return ""


def course_key(layout: CourseLayout, package: Path, settings: dict[str, Any]) -> str:
    """The hash of what every submission of the course is graded with: every file of the package
    (a feedback template shapes a page as its modules do), ``nbgrader_config.py``, ``settings``
    (the limits, the sandbox, the cell timeout) and the versions of Python and of the libraries
    that grade and render (``VERSIONS``)."""
    versions = [platform.python_version(), *(f"{name}=={_version(name)}" for name in VERSIONS)]
    return _digest(
        *_files(package),
        (layout.root / "nbgrader_config.py").read_bytes(),
        json.dumps(settings, sort_keys=True, default=str).encode(),
        " ".join(versions).encode(),
    )


def lab_key(course_key: str, layout: CourseLayout, lab: str) -> str:
    """The course's state with the lab's release and source (its hidden tests) added."""
    return _digest(course_key.encode(), lab.encode(), *(_bytes(p) for p in (layout.release(lab), layout.source(lab))))


def _bytes(path: Path) -> bytes:
    """A file's bytes; none for a file that is not there (a lab not released yet)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def preflight_key(lab_keys: dict[str, str]) -> str:
    """The course's state with every lab's (``lab_key`` of each): what the start-up check vouches for."""
    return _digest(*(f"{lab} {key}".encode() for lab, key in sorted(lab_keys.items())))


def submission_key(lab_key: str, staged: Path, original_id: str) -> str:
    """The key of one submission: its lab's state, and every file staged for it (the notebook,
    the time it was handed in) with who the student is."""
    return _digest(lab_key.encode(), original_id.encode(), *_files(staged))


@dataclass
class Stamp:
    """What a finished submission left: its key, what its summary line says, and the files its
    grading wrote (relative to the course's root; ``results``). None for a stamp written before
    stamps listed them: such a submission is graded again."""

    key: str
    graded: bool = True
    notes: list[str] = field(default_factory=list)
    results: list[str] | None = field(default_factory=list)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=1, ensure_ascii=False) + "\n"


def results(layout: CourseLayout, student: str, lab: str) -> list[str]:
    """The files a submission's grading wrote, as they are now, relative to the root: its
    autograded folder (the notebook, ``verdicts.json``), its feedback folder and its log."""
    folders = (layout.autograded / student / lab, layout.feedback / student / lab)
    found = [p for folder in folders for p in folder.rglob("*") if p.is_file()]
    found += [p for p in [layout.grading_logs / f"{student}--{lab}.log"] if p.is_file()]
    return sorted(str(p.relative_to(layout.root)) for p in found)


def read_stamp(layout: CourseLayout, student: str, lab: str) -> Stamp | None:
    """The stamp of ``student``'s ``lab``; None when there is none or it cannot be read."""
    try:
        data = json.loads(layout.stamp(student, lab).read_text(encoding="utf-8"))
        notes, written = data.get("notes", []), data.get("results")
        if not isinstance(data.get("key"), str) or not all(isinstance(n, str) for n in notes):
            return None
        if written is not None and not all(isinstance(name, str) for name in written):
            return None
        return Stamp(
            data["key"], bool(data.get("graded", True)), list(notes), None if written is None else list(written)
        )
    except (OSError, ValueError, AttributeError, TypeError):
        return None


def write_stamp(layout: CourseLayout, student: str, lab: str, stamp: Stamp) -> None:
    write_atomic(layout.stamp(student, lab), stamp.to_json())


def forget(layout: CourseLayout, student: str, lab: str) -> None:
    """Remove the stamp: the submission counts as not graded until a new one is written."""
    layout.stamp(student, lab).unlink(missing_ok=True)


def complete(layout: CourseLayout, student: str, lab: str, held: set[tuple[str, str]]) -> Stamp | None:
    """The stamp of ``student``'s ``lab`` when its results are complete: a stamp that lists
    what its grading wrote, every file of that list still there (a feedback folder deleted by
    hand is written again), and for a graded submission its row in the gradebook (``held``: the
    pairs it holds) and its verdicts (written by the grader's own process: nothing a submission
    does can keep them from being written, and so have it graded again forever); else None."""
    stamp = read_stamp(layout, student, lab)
    if stamp is None or stamp.results is None or not all((layout.root / name).is_file() for name in stamp.results):
        return None
    if stamp.graded and not ((student, lab) in held and (layout.autograded / student / lab / FILENAME).is_file()):
        return None
    return stamp


# A file of start-up checks shared by copies of a course on one machine: the test suite points it
# at a file of its session, so that its temporary courses of one state are checked once. The key
# is the course's state (the package, nbgrader_config.py, the settings, the versions, each lab's
# release and source), not the machine or the course's folder: share it on one machine only.
SHARED_RECORD = "AUTOGRADER_CHECKED"


def checked_path(layout: CourseLayout) -> Path:
    """Where the start-up check records the states it passed in."""
    return layout.grading_state / "checked.json"


def _records(layout: CourseLayout) -> list[Path]:
    """The course's record, and the shared one that ``$AUTOGRADER_CHECKED`` names, if any."""
    shared = os.environ.get(SHARED_RECORD, "")
    return [checked_path(layout), *([Path(shared)] if shared else [])]


def _passed(path: Path) -> list[str]:
    try:
        return [k for k in json.loads(path.read_text(encoding="utf-8")).get("passed", []) if isinstance(k, str)]
    except (OSError, ValueError, AttributeError):
        return []


def was_checked(layout: CourseLayout, key: str) -> bool:
    """Did the start-up check pass in the state ``key`` (a ``preflight_key``), in this course
    or in a copy of it that shares its record (``SHARED_RECORD``)? A pass found only in the shared
    record is copied into the course's own, which then holds it without the shared one."""
    own, *shared = _records(layout)
    if key in _passed(own):
        return True
    if any(key in _passed(path) for path in shared):
        _write_passed(own, key, 15)  # the course's own record only: the shared one has it
        return True
    return False


def record_checked(layout: CourseLayout, key: str) -> None:
    """Record that the start-up check passed in the state ``key`` (the last few states kept in
    the course's record, more in a shared one)."""
    own, *shared = _records(layout)
    _write_passed(own, key, 15)
    for path in shared:  # not locked: a record another process writes at the same time may be lost
        with contextlib.suppress(OSError):  # an unwritable shared file costs a check later, never this grading
            _write_passed(path, key, 500)


def _write_passed(path: Path, key: str, kept: int) -> None:
    passed = [k for k in _passed(path) if k != key][-kept:] + [key]
    write_atomic(path, json.dumps({"passed": passed}, indent=1) + "\n")
