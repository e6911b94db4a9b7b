"""Moodle: the assignment's grading worksheet and its feedback files zip.

The worksheet is the CSV that the assignment's "Download grading worksheet" gives and "Upload
grading worksheet" takes (the "Offline grading worksheet" feedback type): a row per participant,
``Identifier`` = ``Participant N`` (N: the participant id, the number in the submission folder
``Full Name_N_assignsubmission_file_``), ``Grade`` and ``Feedback comments`` filled in. Moodle's
importer (``mod/assign/feedback/offline/importgradeslib.php``) finds the participant by the
number after ``Participant`` and reads the grade and comment columns by their titles.

The zip is what "Upload multiple feedback files in a zip" takes (the "Feedback files" type): one
folder per participant named as Moodle names them in its download, ``Full Name_N_assignsubmission_file_``,
holding that student's feedback page. Moodle's importer (``mod/assign/feedback/file/importziplib.php``)
splits each path at ``_`` into full name, participant id, plugin type and name, so a name's own
``_`` is written as a space, as Moodle's download does.
"""

from __future__ import annotations

import re
import zipfile
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

WORKSHEET = [
    "Identifier",
    "Full name",
    "Email address",
    "Status",
    "Grade",
    "Maximum Grade",
    "Grade can be changed",
    "Last modified (submission)",
    "Last modified (grade)",
    "Feedback comments",
]
_NOT_IN_NAME = frozenset('_/\\:*?"<>|')
_PARTICIPANT = re.compile(r"^\s*'?Participant\s+(\d+)\s*$", re.IGNORECASE)


def participant(identifier: str) -> str | None:
    """N of ``Participant N`` (None: another shape)."""
    match = _PARTICIPANT.match(identifier)
    return str(int(match[1])) if match else None


def folder_name(record: LmsRecord) -> str:
    """The participant's folder in the feedback zip, as Moodle names it in its download: the
    full name without ``_`` (Moodle's importer splits there) nor what a path cannot hold
    (Moodle's ``clean_filename``), then the participant id. Moodle matches by the id alone."""
    name = "".join(" " if c in _NOT_IN_NAME or not c.isprintable() else c for c in record.name)
    return f"{' '.join(name.split()) or 'participant'}_{record.account}_assignsubmission_file_"


def _new_worksheet(mine: list[LmsRecord]) -> LmsTable:
    rows = []
    for r in mine:
        rows.append(
            [f"Participant {r.account}", r.name, "", "", number(r.score), number(r.max_score), "Yes", "", "", r.comment]
        )
    return LmsTable(list(WORKSHEET), rows)


def _filled(template: LmsTable, mine: list[LmsRecord], missing: str | None, summary: ExportSummary) -> LmsTable:
    """The LMS's worksheet with the grade and comment of each graded participant; every other
    cell and row as it was (an empty grade stays empty, or ``missing`` where asked)."""
    grade, comments, ident = (
        template.column("Grade"),
        template.column("Feedback comments"),
        template.column("Identifier"),
    )
    if grade is None or ident is None:
        raise ExportError("the worksheet has no Identifier or Grade column: give the file Moodle's download gave")
    top = template.column("Maximum Grade")

    def points(row: list[str], record: LmsRecord) -> None:
        if top is not None:
            check_points(summary, row[top], record.max_score)

    fill_grades(
        template, mine, summary, missing, (ident, grade, comments), lambda cell: participant(cell) or "", points
    )
    listed = [r for r in mine if r.student not in summary.not_in_lms_file]
    if comments is None and any(r.late or r.carried for r in listed):
        summary.notes.append("the worksheet has no Feedback comments column: late flags are in the feedback pages only")
    return template


def _feedback_zip(path: Path, mine: list[LmsRecord], summary: ExportSummary) -> None:
    """One folder per participant holding their feedback page (none: listed in the notes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".new")
    with zipfile.ZipFile(temporary, "w", zipfile.ZIP_DEFLATED) as zf:
        for record in mine:
            if record.feedback is None:
                summary.notes.append(f"no feedback page for {record.student}: not in the feedback zip")
                continue
            zf.write(record.feedback, f"{folder_name(record)}/{record.lab}.html")
    temporary.replace(path)


def write(
    records: list[LmsRecord], out: Path, lab: str, template: Path | None = None, missing: str | None = None
) -> ExportSummary:
    """The worksheet (``moodle-grading-worksheet-LAB.csv``: the LMS's own ``template`` filled in
    when given) and the feedback zip (``moodle-feedback-LAB.zip``) in ``out``."""
    summary = ExportSummary("moodle", lab)
    mine, summary.not_exportable = for_lms(records, "moodle")
    if template is not None:
        table = _filled(read_table(template), mine, missing, summary)
    else:
        table = _new_worksheet(mine)
    written = {r.student for r in mine} - set(summary.not_in_lms_file)
    summary.written = sorted(written)
    sheet, archive = out / f"moodle-grading-worksheet-{lab}.csv", out / f"moodle-feedback-{lab}.zip"
    write_table(sheet, table)
    _feedback_zip(archive, [r for r in mine if r.student in written], summary)
    summary.files += [sheet, archive]
    return summary
