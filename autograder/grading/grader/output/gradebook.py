"""Every write of ours to nbgrader's gradebook, and the one lock around it (nbgrader's own
``autograde`` writes its part through the same, locked, ``Gradebook`` class).

An SQLite gradebook is used in turns: inside ``turns(lock_path)`` every
``nbgrader.api.Gradebook`` opened in this process holds an exclusive ``flock`` on the lock
file from its creation until it is closed, so parallel workers take turns at the gradebook
(short transactions) while their kernels run side by side. SQLite then never sees two
writers; PostgreSQL would cope anyway, and the lock costs it nothing. Each process enters
``turns`` once: the pipeline around a grading, a worker around its jobs.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from autograder.grading.course import generate


def _patch(lock_path: str) -> Callable[[], None]:
    """Patch nbgrader's Gradebook so that each instance holds ``lock_path`` while open;
    returns a function that undoes the patch."""
    from nbgrader import api

    state: dict[str, Any] = {"depth": 0, "fd": None}
    guard = threading.RLock()
    original_init, original_close = api.Gradebook.__init__, api.Gradebook.close

    def acquire() -> None:
        with guard:
            if state["depth"] == 0:
                state["fd"] = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
                fcntl.flock(state["fd"], fcntl.LOCK_EX)
            state["depth"] += 1

    def release() -> None:
        with guard:
            state["depth"] -= 1
            if state["depth"] == 0:
                fcntl.flock(state["fd"], fcntl.LOCK_UN)
                os.close(state["fd"])

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        acquire()
        self._autograder_locked = True
        try:
            original_init(self, *args, **kwargs)
        except BaseException:
            self._autograder_locked = False
            release()
            raise

    def close(self: Any) -> None:
        try:
            original_close(self)
        finally:
            if getattr(self, "_autograder_locked", False):
                self._autograder_locked = False
                release()

    api.Gradebook.__init__, api.Gradebook.close = init, close  # type: ignore[method-assign]

    def undo() -> None:
        api.Gradebook.__init__, api.Gradebook.close = original_init, original_close  # type: ignore[method-assign]

    return undo


@contextlib.contextmanager
def turns(lock_path: str) -> Iterator[str]:
    """While the block runs, every Gradebook of this process takes its turn on ``lock_path``
    ("" for a server database, which needs no turns: nothing is patched); yields the path."""
    undo = _patch(lock_path) if lock_path else None
    try:
        yield lock_path
    finally:
        if undo:
            undo()


def lock_path(scratch: Path, db_url: str) -> str:
    """The lock file of a grading's turns: in its scratch folder for SQLite, "" for a server."""
    return str(scratch / "gradebook.lock") if db_url.startswith("sqlite") else ""


def opened(db_url: str, course_id: str) -> Any:
    """nbgrader's Gradebook on ``db_url`` (a context manager)."""
    from nbgrader.api import Gradebook

    return Gradebook(db_url, course_id)


def ensure_labs(root: Path, labs: list[str], db_url: str, course_id: str, scratch: Path) -> None:
    """``autograde`` needs the cells that ``generate_assignment`` records in the gradebook:
    record any lab the gradebook lacks (the release goes to a scratch folder)."""
    from nbgrader.api import MissingEntry

    missing = []
    with opened(db_url, course_id) as gb:
        for lab in labs:
            try:
                if not gb.find_assignment(lab).notebooks:
                    missing.append(lab)
            except MissingEntry:
                missing.append(lab)
    for lab in missing:
        generate(root, lab, release_dir=scratch / "release", db_url=db_url)


def record_zero(db_url: str, course_id: str, student: str, lab: str) -> None:
    """A submission nbgrader could not grade scores 0 (and still appears in grades.csv)."""
    with opened(db_url, course_id) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SQLAlchemy's autoflush notes inside nbgrader
        gb.update_or_create_student(student)
        submission = gb.update_or_create_submission(lab, student)
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                grade.auto_score = 0
                grade.manual_score = None
                grade.needs_manual_grade = False
        gb.db.commit()


def settle(
    db_url: str, course_id: str, student: str, lab: str, passed: Mapping[str, bool | None]
) -> dict[str, tuple[float, float]]:
    """Score 0 each exercise (grade id) of ``passed`` that the independent check failed (False),
    and full marks each one it passed with the earlier wrong answers made right (None: error
    carried forward). Returns, for every one, its points as nbgrader's autograde left them and
    its max points."""
    before = {}
    with opened(db_url, course_id) as gb:
        for grade_id, ok in passed.items():
            grade = gb.find_grade(grade_id, lab, lab, student)
            before[grade_id] = (grade.auto_score or 0.0, grade.max_score or 0.0)
            if ok is None:
                grade.auto_score = grade.max_score or 0.0
            elif not ok:
                grade.auto_score = 0
        gb.db.commit()
    return before


def scores(db_url: str, course_id: str) -> dict[tuple[str, str], tuple[float, float]]:
    """(student, lab) -> (score, max score) for every submission the gradebook holds."""
    out = {}
    with opened(db_url, course_id) as gb:
        for assignment in gb.assignments:
            for submission in assignment.submissions:
                out[(submission.student_id, assignment.name)] = (submission.score, submission.max_score)
    return out
