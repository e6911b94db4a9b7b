"""Every write of ours to nbgrader's gradebook, and the one lock around it (nbgrader's own
``autograde`` writes its part through the same, locked, ``Gradebook`` class).

The gradebook is used in turns: inside ``turns(lock)`` every ``nbgrader.api.Gradebook``
opened in this process holds the course's one lock from its creation until it is closed, so
gradings take turns at the gradebook (short transactions) while their kernels run side by
side. For SQLite the lock is an exclusive ``flock`` on one file beside the gradebook
(``lock_for``), the same path for every process of every grading of the course on this
machine; for PostgreSQL it is an advisory lock of the database itself, which serialises the
shards of a grading on several machines with no file lock on a network file system. Each
process enters ``turns`` once: the pipeline around a grading, a worker around its jobs.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from autograder.grading.course import generate_all

ADVISORY_KEY = 0x67726164656B  # the gradebook's advisory lock in PostgreSQL ("gradek")


class _FileLock:
    """An exclusive ``flock`` on one file, taken and given back."""

    def __init__(self, path: str) -> None:
        self.path, self.fd = path, -1

    def take(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def give(self) -> None:
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


class _AdvisoryLock:
    """PostgreSQL's session advisory lock ``ADVISORY_KEY``, on a connection of its own that
    this process keeps while it takes turns."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.connection: Any = None

    def take(self) -> None:
        if self.connection is None:
            from sqlalchemy import create_engine, pool

            engine = create_engine(self.url, poolclass=pool.NullPool, isolation_level="AUTOCOMMIT")
            self.connection = engine.connect()
        self.connection.exec_driver_sql(f"SELECT pg_advisory_lock({ADVISORY_KEY})")

    def give(self) -> None:
        assert self.connection is not None
        self.connection.exec_driver_sql(f"SELECT pg_advisory_unlock({ADVISORY_KEY})")

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None


def _patch(lock: str) -> Callable[[], None]:
    """Patch nbgrader's Gradebook so that each instance holds ``lock`` (a file's path, or a
    PostgreSQL URL for its advisory lock) while open; returns a function that undoes the patch."""
    from nbgrader import api

    held: _FileLock | _AdvisoryLock = _AdvisoryLock(lock) if is_server(lock) else _FileLock(lock)
    state: dict[str, Any] = {"depth": 0}
    guard = threading.RLock()
    original_init, original_close = api.Gradebook.__init__, api.Gradebook.close

    def acquire() -> None:
        with guard:
            if state["depth"] == 0:
                held.take()
            state["depth"] += 1

    def release() -> None:
        with guard:
            state["depth"] -= 1
            if state["depth"] == 0:
                held.give()

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
        if isinstance(held, _AdvisoryLock):
            held.close()

    return undo


@contextlib.contextmanager
def turns(lock: str) -> Iterator[str]:
    """While the block runs, every Gradebook of this process takes its turn on ``lock`` (from
    ``lock_for``; "" for a database that needs none: nothing is patched); yields it."""
    undo = _patch(lock) if lock else None
    try:
        yield lock
    finally:
        if undo:
            undo()


def is_server(db_url: str) -> bool:
    return db_url.startswith("postgresql")


def _sqlite_file(db_url: str) -> Path | None:
    """The file of an SQLite gradebook; None for a server."""
    return Path(db_url.removeprefix("sqlite:///")) if db_url.startswith("sqlite:///") else None


def lock_for(db_url: str) -> str:
    """The one lock of a gradebook, whoever grades into it: for SQLite the file
    ``GRADEBOOK.lock`` beside it (one machine), for PostgreSQL the database's URL (its advisory
    lock, any number of machines), else "" (no turns)."""
    if (file := _sqlite_file(db_url)) is not None:
        return f"{file}.lock"
    return db_url if is_server(db_url) else ""


_nbgrader_alembic_version: Callable[[], str] | None = None  # nbgrader's own, once ``opened`` replaced it
_replacing = threading.Lock()


@functools.cache
def alembic_head() -> str:
    """The schema version nbgrader writes into a new gradebook: what its ``get_alembic_version``
    reads from the ``alembic heads`` command (a Python process of its own), read here instead,
    from the same migration scripts. With more than one head, the one the command prints first is
    alembic's choice, so the command is run (known once ``opened`` replaced it; else an error)."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader import api

    with api._temp_alembic_ini("sqlite:////tmp/gradebook.db") as ini:
        heads = ScriptDirectory.from_config(Config(ini)).get_heads()
    if len(heads) == 1:
        return str(heads[0])
    command = _nbgrader_alembic_version
    if command is None or command is alembic_head:
        raise RuntimeError(f"nbgrader's migrations have {len(heads)} heads and its own reading is not known")
    return command()


def opened(db_url: str, course_id: str) -> Any:
    """nbgrader's Gradebook on ``db_url`` (a context manager). A new gradebook takes its schema
    version from ``alembic_head``, not from a command started for it."""
    global _nbgrader_alembic_version
    from nbgrader import api

    with _replacing:
        if api.get_alembic_version is not alembic_head:
            _nbgrader_alembic_version = api.get_alembic_version
            api.get_alembic_version = alembic_head
    return api.Gradebook(db_url, course_id)


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
    generate_all(root, missing, release_dir=scratch / "release", db_url=db_url)


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


def held(db_url: str, course_id: str) -> set[tuple[str, str]]:
    """(student, lab) of every submission the gradebook holds (one query, no scores summed); an
    SQLite gradebook that is not there yet holds none (and is not made)."""
    from nbgrader.api import Assignment, SubmittedAssignment

    if (file := _sqlite_file(db_url)) is not None and not file.is_file():
        return set()
    with opened(db_url, course_id) as gb:
        rows = (
            gb.db.query(SubmittedAssignment.student_id, Assignment.name)
            .join(Assignment, SubmittedAssignment.assignment_id == Assignment.id)
            .all()
        )
    return {(str(student), str(lab)) for student, lab in rows}
