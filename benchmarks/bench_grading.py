"""Grading speed: seconds per graded notebook, and the speed-up of --jobs 2 over --jobs 1
(with identical grades.csv), on a temporary course of warm-up submissions; then, for a fully
answered submission of every lab, nbgrader's autograde in the sandbox plus the independent
check (the target: at most 15 s together, kernel and child starts included).

The class is graded ``--repeat`` times with each number of jobs, the two alternating, and the
medians are compared: on a shared or virtual machine one run can be seconds off.

    python benchmarks/bench_grading.py [--students 8] [--jobs 2] [--repeat 3] [--no-every-lab]
    python benchmarks/bench_grading.py --smoke    # 1 student, the warm-up lab alone: a test that it runs
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import nbformat

from autograder.grading import answers, course
from autograder.grading.grader import grading, pipeline

REPO = Path(__file__).resolve().parents[1]
LAB = "00-warmup"


def _course(folder: Path, lab: str = LAB) -> Path:
    """A course of ``lab`` alone whose gradebook already holds the lab (not part of the times);
    the first course of a lab is kept as a template, later ones are copies of it."""
    template = folder.parent / f"template-{lab}"
    if not template.is_dir():
        template.mkdir(parents=True)
        shutil.copy2(REPO / "nbgrader_config.py", template)
        shutil.copytree(REPO / "solutions" / lab, template / "solutions" / lab)
        shutil.copytree(REPO / "notebooks" / lab, template / "notebooks" / lab)
        course.generate(template, lab, release_dir=template / "scratch-release")  # the gradebook's lab entries
    shutil.copytree(template, folder)
    return folder


def _inbox(folder: Path, students: int, lab: str = LAB, answered: int | None = None) -> Path:
    """``students`` submissions of ``lab``; student i answers the first i % 3 exercises, or
    the first ``answered`` when given."""
    exercises = list(answers.solutions(REPO, lab))
    for i in range(students):
        nb = answers.answered(REPO, lab, exercises[: i % 3 if answered is None else answered])
        path = folder / f"student{i:02d}" / lab / f"{lab}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, str(path))
    return folder


def every_lab(work: Path, labs: list[str] | None = None) -> float:
    """Autograde one fully answered submission of every lab (or of ``labs``); print and return
    the slowest."""
    print("a fully answered submission: autograde (sandboxed kernel) + independent check = total:")
    slowest = 0.0
    for lab in labs or course.labs(REPO):
        root = _course(work / f"lab-{lab}", lab)
        inbox = _inbox(work / f"inbox-{lab}", 1, lab, answered=10**6)
        (outcome,) = pipeline.grade(root, inbox, grading.Options(jobs=1, progress=False))
        total = outcome.autograde_seconds + outcome.check_seconds
        slowest = max(slowest, total)
        print(
            f"  {lab:28s} {outcome.autograde_seconds:5.2f} s + {outcome.check_seconds:4.2f} s = {total:5.2f} s"
            f"   score {outcome.score:g} / {outcome.max_score:g}"
        )
    print(f"slowest lab: {slowest:.2f} s")
    return slowest


def _seconds(values: list[float]) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=8, help="submissions to grade (default: 8)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel jobs compared with 1 (default: 2)")
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="gradings of the class with each number of jobs, alternating; their medians are compared (default: 3)",
    )
    parser.add_argument(
        "--every-lab",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also time the autograding of every lab's full solution (default: on)",
    )
    parser.add_argument(
        "--smoke",
        action="store_true",
        help="the smallest run that prints every line (1 student, --jobs 2, --repeat 1, "
        "the warm-up lab alone for the every-lab part): for the tests, not for numbers",
    )
    args = parser.parse_args()
    if args.smoke:  # its defaults; flags given with it still win
        parser.set_defaults(students=1, jobs=2, repeat=1)
        args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        inbox = _inbox(work / "inbox", args.students)
        seconds: dict[int, list[float]] = {1: [], args.jobs: []}
        csvs, autograde, checked = set(), [], []
        for run in range(args.repeat):
            for jobs in (1, args.jobs):
                root = _course(work / f"jobs{jobs}-{run}")
                start = time.perf_counter()
                outcomes = pipeline.grade(root, inbox, grading.Options(jobs=jobs, progress=False))
                seconds[jobs].append(time.perf_counter() - start)
                csvs.add((root / "grades.csv").read_bytes())
                if jobs == 1:
                    autograde += [o.autograde_seconds for o in outcomes]
                    checked += [o.check_seconds for o in outcomes]
        serial, parallel = statistics.median(seconds[1]), statistics.median(seconds[args.jobs])
        print(
            f"grading {args.students} notebooks of {LAB} (os.cpu_count() = {os.cpu_count()}, "
            f"load average {os.getloadavg()[0]:.1f} at the end), {args.repeat} time(s) with each number of jobs"
        )
        print(
            f"--jobs 1: {serial:.1f} s in all, {serial / args.students:.2f} s per graded notebook "
            f"(autograde, feedback, grades.csv; median; runs: {_seconds(seconds[1])})"
        )
        print(
            f"nbgrader autograde of one notebook (kernel start included): "
            f"mean {sum(autograde) / len(autograde):.2f} s, max {max(autograde):.2f} s"
        )
        print(
            f"independent check of one notebook (sandboxed child included): "
            f"mean {sum(checked) / len(checked):.2f} s, max {max(checked):.2f} s"
        )
        print(
            f"--jobs {args.jobs}: {parallel:.1f} s in all, {parallel / args.students:.2f} s per notebook "
            f"(median; runs: {_seconds(seconds[args.jobs])})"
        )
        same = len(csvs) == 1
        print(f"identical grades.csv: {same}")
        print(f"speed-up of --jobs {args.jobs} over --jobs 1: {serial / parallel:.2f}x")
        if args.every_lab:
            every_lab(work, [LAB] if args.smoke else None)
        return 0 if same else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
