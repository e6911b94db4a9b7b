"""grades.csv: the scores the gradebook holds, one row per student and lab."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from autograder.grading.grader.in_parts.atomic import write_atomic
from autograder.grading.grader.safe_text import csv_cell, printable

CSV_HEADER = ["student_id", "lab", "score", "max_score", "late", "original_id"]


def write_csv(
    path: Path,
    scores: dict[tuple[str, str], tuple[float, float]],
    late: dict[tuple[str, str], str] | None = None,
    originals: dict[str, str] | None = None,
    missing: set[tuple[str, str]] | None = None,
) -> None:
    """grades.csv: one row per student and lab, sorted, so that reruns give the same bytes;
    ``late`` holds the LMS's late flag and submission time (empty when it gave none),
    ``original_id`` the name a mapped id was made from (control characters escaped; else the
    id itself). Every cell a spreadsheet would read as a formula is neutralised (``csv_cell``).
    A pair of ``missing`` (a sharded grading finished without it) has a row whose score and max
    score say ``missing``. The file is written to a temporary name and renamed."""
    late, originals, missing = late or {}, originals or {}, missing or set()
    scores = {**scores, **{pair: (float("nan"), float("nan")) for pair in missing}}
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for (student, lab), (score, max_score) in sorted(scores.items()):
        row = [
            student,
            lab,
            "missing" if (student, lab) in missing else f"{score:g}",
            "missing" if (student, lab) in missing else f"{max_score:g}",
            late.get((student, lab), ""),
            printable(originals.get(student, student)),
        ]
        writer.writerow([csv_cell(cell) for cell in row])
    write_atomic(path, buffer.getvalue())
