"""The class report: what a class got wrong on a lab, mistake by mistake, from the recorded verdicts.

``python -m autograder report [LAB ...]`` and the last step of ``grade`` write, per lab,
``reports/LAB/index.html`` (the instructor's copy, with ids and similar submissions) with its
CSV files, and ``reports/LAB/class/`` (the same without any student id, to share). Everything
is read from ``autograded/*/LAB/verdicts.json``; nothing is graded again, and no point changes.
"""

from __future__ import annotations

from pathlib import Path

from autograder.grading.grader.report import page, sheets, similar
from autograder.grading.grader.report.release import Release, read_release
from autograder.grading.grader.report.tables import write_tables
from autograder.grading.grader.report.tally import Tally, tally

__all__ = ["NoVerdicts", "default_out", "write_report"]


class NoVerdicts(LookupError):
    """A lab with no verdicts.json recorded (not graded yet, or graded before verdicts were recorded)."""


def default_out(root: Path) -> Path:
    """Where reports go unless told: ROOT/reports, beside grades.csv."""
    return root / "reports"


def _pairs(lab_sheets: list[sheets.Sheet], lab: Release) -> list[similar.Pair]:
    """Similar answers, per exercise of the release: its answer cells joined, compared across students."""
    found: list[similar.Pair] = []
    for exercise, cells in lab.exercises.items():
        answers = {s.student: "\n".join(s.answers.get(c, "") for c in cells) for s in lab_sheets}
        stub = [line for c in cells for line in lab.stubs.get(c, "").splitlines()]
        found += similar.similar_pairs(exercise, answers, stub)
    return found


def write_report(root: Path, lab: str, out: Path | None = None) -> tuple[Tally, list[similar.Pair], list[str]]:
    """Write ``lab``'s report under ``out`` (default ROOT/reports) /LAB; its tally, similar
    pairs and notes (files that could not be read)."""
    lab_sheets, notes = sheets.read_class(root, lab)
    if not lab_sheets:
        raise NoVerdicts(f"no verdicts recorded for {lab} under {root / 'autograded'} (grade it first)"
                         + (f"; {len(notes)} unreadable: {notes[0]}" if notes else ""))
    t = tally(lab, lab_sheets)
    pairs = _pairs(lab_sheets, read_release(root, lab))
    folder = (out or default_out(root)) / lab
    for copy, ids in ((folder, True), (folder / "class", False)):
        write_tables(t, pairs, copy, ids)
        (copy / "index.html").write_text(page.render(t, pairs, notes, ids=ids), encoding="utf-8")
    return t, pairs, notes
