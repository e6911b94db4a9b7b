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
    _add_resume_and_shards(grade)


def _add_resume_and_shards(grade: Any) -> None:
    """The flags of a grading resumed, and of a grading in shards."""
    grade.add_argument(
        "--regrade",
        action="store_true",
        help="grade every submission again, also those already graded with the same bytes (skipped by default)",
    )
    mode = grade.add_mutually_exclusive_group()
    mode.add_argument(
        "--intake",
        action="store_true",
        help="a grading in shards, first step: collect the class, check the grader, plan the shards",
    )
    mode.add_argument(
        "--shard",
        nargs="?",
        const="",
        default=None,
        metavar="I/N",
        help="grade shard I of N of the planned class (without I/N: from SLURM_ARRAY_TASK_ID, or Kubernetes' "
        "JOB_COMPLETION_INDEX with AUTOGRADER_SHARDS); one machine with the SQLite gradebook, several with --db",
    )
    mode.add_argument(
        "--finish",
        action="store_true",
        help="a grading in shards, last step: scores, grades.csv, class reports and summary, once every shard ended",
    )
    grade.add_argument(
        "--allow-incomplete",
        action="store_true",
        help="with --finish: write grades.csv although some submissions have no result (their rows say missing)",
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


def _shard(args: argparse.Namespace) -> Any:
    """The shard asked for (``--shard I/N``, or the job array's environment); None without --shard."""
    from autograder.grading.grader.in_parts import shards

    if args.shard is None:
        return None
    return shards.parse(args.shard) if args.shard else shards.from_environment()


def _mode(root: Path, source: Path, options: Any, args: argparse.Namespace) -> Any:
    """The outcomes of the grading asked for: the whole class, or a step of a grading in shards."""
    from autograder.grading.grader import pipeline
    from autograder.grading.grader.in_parts import conductor

    if args.intake:
        return conductor.plan(root, source, options)
    if args.finish:
        return conductor.finish(root, options, allow_incomplete=args.allow_incomplete)
    shard = _shard(args)
    if shard is None:
        return pipeline.grade(root, source, options)
    if not (args.db or "").startswith("postgresql"):
        print(
            "Note: shards on this machine share the SQLite gradebook through its lock file; shards on several "
            "machines need PostgreSQL (--db postgresql+psycopg2://...).",
            file=sys.stderr,
        )
    return conductor.shard(root, shard, options)


def _options(args: argparse.Namespace) -> Any:
    from autograder.grading.grader import grading

    return grading.Options(
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
        regrade=args.regrade,
    )


def run(root: Path, args: argparse.Namespace) -> int:
    """``grade``: the class graded, its summary, then where the results are (make grade)."""
    from autograder.grading.grader.in_parts import shards
    from autograder.grading.grader.intake import selection
    from autograder.grading.grader.run import bwrap, nbconfig, preflight

    source = args.submissions if args.submissions.is_absolute() else Path.cwd() / args.submissions
    if args.allow_incomplete and not args.finish:
        print("--allow-incomplete goes with --finish", file=sys.stderr)
        return 2
    try:
        _shard(args)
    except shards.ShardError as err:
        print(err, file=sys.stderr)
        return 2
    if not source.exists() and args.shard is None and not args.finish:
        print(f"no submissions at {source}", file=sys.stderr)
        return 2
    options = _options(args)
    try:
        with _sigterm_as_interrupt():
            outcomes = _mode(root, source, options, args)
    except (
        selection.UnknownSelection,
        bwrap.Unavailable,
        preflight.PreflightFailed,
        nbconfig.OutdatedConfig,
        shards.ShardError,
    ) as err:
        print(err, file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(
            "grading stopped: the submissions graded so far are kept, and grades.csv was not written; "
            "run the same command again to grade only what is left",
            file=sys.stderr,
        )
        return 130
    return _report(root, outcomes, args, options.csv_path)


def _report(root: Path, outcomes: Any, args: argparse.Namespace, csv_path: Path | None) -> int:
    """The summary, what comes next or where the results are; the exit status (1 when a
    submission was not graded for the grader's fault, or is missing from a finish)."""
    from autograder.grading.grader import grading
    from autograder.grading.grader.in_parts import conductor
    from autograder.grading.protocol import boot

    print(grading.summary(outcomes))
    if warning := boot.mismatch(root):
        print(f"Note on the grader: {warning}")
    if args.intake or args.shard is not None:
        print(
            "Next: "
            + ("every shard, `grade --shard I/N`" if args.intake else "`grade --finish` once every shard ended")
        )
    else:
        print(grading.results(outcomes, CourseLayout(root.resolve()), csv_path))
    grader_errors = [o for o in outcomes if any(note.startswith("GRADER ERROR") for note in o.notes)]
    if grader_errors:
        print(
            f"{len(grader_errors)} submission(s) were not graded for the grader's fault (GRADER ERROR above): "
            "fix the cause and grade them again",
            file=sys.stderr,
        )
    missing = [o for o in outcomes if conductor.MISSING in o.notes]
    return 1 if grader_errors or missing else 0
