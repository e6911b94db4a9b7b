"""Blackboard: the Grade Center upload file (Full Grade Center, Work Offline, Upload).

Blackboard finds each student by ``Username`` and each column by the id after ``|`` in its title,
``LAB [Total Pts: 5 Score] |1234``; a column without an id becomes a new (text) column. A
comma-delimited file has every cell in quotes. The column id is Blackboard's alone, so the file
its Work Offline, Download gives (``--template``, tab-delimited UTF-16 or CSV) is filled in: the
lab's column gets the grades and, where the download has it, ``Feedback to Learner`` the
comment; every other cell stays as Blackboard wrote it. Without a template the file holds the
user names and a new column for the lab; the late flags stay in the feedback pages.
"""

from __future__ import annotations

import re
from pathlib import Path

from autograder.grading.lms.records import LmsRecord, for_lms
from autograder.grading.lms.table import (
    ExportError,
    ExportSummary,
    LmsTable,
    check_points,
    fill_grades,
    number,
    read_table,
    write_table,
)

COLUMNS = ["Last Name", "First Name", "Username"]
FEEDBACK = "Feedback to Learner"
_GRADE_TITLE = re.compile(r"^(?P<name>.*?)\s*\[Total Pts: (?P<points>[^\]]*?) (?P<kind>\w+)\]\s*(\|\s*(?P<id>\d+))?$")


def grade_title(title: str) -> tuple[str, str, str] | None:
    """(name, points, column id) of a grade column's title; None for another column."""
    match = _GRADE_TITLE.match(title.strip())
    return (match["name"], match["points"], match["id"] or "") if match else None


def grade_column(table: LmsTable, assignment: str) -> int:
    if (index := table.column(assignment, lambda title: (parsed := grade_title(title)) and parsed[0])) is not None:
        return index
    columns = [t for t in table.header if grade_title(t)]
    raise ExportError(
        f"no grade column for {assignment!r} in Blackboard's download (columns: {', '.join(columns) or 'none'}): "
        "name it with --assignment"
    )


def _filled(
    table: LmsTable, mine: list[LmsRecord], assignment: str, missing: str | None, summary: ExportSummary
) -> LmsTable:
    column, user, comments = grade_column(table, assignment), table.column("Username"), table.column(FEEDBACK)
    if user is None:
        raise ExportError("Blackboard's download has no Username column")
    if mine and (parsed := grade_title(table.header[column])):
        check_points(summary, parsed[1], mine[0].max_score)
    fill_grades(table, mine, summary, missing, (user, column, comments))
    if comments is None and any(r.late or r.carried for r in mine):
        summary.notes.append(f"no {FEEDBACK} column in the download: late flags are in the feedback pages only")
    return table


def write(
    records: list[LmsRecord],
    out: Path,
    lab: str,
    template: Path | None = None,
    missing: str | None = None,
    assignment: str | None = None,
) -> ExportSummary:
    """The upload file (``blackboard-grade-center-LAB.csv``, every cell quoted) in ``out``."""
    summary = ExportSummary("blackboard", lab)
    mine, summary.not_exportable = for_lms(records, "blackboard")
    if template is not None:
        table = _filled(read_table(template), mine, assignment or lab, missing, summary)
    else:
        points = mine[0].max_score if mine else 0.0
        title = f"{assignment or lab} [Total Pts: {number(points)} Score]"
        table = LmsTable([*COLUMNS, title], [["", "", r.account, number(r.score)] for r in mine])
        summary.notes.append("no --template: the column has no Blackboard column id, so Blackboard adds a new column")
        if any(r.late or r.carried for r in mine):
            summary.notes.append(
                "without Blackboard's download there is no comment column: late flags are in the feedback pages"
            )
    summary.written = sorted({r.student for r in mine} - set(summary.not_in_lms_file))
    path = out / f"blackboard-grade-center-{lab}.csv"
    write_table(path, table, quote_all=True)
    summary.files.append(path)
    return summary
