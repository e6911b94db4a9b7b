"""Grading speed: seconds per graded notebook, and the speed-up of --jobs 2 over --jobs 1
(with identical grades.csv), on a temporary course of warm-up submissions, with where a
notebook's seconds go (the worker's steps, the kernel's and the check child's starts, the cells);
then, for a fully answered submission of every lab, nbgrader's autograde in the sandbox plus the
independent check (the target: at most 15 s together; for the warm-up lab the kernel's and the
child's starts are included, for the others they boot during that lab's start-up check).

The start-up check runs once per state of a course: the first grading, timed on its own, pays it
and records it in the template every later course is copied from, as a course graded again
would have it. The class is then graded ``--repeat`` times with each number of jobs, the two
alternating, and the medians are compared: on a shared or virtual machine one run can be seconds
off. ``--json`` writes the figures (benchmarks/results/grading-breakdown.json holds a run).

    python benchmarks/bench_grading.py [--students 8] [--jobs 2] [--repeat 3] [--no-every-lab] [--json FILE]
    python benchmarks/bench_grading.py --smoke    # 1 student, the warm-up lab alone: a test that it runs
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
if "--smoke" not in sys.argv[1:]:  # the first grading pays the start-up check, whoever runs this
    os.environ.pop("AUTOGRADER_CHECKED", None)  # (a smoke run, whose numbers mean nothing, may find it done)

import nbformat

from autograder.grading import answers, course
from autograder.grading.grader import grading, pipeline
from autograder.grading.layout import CourseLayout

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


def _cell_seconds(notebook: Path) -> list[float]:
    """How long each code cell of an autograded notebook ran (nbclient's timing metadata)."""
    nb = nbformat.read(str(notebook), as_version=4)
    out = []
    for cell in nb.cells:
        timing = cell.get("metadata", {}).get("execution", {})
        if cell.cell_type == "code" and "iopub.execute_input" in timing and "shell.execute_reply" in timing:
            begin, end = (
                datetime.fromisoformat(timing[k].replace("Z", "+00:00"))
                for k in ("iopub.execute_input", "shell.execute_reply")
            )
            out.append((end - begin).total_seconds())
    return out


def breakdown(outcomes: list, roots: list[Path], seconds: list[float]) -> dict[str, float]:
    """Where a notebook's seconds go, over the notebooks graded with --jobs 1, each a mean of
    those that have it (the kernel's launch: those whose kernel was not started ahead): the
    worker's steps (nbgrader autograde, of which the kernel's start, the first (install) cell and
    the others; the independent check, of which its child's start; the verdict steps; the
    feedback page), the share of jobs whose sandboxes were started ahead (a fraction) and, per
    notebook, what each grading costs besides its jobs (worker processes, gradebook, grades.csv,
    the pipeline's steps)."""
    parts: dict[str, list[float]] = {}

    def add(name: str, value: float) -> None:
        parts.setdefault(name, []).append(value)

    for outcome, root in zip(outcomes, roots, strict=True):
        add("job (wall clock, as the pipeline saw it)", outcome.seconds)
        for step, value in outcome.steps.items():
            add(step, value)
        add("started ahead (share of jobs)", float(outcome.warm))
        cells = _cell_seconds(root / "autograded" / outcome.student / outcome.lab / f"{outcome.lab}.ipynb")
        if cells:
            add("cells: the first (install) cell", cells[0])
            add("cells: the others", sum(cells[1:]))
    means = {name: statistics.mean(values) for name, values in parts.items()}
    per_grading = statistics.mean(seconds) - sum(o.seconds for o in outcomes) / len(seconds)
    means["per grading, outside the jobs (per notebook)"] = per_grading * len(seconds) / len(outcomes)
    return means


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
    parser.add_argument(
        "--json", type=Path, help="also write the figures there (benchmarks/results/grading-breakdown.json)"
    )
    args = parser.parse_args()
    if args.smoke:  # its defaults; flags given with it still win
        parser.set_defaults(students=1, jobs=2, repeat=1)
        args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        inbox = _inbox(work / "inbox", args.students)
        # the start-up check runs once per state of the course: on the first grading, timed alone
        # here, then recorded in the template that every later course is copied from
        first = _course(work / "first")
        start = time.perf_counter()
        pipeline.grade(first, inbox, grading.Options(jobs=1, progress=False))
        cold = time.perf_counter() - start
        checked = CourseLayout(first).grading_state / "checked.json"
        template = CourseLayout(work / f"template-{LAB}")
        template.grading_state.mkdir(parents=True, exist_ok=True)
        shutil.copy2(checked, template.grading_state / "checked.json")
        seconds: dict[int, list[float]] = {1: [], args.jobs: []}
        csvs, serial_outcomes, serial_roots = {(first / "grades.csv").read_bytes()}, [], []
        for run in range(args.repeat):
            for jobs in (1, args.jobs):
                root = _course(work / f"jobs{jobs}-{run}")
                start = time.perf_counter()
                outcomes = pipeline.grade(root, inbox, grading.Options(jobs=jobs, progress=False))
                seconds[jobs].append(time.perf_counter() - start)
                csvs.add((root / "grades.csv").read_bytes())
                if jobs == 1:
                    serial_outcomes += outcomes
                    serial_roots += [root] * len(outcomes)
        serial, parallel = statistics.median(seconds[1]), statistics.median(seconds[args.jobs])
        parts = breakdown(serial_outcomes, serial_roots, seconds[1])
        print(
            f"grading {args.students} notebooks of {LAB} (os.cpu_count() = {os.cpu_count()}, "
            f"load average {os.getloadavg()[0]:.1f} at the end), {args.repeat} time(s) with each number of jobs"
        )
        print(
            f"first grading of a new state of the course, its start-up check included (once; recorded "
            f"for every later grading): {cold:.1f} s, --jobs 1"
        )
        print(
            f"--jobs 1: {serial:.1f} s in all, {serial / args.students:.2f} s per graded notebook "
            f"(autograde, feedback, grades.csv; median; runs: {_seconds(seconds[1])})"
        )
        print("where a notebook's seconds go (--jobs 1, mean per notebook):")
        for name, value in parts.items():
            print(f"  {name:52s} {value:6.2f}")
        print(
            f"--jobs {args.jobs}: {parallel:.1f} s in all, {parallel / args.students:.2f} s per notebook "
            f"(median; runs: {_seconds(seconds[args.jobs])})"
        )
        same = len(csvs) == 1
        print(f"identical grades.csv: {same}")
        print(f"speed-up of --jobs {args.jobs} over --jobs 1: {serial / parallel:.2f}x")
        slowest = every_lab(work, [LAB] if args.smoke else None) if args.every_lab else None
        if args.json:
            commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True, text=True)
            record = {
                "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "commit": commit.stdout.strip(),
                "cpus": os.cpu_count(),
                "students": args.students,
                "repeat": args.repeat,
                "first_grading_seconds": round(cold, 2),
                "jobs1_seconds_per_notebook": round(serial / args.students, 3),
                f"jobs{args.jobs}_seconds_per_notebook": round(parallel / args.students, 3),
                "speed_up": round(serial / parallel, 3),
                "identical_grades": same,
                "breakdown_seconds_per_notebook": {name: round(value, 3) for name, value in parts.items()},
                "slowest_lab_seconds": None if slowest is None else round(slowest, 2),
            }
            args.json.write_text(json.dumps(record, indent=1) + "\n")
        return 0 if same else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
