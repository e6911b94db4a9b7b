"""``python -m autograder COMMAND``: the course's command-line entry points (thin: the work
is done in autograder.grading).

    release [LAB ...]      regenerate notebooks/LAB from solutions/LAB (nbgrader generate_assignment)
    workspace DIR          copy notebooks/ into DIR; a changed lab is refreshed, keeping your answers
    lab [DIR]              copy the labs into DIR (default workspace) and open a student's JupyterLab there
    grade [SUBMISSIONS]    autograde, feedback, grades.csv and a summary (make grade)
    report [LAB ...]       the class report of each lab, from the recorded verdicts (reports/LAB/index.html)
    demo [DIR]             a small example class (four students of the warm-up) in DIR, graded (make demo)
    export --lms LMS LAB   a graded lab's grades as the files Moodle, Canvas or Blackboard imports (make export)
    train                  train the chapter 8 model; checkpoints resume exactly; torchrun for data parallel

Each command is a module of this package with ``add_parser(subparsers)`` and ``run``; this module
puts their parsers together, in the order ``--help`` lists them, and runs the one asked for. A
module imports what its command needs when it runs, so that the command line starts without
torch unless it trains.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder.cli import demo, export, grade, lab, release, report, train, workspace

# The commands that work on a course folder (all but train), in the order --help lists them.
COURSE_COMMANDS = {
    "release": release,
    "workspace": workspace,
    "lab": lab,
    "grade": grade,
    "report": report,
    "demo": demo,
    "export": export,
}


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
    for command in COURSE_COMMANDS.values():
        command.add_parser(sub)
    train.add_parser(sub, train_flags)
    return parser


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    args = _parser(train_flags="train" in given).parse_args(argv)
    if args.command == "train":  # needs no course folder: it runs wherever the package is installed
        return train.run(args)
    from autograder.grading import course

    root = course.find_root(args.course)
    if args.command == "grade":  # grade turns its own errors into messages and exit statuses
        return grade.run(root, args)
    try:  # a lab name that is not in the course: the message, not a traceback
        return COURSE_COMMANDS[args.command].run(root, args)
    except course.UnknownLab as err:
        print(err, file=sys.stderr)
        return 2
