"""What a submitted file's name says: the lab, a resubmission number, and the student and late
flag, read only from the parts that an LMS writes (Canvas, Moodle, Blackboard), never from the
part the student chose."""

from __future__ import annotations

import re
import urllib.parse
from dataclasses import dataclass

from autograder.grading.grader.intake.ids import nfc

_TIME = re.compile(r"^(\d{4})-(\d\d)-(\d\d)[-T ](\d\d)[-:]?(\d\d)[-:]?(\d\d)")
_MOODLE = re.compile(r"^(?P<student>.+?)_(?P<participant>\d+)_assign(?:submission|feedback)_", re.IGNORECASE)


@dataclass
class Name:
    """What a submitted file's name says."""

    lab: str
    version: int  # 0, or N of a resubmission suffix
    student: str = ""  # "" when the name has no STUDENT_ prefix
    late: str = ""
    lms: bool = False  # the prefix has an LMS's shape (Canvas ids, Blackboard attempt), not a student's
    account: str = ""  # what the LMS records as unique beside the name: "Canvas 501", "Moodle 201"


def _lab_patterns(labs: list[str]) -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for lab in sorted(labs, key=len, reverse=True):  # "03-x-2" before "03-x" with version 2
        body = "[-_ ]".join(re.escape(part) for part in lab.split("-"))
        out.append(
            (
                lab,
                re.compile(
                    rf"^(?:(?P<prefix>.*?)_)?(?:copy[ _+-]of[ _+-])*{body}"
                    rf"(?:[-_ ](?P<version>\d+)| ?\((?P<copy>\d+)\))?$",
                    re.IGNORECASE,
                ),
            )
        )
    return out


def lms_prefix(prefix: str) -> tuple[str, str, bool, str]:
    """(student, late, LMS-shaped, account) from an LMS prefix: Canvas ``ada_LATE_12345_678``
    (user id 12345, then the student's own file name) or Blackboard
    ``Lab 2_ada_attempt_2024-03-01-15-00-00`` (``ada`` is the user name, unique there: the
    account ``Blackboard ada``, which the export to Blackboard reads). Only
    the LMS's tokens are read: a time or a LATE that the student put in their file name is not."""
    tokens = [t.strip() for t in prefix.split("_") if t.strip()]
    if not tokens:
        return "", "", False, ""
    lowered = [t.lower() for t in tokens]
    if "attempt" in lowered[1:]:  # Blackboard: the first "attempt" is the LMS's
        at = lowered.index("attempt", 1)
        late = ""
        if at + 1 < len(tokens) and (match := _TIME.match(tokens[at + 1])):
            year, month, day, hour, minute, second = match.groups()
            late = f"{year}-{month}-{day} {hour}:{minute}:{second}"
        return tokens[at - 1], late, True, f"Blackboard {tokens[at - 1]}"
    rest = tokens[1:]
    flagged = bool(rest) and rest[0] == "LATE"
    ids = rest[1:] if flagged else rest
    canvas = len(ids) >= 2 and ids[0].isdigit() and ids[1].isdigit()
    return tokens[0], "LATE" if flagged and canvas else "", canvas, f"Canvas {ids[0]}" if canvas else ""


def parse_name(name: str, labs: list[str]) -> Name | None:
    """The lab, resubmission number, student and late flag a file name gives (None: no lab)."""
    stem = nfc(urllib.parse.unquote(name))
    if not stem.lower().endswith(".ipynb"):
        return None
    stem = stem[: -len(".ipynb")].strip()
    for lab, pattern in _lab_patterns(labs):
        if match := pattern.match(stem):
            student, late, lms, account = lms_prefix(match["prefix"] or "")
            return Name(lab, int(match["version"] or match["copy"] or 0), student, late, lms, account)
    return None


def why_not(name: str, info: Name | None, labs: list[str], need_student: bool = True) -> str | None:
    """Why a file cannot be a submission (None: it can)."""
    if not name.lower().endswith(".ipynb"):
        return "not a notebook"
    if info is None:
        return f"no lab of the course in its name (labs: {', '.join(labs)})"
    if need_student and not info.student:
        return "no student id in its name (STUDENT_..._LAB.ipynb) or its folder's"
    return None


def member_student(parts: tuple[str, ...], labs: list[str]) -> Name | None:
    """A zip member's name. A file in a Moodle submission folder is that student's, whatever its
    own name says; a name without an LMS's shape takes its student from its nearest folder."""
    info = parse_name(parts[-1], labs)
    if info is None:
        return None
    for folder in reversed(parts[:-1]):
        if match := _MOODLE.match(folder):
            info.student, info.late = match["student"].strip(), ""
            info.account = f"Moodle {match['participant']}"
            return info
    if info.lms:
        return info
    for folder in reversed(parts[:-1]):
        if folder not in labs:
            info.student, info.late, _, info.account = lms_prefix(folder + "_")
            break
    return info
