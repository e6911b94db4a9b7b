"""``python -m autograder release [LAB ...]``: regenerate notebooks/LAB from solutions/LAB (``make
release``; the work is ``autograder.grading.course.release``'s)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    release = sub.add_parser("release", help="regenerate notebooks/ from solutions/ (byte-identical on a rerun)")
    release.add_argument(
        "labs", nargs="*", metavar="LAB", help="labs to release, such as 02-self-attention (default: all)"
    )


def run(root: Path, args: argparse.Namespace) -> int:
    """Release each lab asked for (every lab by default) and say where it went."""
    from autograder.grading import course

    for path in course.release(root, args.labs):
        print(f"released {path.relative_to(root)}")
    return 0
