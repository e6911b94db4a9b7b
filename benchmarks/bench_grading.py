"""Grading speed: seconds per graded notebook, and the speed-up of --jobs 2 over --jobs 1
(with identical grades.csv), on a temporary course of warm-up submissions; then, for a fully
answered submission of every lab, nbgrader's autograde in the sandbox plus the independent
check (the target: at most 15 s together, kernel and child starts included).

    python benchmarks/bench_grading.py [--students 8] [--jobs 2] [--no-every-lab]
    python benchmarks/bench_grading.py --smoke    # 1 student, the warm-up lab alone: a test that it runs
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import nbformat  # noqa: E402

from autograder.grading import answers, course
from autograder.grading.grader import pipeline  # noqa: E402

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
        (outcome,) = pipeline.grade(root, inbox, pipeline.Options(jobs=1, progress=False))
        total = outcome.autograde_seconds + outcome.check_seconds
        slowest = max(slowest, total)
        print(f"  {lab:28s} {outcome.autograde_seconds:5.2f} s + {outcome.check_seconds:4.2f} s = {total:5.2f} s"
              f"   score {outcome.score:g} / {outcome.max_score:g}")
    print(f"slowest lab: {slowest:.2f} s")
    return slowest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=8, help="submissions to grade (default: 8)")
    parser.add_argument("--jobs", type=int, default=2, help="parallel jobs compared with 1 (default: 2)")
    parser.add_argument("--every-lab", action=argparse.BooleanOptionalAction, default=True,
                        help="also time the autograding of every lab's full solution (default: on)")
    parser.add_argument("--smoke", action="store_true",
                        help="the smallest run that prints every line (1 student, --jobs 2, the warm-up lab "
                             "alone for the every-lab part): for the tests, not for numbers")
    args = parser.parse_args()
    if args.smoke:  # its defaults; flags given with it still win
        parser.set_defaults(students=1, jobs=2)
        args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        inbox = _inbox(work / "inbox", args.students)
        results = {}
        for jobs in (1, args.jobs):
            root = _course(work / f"jobs{jobs}")
            start = time.perf_counter()
            outcomes = pipeline.grade(root, inbox, pipeline.Options(jobs=jobs, progress=False))
            results[jobs] = (time.perf_counter() - start, outcomes, (root / "grades.csv").read_bytes())
        serial, parallel = results[1], results[args.jobs]
        autograde = [o.autograde_seconds for o in serial[1]]
        checked = [o.check_seconds for o in serial[1]]
        print(f"grading {args.students} notebooks of {LAB} (os.cpu_count() = {os.cpu_count()}, "
              f"load average {os.getloadavg()[0]:.1f} at the end)")
        print(f"--jobs 1: {serial[0]:.1f} s in all, {serial[0] / args.students:.2f} s per graded notebook "
              f"(autograde, feedback, grades.csv)")
        print(f"nbgrader autograde of one notebook (kernel start included): "
              f"mean {sum(autograde) / len(autograde):.2f} s, max {max(autograde):.2f} s")
        print(f"independent check of one notebook (sandboxed child included): "
              f"mean {sum(checked) / len(checked):.2f} s, max {max(checked):.2f} s")
        print(f"--jobs {args.jobs}: {parallel[0]:.1f} s in all, {parallel[0] / args.students:.2f} s per notebook")
        same = serial[2] == parallel[2]
        print(f"identical grades.csv: {same}")
        print(f"speed-up of --jobs {args.jobs} over --jobs 1: {serial[0] / parallel[0]:.2f}x")
        if args.every_lab:
            every_lab(work, [LAB] if args.smoke else None)
        return 0 if same else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
