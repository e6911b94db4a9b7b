"""What nbgrader's autograde reads for one submission: a folder of ours, never the student's.

nbgrader autograde copies every file of the submission folder into autograded/ and runs the
kernel there: it gets a folder of ours holding the bytes inspected, and the LMS's submission
time, nothing the student chose.
"""

from __future__ import annotations

import re
from pathlib import Path

from autograder.grading.grader.intake.untrusted import Refused, read_plain
from autograder.grading.layout import CourseLayout

_CLAIMED = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,6})?(?: UTC)?")


def _claimed_time(path: Path) -> str:
    """The time in nbgrader's exchange ``timestamp.txt`` (written by the student's submit), or ""
    when it is missing, not a plain file, or not a time alone."""
    try:
        text = read_plain(path, limit=100).decode("ascii").strip()
    except (OSError, Refused, UnicodeDecodeError):
        return ""
    return text if _CLAIMED.fullmatch(text) else ""


def _exchange_token(path: Path) -> str:
    """The secret of nbgrader's exchange (``submission_secret.txt``), or "" when it is not a short token."""
    try:
        text = read_plain(path, limit=200).decode("ascii").strip()
    except (OSError, Refused, UnicodeDecodeError):
        return ""
    return text if re.fullmatch(r"[A-Za-z0-9+/=_-]{1,128}", text) else ""


def stage(layout: CourseLayout, folder: Path, student: str, lab: str, late: str, data: bytes) -> Path:
    """Write ``folder/STUDENT/LAB``: the notebook's inspected bytes, and the time it was handed in
    (``late``: the LMS's flag and time as intake recorded it, else the exchange's claim with its secret)."""
    staged = folder / student / lab
    staged.mkdir(parents=True)
    (staged / f"{lab}.ipynb").write_bytes(data)
    if match := re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", late):
        (staged / "timestamp.txt").write_text(match.group() + "\n")
    elif claim := _claimed_time(layout.submission(student, lab) / "timestamp.txt"):
        # nbgrader's exchange hands feedback back by the time its submit wrote and its secret:
        # both travel on (checked to be a time and a token), but grades.csv's late column never reads them
        (staged / "timestamp.txt").write_text(claim + "\n")
        if secret := _exchange_token(layout.submission(student, lab) / "submission_secret.txt"):
            (staged / "submission_secret.txt").write_text(secret)
    return staged
