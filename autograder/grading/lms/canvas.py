"""Canvas: the gradebook import CSV (Grades, Import).

Columns ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``, then one column per
assignment, titled ``Name (ASSIGNMENT ID)``; a second row whose first cell is ``Points Possible``
may give each assignment's points. Canvas finds the student by ``ID`` (its user id: the number
after the name in a submissions download, ``smithjohn_501_9001_LAB.ipynb``) and the assignment by
the id in its column's title; a column without an id becomes a new assignment. Only Canvas knows
the assignment's id and the students' SIS ids and sections, so the gradebook Canvas exports
(``--template``) is filled in: the lab's column (``--assignment NAME``, default the lab) gets
the grades, every other cell stays as Canvas wrote it. Canvas's import has no comment column:
late flags and error carried forward stay in the feedback pages, and the summary says so.
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

COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
POINTS_POSSIBLE = "Points Possible"


def assignment_column(table: LmsTable, assignment: str) -> int:
    """The column of ``assignment`` in Canvas's gradebook: titled ``assignment (ID)`` or ``assignment``."""
    if (index := table.column(assignment, lambda title: re.sub(r"\s*\(\d+\)\s*$", "", title))) is not None:
        return index
    raise ExportError(
        f"no column for {assignment!r} in the gradebook Canvas exported "
        f"(columns: {', '.join(table.header[len(COLUMNS) :]) or 'none'}): name it with --assignment"
    )


def is_points_row(row: list[str]) -> bool:
    return bool(row) and row[0].strip().lstrip("'") == POINTS_POSSIBLE


def _new_gradebook(mine: list[LmsRecord], title: str) -> LmsTable:
    points = mine[0].max_score if mine else 0.0
    table = LmsTable([*COLUMNS, title], [[f"    {POINTS_POSSIBLE}", "", "", "", "", number(points)]])
    table.rows += [[r.name, r.account, "", "", "", number(r.score)] for r in mine]
    return table


def _filled(
    table: LmsTable, mine: list[LmsRecord], assignment: str, missing: str | None, summary: ExportSummary
) -> LmsTable:
    column, ident = assignment_column(table, assignment), table.column("ID")
    if ident is None:
        raise ExportError("the gradebook has no ID column: give the file Canvas's Export gave")
    if mine and (points := next((row for row in table.rows if is_points_row(row)), None)):
        check_points(summary, points[column], mine[0].max_score)
    fill_grades(table, mine, summary, missing, (ident, column, None), skip=is_points_row)
    return table


def write(
    records: list[LmsRecord],
    out: Path,
    lab: str,
    template: Path | None = None,
    missing: str | None = None,
    assignment: str | None = None,
) -> ExportSummary:
    """The import CSV (``canvas-gradebook-LAB.csv``) in ``out``: Canvas's own export (``template``)
    filled in when given, else a new file whose column makes a new assignment."""
    summary = ExportSummary("canvas", lab)
    mine, summary.not_exportable = for_lms(records, "canvas")
    if template is not None:
        table = _filled(read_table(template), mine, assignment or lab, missing, summary)
    else:
        table = _new_gradebook(mine, assignment or lab)
        summary.notes.append(
            "no --template: the column has no Canvas assignment id, so Canvas makes a new assignment of it"
        )
    summary.written = sorted({r.student for r in mine} - set(summary.not_in_lms_file))
    if any(r.late or r.carried for r in mine):
        summary.notes.append(
            "Canvas's import has no comment column: late flags and carried-forward points are in the feedback pages"
        )
    path = out / f"canvas-gradebook-{lab}.csv"
    write_table(path, table)
    summary.files.append(path)
    return summary
