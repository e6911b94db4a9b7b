"""``python -m autograder workspace DIR``: copy the released labs into a student's folder; a changed
lab is refreshed, keeping the student's answers (the work is ``autograder.grading.workspace``'s)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
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


def run(root: Path, args: argparse.Namespace) -> int:
    copy_labs(root, args.dir, args.labs)
    return 0


def copy_labs(root: Path, target: Path, labs: list[str] | None = None) -> None:
    """Copy the released labs into ``target`` (workspace.sync): new ones copied, changed ones
    refreshed with the student's answers and a backup; say what happened."""
    from autograder.grading import workspace

    print("\n".join(workspace.describe(workspace.sync(root, target, labs), target)))
