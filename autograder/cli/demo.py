"""``python -m autograder demo [DIR]``: a small example class (four students of the warm-up) built in
DIR as a Moodle download, graded as ``grade`` grades and exported for Moodle as ``export`` does
(``make demo``; the class is ``autograder.grading.demo``'s)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from autograder.cli import export, grade


def add_parser(sub: Any) -> None:
    demo = sub.add_parser(
        "demo",
        help="build a small example class (full, partial, blank and wrong answers) in DIR and grade it as `grade` does",
    )
    demo.add_argument(
        "dir",
        type=Path,
        nargs="?",
        default=None,
        metavar="DIR",
        help="the demo's folder, removed and written again on each run (default: ROOT/demo)",
    )
    demo.add_argument("--lab", default="00-warmup", help="the lab the class hands in (default: 00-warmup)")


def run(root: Path, args: argparse.Namespace) -> int:
    """Build the example class (autograder.grading.demo) and grade it as `grade` does."""
    from autograder.grading import course, demo

    if args.lab not in course.labs(root):
        raise course.UnknownLab(f"no such lab in solutions/: {args.lab} (labs: {', '.join(course.labs(root))})")
    folder = (args.dir or root / "demo").resolve()
    try:
        source = demo.build(root, folder, args.lab)
    except demo.DemoFolderInUse as err:
        print(err, file=sys.stderr)
        return 2
    print(f"demo class of {args.lab} written to {source}: students {', '.join(demo.STUDENTS)}", flush=True)
    graded = _run(folder, grade, ["grade", str(source), "--no-progress"])  # ends with where the results are
    return graded or _run(folder, export, ["export", "--lms", "moodle", args.lab])  # ends with the Moodle files


def _run(folder: Path, command: Any, argv: list[str]) -> int:
    """Run ``command`` as ``python -m autograder --course FOLDER ARGV`` does."""
    from autograder.grading import course

    parser = argparse.ArgumentParser(prog="python -m autograder")
    command.add_parser(parser.add_subparsers(dest="command", required=True))
    return command.run(course.find_root(folder), parser.parse_args(argv))
