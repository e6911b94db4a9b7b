"""``python -m autograder COMMAND``: the course's command-line entry points (thin: the work
is done in autograder.grading).

    release [LAB ...]      regenerate notebooks/LAB from solutions/LAB (nbgrader generate_assignment)
    workspace DIR          copy notebooks/ into DIR; a changed lab is refreshed, keeping your answers
    lab [DIR]              copy the labs into DIR (default workspace) and open a student's JupyterLab there
    grade [SUBMISSIONS]    autograde, feedback, grades.csv and a summary (make grade)
    report [LAB ...]       the class report of each lab, from the recorded verdicts (reports/LAB/index.html)
    demo [DIR]             a small example class (four students of the warm-up) in DIR, graded (make demo)
    train                  train the chapter 8 model; checkpoints resume exactly; torchrun for data parallel
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from autograder import cli_grade


def _parser(train_flags: bool = True) -> argparse.ArgumentParser:
    """The command line; ``train_flags=False`` leaves out the train command's flags, which import
    torch to be made (1.7 s, for a command that does not train)."""
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--course",
        type=Path,
        default=None,
        help="the course root (default: the nearest folder up from here with nbgrader_config.py)",
    )
    sub = parser.add_subparsers(dest="command", required=True, help="what to do (each has its own --help)")

    _copy_parsers(sub)
    # --- lab: a student's JupyterLab (make lab) ---
    lab = sub.add_parser(
        "lab", help="copy the labs into DIR as `workspace` does, then open JupyterLab there with a student's tools only"
    )
    lab.add_argument(
        "dir",
        type=Path,
        nargs="?",
        default=Path("workspace"),
        metavar="DIR",
        help="the student's folder (default: workspace)",
    )
    lab.add_argument(
        "--lab",
        action="append",
        default=None,
        metavar="LAB",
        dest="labs",
        help="copy or refresh only this lab before starting, such as 02-self-attention (repeatable)",
    )
    lab.add_argument("--port", type=int, default=None, help="the server's port (default: 8888, or the next free one)")
    lab.add_argument("--ip", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    lab.add_argument("--token", default=None, help="the login token (default: a random one, shown in the URL)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser")
    # --- end of lab ---

    cli_grade.add_parser(sub)
    _report_parser(sub)
    _demo_parser(sub)
    _train_parser(sub, train_flags)
    return parser


def _copy_parsers(sub: Any) -> None:
    """``release`` and ``workspace``: the labs made and copied."""
    release = sub.add_parser("release", help="regenerate notebooks/ from solutions/ (byte-identical on a rerun)")
    release.add_argument(
        "labs", nargs="*", metavar="LAB", help="labs to release, such as 02-self-attention (default: all)"
    )

    workspace = sub.add_parser("workspace", help="copy the released labs into a student's folder, keeping their work")
    workspace.add_argument("dir", type=Path, metavar="DIR", help="the student's folder (created if needed)")
    workspace.add_argument(
        "--lab",
        action="append",
        default=None,
        metavar="LAB",
        dest="labs",
        help="copy or refresh only this lab, such as 02-self-attention (repeatable)",
    )


def _report_parser(sub: Any) -> None:
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


def _report(root: Path, args: argparse.Namespace) -> int:
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


def _demo_parser(sub) -> None:
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


def _demo(root: Path, args: argparse.Namespace) -> int:
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
    return main(["--course", str(folder), "grade", str(source), "--no-progress"])  # ends with where the results are


def _copy_labs(root: Path, target: Path, labs: list[str] | None = None) -> None:
    """Copy the released labs into ``target`` (workspace.sync): new ones copied, changed ones
    refreshed with the student's answers and a backup; say what happened."""
    from autograder.grading import workspace

    print("\n".join(workspace.describe(workspace.sync(root, target, labs), target)))


def _lab(root: Path, args: argparse.Namespace) -> int:
    """Copy the labs into args.dir, then replace this process by JupyterLab on it."""
    from autograder.grading import lab

    _copy_labs(root, args.dir, args.labs)
    command, env = lab.command(args.dir, port=args.port, ip=args.ip, token=args.token, browser=not args.no_browser)
    if "--allow-root" in command:
        print("running as root (a container?): JupyterLab refuses that unless told, so --allow-root is passed")
    return lab.run(command, env)


# --- train: the chapter 8 recipe from the command line (make train) ---
# The flags, their defaults and their help come from autograder.reference.recipe.TrainRecipe.


def _train_parser(sub, flags: bool = True) -> None:
    train = sub.add_parser(
        "train",
        help="train the encoder-decoder of chapter 8 and write a checkpoint that resumes exactly",
        description="Train the chapter 8 model with its recipe (autograder.reference.recipe), print the held-out "
        "exact match, and write one checkpoint file. Several processes: torchrun --nproc_per_node N "
        "-m autograder train ... (data parallel; each process takes its share of the batch).",
    )
    train.add_argument(
        "--resume",
        type=Path,
        default=None,
        metavar="PATH",
        help="go on from this checkpoint: model, recipe and data come from it; --steps is the total",
    )
    if flags:
        from autograder.reference import recipe

        recipe.add_flags(train, recipe.TRAIN_RECIPE)


def _train(args: argparse.Namespace) -> int:
    """Run the recipe that the flags describe (autograder.reference.run)."""
    from autograder.reference import recipe, run

    return run.run_recipe(
        recipe.from_args(args),
        resume=args.resume,
        ignored=recipe.given_flags(args, recipe.SAVED),
        kept=recipe.given_flags(args, recipe.KEPT),
    )


# --- end of train ---


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    args = _parser(train_flags="train" in given).parse_args(argv)
    if args.command == "train":  # needs no course folder: it runs wherever the package is installed
        return _train(args)
    from autograder.grading import course

    root = course.find_root(args.course)
    try:  # a lab name that is not in the course: the message, not a traceback
        if args.command == "release":
            for path in course.release(root, args.labs):
                print(f"released {path.relative_to(root)}")
            return 0
        if args.command == "workspace":
            _copy_labs(root, args.dir, args.labs)
            return 0
        if args.command == "lab":
            return _lab(root, args)
        if args.command == "report":
            return _report(root, args)
        if args.command == "demo":
            return _demo(root, args)
    except course.UnknownLab as err:
        print(err, file=sys.stderr)
        return 2
    return cli_grade.run(root, args)
