"""The class report: what a class got wrong on a lab, mistake by mistake, from the recorded verdicts.

``python -m autograder report [LAB ...]`` and the last step of ``grade`` write, per lab,
``reports/LAB/index.html`` (the instructor's copy, with ids and similar submissions) with its
CSV files, and ``reports/LAB/class/`` (the same without any student id, to share). Everything
is read from ``autograded/*/LAB/verdicts.json`` and, for the similar answers, the cells each
student wrote in the autograded notebook beside it; nothing is graded again, nor run, and no
point changes.

The fifth and last station: it reads the recorded verdicts (``verdicts_json``), the autograded
notebooks and the lab's release, writes ``reports/``, and imports no module of an earlier station.
"""

from __future__ import annotations

from pathlib import Path

from autograder.grading.grader.report import alike, bound, page, sheets
from autograder.grading.grader.report.page import Compared
from autograder.grading.grader.report.release import Release, read_release
from autograder.grading.grader.report.tables import write_tables
from autograder.grading.grader.report.tally import Tally, tally
from autograder.grading.layout import CourseLayout

__all__ = ["NoVerdicts", "default_out", "write_report"]


class NoVerdicts(LookupError):
    """A lab with no verdicts.json recorded (not graded yet, or graded before verdicts were recorded)."""


def default_out(root: Path) -> Path:
    """Where reports go unless told: ROOT/reports, beside grades.csv."""
    return CourseLayout(root).reports


def _written(sheet: sheets.Sheet, lab: Release) -> bound.Written:
    """The cells ``sheet``'s student wrote: from the autograded notebook, or else the answer cells
    its verdicts recorded, in the release's order."""
    if sheet.cells:
        return bound.Written(sheet.cells)
    order = [c for cells in lab.exercises.values() for c in cells]
    return bound.Written((c, sheet.answers[c]) for c in order if c in sheet.answers)


def _pairs(lab_sheets: list[sheets.Sheet], lab: Release, max_shared: int) -> list[alike.Pair]:
    """Similar answers, per exercise of the release: the code that answers it in each notebook
    (``bound``), compared across students, with the fingerprints of its stub and its reference
    solution left out."""
    names = {e: {n for c in cells for n in bound.defined(lab.stubs.get(c, ""))} for e, cells in lab.exercises.items()}
    written = {s.student: _written(s, lab) for s in lab_sheets}
    found: list[alike.Pair] = []
    for exercise, cells in lab.exercises.items():
        others = {n for e, more in names.items() if e != exercise for n in more}
        answers = {s: w.answer(cells, names[exercise], others) for s, w in written.items()}
        stub = "\n".join(lab.stubs.get(c, "") for c in cells)
        given = stub.splitlines()
        ignored = alike.boilerplate([stub, "\n".join(lab.solutions.get(c, "") for c in cells)], given)
        found += alike.similar_pairs(exercise, answers, given, ignored, max_shared)
    return found


def write_report(
    root: Path,
    lab: str,
    out: Path | None = None,
    max_shared: int = alike.MAX_SHARED,
) -> tuple[Tally, list[alike.Pair], list[str]]:
    """Write ``lab``'s report under ``out`` (default ROOT/reports) /LAB; its tally, similar
    pairs and notes (files that could not be read). ``max_shared``: M, above which a fingerprint
    common to that many answers of the class is not evidence of anything (``alike``)."""
    lab_sheets, notes = sheets.read_class(root, lab)
    if not lab_sheets:
        raise NoVerdicts(
            f"no verdicts recorded for {lab} under {root / 'autograded'} (grade it first)"
            + (f"; {len(notes)} unreadable: {notes[0]}" if notes else "")
        )
    t = tally(lab, lab_sheets)
    release = read_release(root, lab)
    pairs = _pairs(lab_sheets, release, max_shared)
    compared = Compared(bool(release.exercises), max_shared)
    folder = (out or default_out(root)) / lab
    for copy, ids in ((folder, True), (folder / "class", False)):
        write_tables(t, pairs, copy, ids)
        (copy / "index.html").write_text(page.render(t, pairs, notes, ids=ids, compared=compared), encoding="utf-8")
    return t, pairs, notes
