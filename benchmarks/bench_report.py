"""The class report of one lab for a class of 500, from recorded verdicts: seconds.

The class is ``example_class``'s of ``tests/grading/grader/report/report_class.py``
(verdicts.json files written once, each student's answers their own); the report is written
from them ``--repeats`` times in one process and the median
reported: reading every file and the release, the tally, the similar-answer search
(fingerprints, the boilerplate and the code common to more than M answers left out, the
prefix-filtered join, the pairs of students), the two plots, both HTML pages and the CSV files. Grading is
not timed here: the report only reads what grading recorded.

    python benchmarks/bench_report.py
    python benchmarks/bench_report.py --students 2000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    p.add_argument("--students", type=int, default=500, help="students in the class")
    p.add_argument("--repeats", type=int, default=3, help="reports written; the median is reported")
    p.add_argument("--smoke", action="store_true", help="50 students, one report: seconds")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    sys.path.insert(0, str(REPO))  # a script: the repository's tests package importable
    from autograder.grading.grader.report import alike as similar
    from autograder.grading.grader.report import write_report
    from tests.grading.grader.report import report_class as example

    students, repeats = (50, 1) if args.smoke else (args.students, args.repeats)
    with tempfile.TemporaryDirectory(prefix="bench-report-") as folder:
        root = Path(folder)
        example.example_class(root, students)
        print(
            f"class of {students} students on {example.LAB}: recorded verdicts, {len(example.EXAMPLE_PLAN)} exercises"
        )
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            tally, pairs, _ = write_report(root, example.LAB)
            times.append(time.perf_counter() - start)
        size = sum(p.stat().st_size for p in (root / "reports").rglob("*")) // 1024
        print(
            f"report: {statistics.median(times):.2f} s (median of {repeats}), {len(tally.mistakes)} mistakes, "
            f"{len(similar.matches(pairs))} pairs of students with similar answers ({len(pairs)} answers alike), "
            f"{size} KiB"
        )


if __name__ == "__main__":
    main()
