"""grades.csv: the scores the gradebook holds, one row per student and lab."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from autograder.grading.grader.safe_text import csv_cell, printable

CSV_HEADER = ["student_id", "lab", "score", "max_score", "late", "original_id"]


def write_csv(
    path: Path,
    scores: dict[tuple[str, str], tuple[float, float]],
    late: dict[tuple[str, str], str] | None = None,
    originals: dict[str, str] | None = None,
) -> None:
    """grades.csv: one row per student and lab, sorted, so that reruns give the same bytes;
    ``late`` holds the LMS's late flag and submission time (empty when it gave none),
    ``original_id`` the name a mapped id was made from (control characters escaped; else the
    id itself). Every cell a spreadsheet would read as a formula is neutralised (``csv_cell``)."""
    late, originals = late or {}, originals or {}
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for (student, lab), (score, max_score) in sorted(scores.items()):
        row = [
            student,
            lab,
            f"{score:g}",
            f"{max_score:g}",
            late.get((student, lab), ""),
            printable(originals.get(student, student)),
        ]
        writer.writerow([csv_cell(cell) for cell in row])
    path.write_text(buffer.getvalue())
