"""``export``: one lab's grades written as the files an LMS imports, from what grading recorded
(``records``), by the LMS's writer (``moodle``, ``canvas``, ``blackboard``)."""

from __future__ import annotations

from pathlib import Path

from autograder.grading.layout import CourseLayout
from autograder.grading.lms import blackboard, canvas, moodle, records
from autograder.grading.lms.table import ExportError, ExportSummary


def export(
    root: Path,
    lab: str,
    lms: str,
    template: Path | None = None,
    missing: str | None = None,
    assignment: str | None = None,
    out: Path | None = None,
    db_url: str | None = None,
) -> ExportSummary:
    """Write ``lab``'s grades for ``lms`` into ``out`` (default ``ROOT/exports/LMS/LAB``).

    Args:
        root: the course root, graded.
        lab: the lab whose grades go back.
        lms: ``moodle``, ``canvas`` or ``blackboard``.
        template: the LMS's own file to fill in (Moodle's grading worksheet, Canvas's gradebook
            export, Blackboard's Grade Center download); every other cell kept as it was.
        missing: the grade of a student in ``template`` with no submission graded, where the
            LMS's cell is empty (None: left empty).
        assignment: the column's name in Canvas or Blackboard (default: the lab).
        out: the folder written.
        db_url: the gradebook (default the course's).

    Returns:
        The files written, the students written, and every student not written with the reason.
    """
    if lms not in records.LMSES:
        raise ExportError(f"no such LMS: {lms} (one of {', '.join(records.LMSES)})")
    root = Path(root).resolve()
    graded = records.read(root, lab, db_url)
    if not graded:
        raise ExportError(f"the gradebook holds no grade of {lab}: grade it first")
    folder = Path(out) if out is not None else CourseLayout(root).exports / lms / lab
    if lms == "moodle":
        summary = moodle.write(graded, folder, lab, template, missing)
    else:
        writer = canvas.write if lms == "canvas" else blackboard.write
        summary = writer(graded, folder, lab, template, missing, assignment)
    if missing is not None and template is None:
        summary.notes.append("--missing applies to the LMS's own file (--template): without it no one is listed")
    return summary
