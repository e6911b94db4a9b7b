"""``python -m autograder export --lms moodle|canvas|blackboard LAB``: its flags and its run
(``make export LMS=moodle LAB=00-warmup``); the work is ``autograder.grading.lms.export``'s."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from autograder.grading.lms import LMSES


def add_parser(subparsers: Any) -> argparse.ArgumentParser:
    """The ``export`` command's parser, added to ``subparsers``."""
    export = subparsers.add_parser(
        "export",
        help="write a graded lab's grades (and feedback) as the files an LMS imports: Moodle's grading "
        "worksheet and feedback zip, Canvas's gradebook CSV, Blackboard's Grade Center file",
    )
    export.add_argument("lab", metavar="LAB", help="the graded lab, such as 00-warmup")
    export.add_argument("--lms", required=True, choices=LMSES, help="the LMS that takes the files")
    export.add_argument(
        "--template",
        "--worksheet",
        type=Path,
        default=None,
        metavar="FILE",
        dest="template",
        help="the LMS's own file to fill in, every other cell kept: Moodle's downloaded grading worksheet, "
        "Canvas's gradebook export, Blackboard's Grade Center download",
    )
    export.add_argument(
        "--missing",
        choices=["0"],
        default=None,
        help="with --template: give 0 to a student the LMS lists with no graded submission "
        "(default: the LMS's empty cell stays empty)",
    )
    export.add_argument(
        "--assignment",
        default=None,
        metavar="NAME",
        help="the assignment's name in Canvas or Blackboard (default: the lab's name)",
    )
    export.add_argument(
        "--out", type=Path, default=None, metavar="DIR", help="the folder written (default: ROOT/exports/LMS/LAB)"
    )
    export.add_argument("--db", default=None, metavar="URL", help="the gradebook (default: the course's gradebook.db)")
    return export


def run(root: Path, args: argparse.Namespace) -> int:
    """Export, print the summary (the files last); 2 when it cannot be written as asked."""
    from autograder.grading.lms.export import export
    from autograder.grading.lms.table import ExportError

    try:
        summary = export(root, args.lab, args.lms, args.template, args.missing, args.assignment, args.out, args.db)
    except ExportError as err:
        print(f"export: {err}", file=sys.stderr)
        return 2
    print("\n".join(summary.lines()))
    return 0
