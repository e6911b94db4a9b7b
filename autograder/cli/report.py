"""``python -m autograder report [LAB ...]``: the class report of each lab, from the recorded verdicts
(reports/LAB/index.html; the report is ``autograder.grading.grader.report``'s)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    report = sub.add_parser(
        "report",
        help="the class report of each lab from the recorded verdicts: an HTML page "
        "and CSV files, and a copy without student ids (class/)",
    )
    report.add_argument("labs", nargs="*", metavar="LAB", help="labs to report (default: every lab with verdicts)")
    report.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help="write DIR/LAB/ (default: ROOT/reports, beside grades.csv)",
    )


def run(root: Path, args: argparse.Namespace) -> int:
    """Write the class report of each lab asked for (every lab with verdicts by default)."""
    from autograder.grading.grader import report

    labs = args.labs or report.sheets.recorded_labs(root)
    if not labs:
        print(f"no verdicts recorded under {root / 'autograded'}: grade first", file=sys.stderr)
        return 2
    missing = 0
    for lab in labs:
        try:
            tally, pairs, notes = report.write_report(root, lab, args.out)
        except report.NoVerdicts as err:
            print(err, file=sys.stderr)
            missing += 1
            continue
        alike = len(report.alike.matches(pairs))
        print(
            f"{lab}: {len(tally.scores)} students, {len(tally.mistakes)} mistakes, {alike} pairs of students with "
            f"similar answers: "
            f"{(args.out or report.default_out(root)) / lab / 'index.html'}"
        )
        for note in notes:
            print(f"  {note}", file=sys.stderr)
    return 2 if missing else 0
