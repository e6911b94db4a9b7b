"""``python -m autograder grade``: its flags, and the run that grades a class and prints the
summary, the status legend and where the results are (``make grade``). The grading itself is
``autograder.grading.grader.pipeline``'s, imported when the command runs."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from autograder.grading.layout import CourseLayout
from autograder.grading.protocol.confinement import JOB_SECONDS, Limits


def add_parser(sub: Any) -> None:
    grade = sub.add_parser("grade", help="autograde submissions, generate feedback, write grades.csv, print a summary")
    grade.add_argument(
        "submissions",
        type=Path,
        nargs="?",
        default=Path("submitted"),
        help="a folder STUDENT/LAB/LAB.ipynb (or STUDENT/LAB.ipynb), or an LMS zip download "
        "with files named STUDENT_..._LAB.ipynb (default: submitted)",
    )
    grade.add_argument("--jobs", "-j", type=int, default=1, help="notebooks graded at once (default: 1)")
    grade.add_argument(
        "--db",
        default=None,
        help="gradebook SQLAlchemy URL, such as postgresql+psycopg2://user@host/db (default: ROOT/gradebook.db)",
    )
    grade.add_argument(
        "--student", action="append", default=None, metavar="ID", help="grade only this student (repeat for several)"
    )
    grade.add_argument("--lab", action="append", default=None, metavar="LAB", help="grade only this lab (repeatable)")
    grade.add_argument(
        "--timeout",
        type=int,
        default=None,
        help="seconds a cell may run before it is interrupted (default: 30, from nbgrader_config.py)",
    )
    grade.add_argument(
        "--memory-mb",
        type=int,
        default=Limits.memory_mb,
        help="address-space limit of a grading kernel in MiB (default: %(default)s)",
    )
    grade.add_argument(
        "--job-timeout",
        type=int,
        default=JOB_SECONDS,
        help="seconds one student's lab may take in all before it is stopped (default: %(default)s)",
    )
    grade.add_argument("--csv", type=Path, default=None, help="where to write the grades (default: ROOT/grades.csv)")
    grade.add_argument("--no-progress", action="store_true", help="no progress bar")
    grade.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run student code without the bubblewrap sandbox (only for a class whose code you trust; "
        "every summary line then says so)",
    )


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs (in the main thread), SIGTERM stops it as Ctrl+C does, so grading
    kills its workers and kernels before it exits; the previous handler is put back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(root: Path, args: argparse.Namespace) -> int:
    """``grade``: the class graded, its summary, then where the results are (make grade)."""
    from autograder.grading.grader import pipeline
    from autograder.grading.grader.run import bwrap, nbconfig, preflight
    from autograder.grading.protocol import boot

    source = args.submissions if args.submissions.is_absolute() else Path.cwd() / args.submissions
    if not source.exists():
        print(f"no submissions at {source}", file=sys.stderr)
        return 2
    options = pipeline.Options(
        jobs=args.jobs,
        db_url=args.db,
        students=args.student,
        labs=args.lab,
        timeout=args.timeout,
        limits=Limits(memory_mb=args.memory_mb),
        job_timeout=args.job_timeout,
        csv_path=args.csv,
        progress=not args.no_progress,
        sandbox=not args.no_sandbox,
    )
    try:
        with _sigterm_as_interrupt():
            outcomes = pipeline.grade(root, source, options)
    except (pipeline.UnknownSelection, bwrap.Unavailable, preflight.PreflightFailed, nbconfig.OutdatedConfig) as err:
        print(err, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "grading stopped: the submissions graded so far are in the gradebook; grades.csv was not written",
            file=sys.stderr,
        )
        return 130
    print(pipeline.summary(outcomes))
    if warning := boot.mismatch(root):
        print(f"Note on the grader: {warning}")
    print(pipeline.results(outcomes, CourseLayout(root.resolve()), options.csv_path))
    grader_errors = [o for o in outcomes if any(note.startswith("GRADER ERROR") for note in o.notes)]
    if grader_errors:
        print(
            f"{len(grader_errors)} submission(s) were not graded for the grader's fault (GRADER ERROR above): "
            "fix the cause and grade them again",
            file=sys.stderr,
        )
    return 1 if grader_errors else 0
