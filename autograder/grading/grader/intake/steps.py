"""The intake station's steps of a class: the submissions collected into submitted/ with
--student and --lab applied (``intake``), what intake recorded of the class read once
(``read_record``), and each submission screened and its inspected bytes staged (``screen``)."""

from __future__ import annotations

from autograder.grading.grader.grading import Grading, Outcome
from autograder.grading.grader.intake.collect import recorded_late, recorded_originals
from autograder.grading.grader.intake.screening import inspect_submission
from autograder.grading.grader.intake.selection import select
from autograder.grading.grader.intake.staging import stage
from autograder.grading.layout import CourseLayout


def intake(g: Grading) -> None:
    """Collect the submissions into submitted/, with --student and --lab applied, and read what
    intake recorded of the class."""
    g.pairs, g.not_graded = select(g.root, g.source, g.options)
    read_record(g)


def read_record(g: Grading) -> None:
    """What intake recorded of the class (late flags, who each student is), read once for every
    later step."""
    g.late, g.originals = recorded_late(g.root), recorded_originals(g.root)


def screen(g: Grading) -> None:
    """Every pair's outcome so far, after a look at its notebook; for each that can be graded its
    bytes staged (``g.staged``) in a folder of ours that nbgrader reads instead of submitted/.
    Nothing is written outside the scratch folder but a renamed notebook's copy under its name."""
    layout = CourseLayout(g.root)
    for student, lab in g.pairs:
        outcome = g.outcomes[(student, lab)] = Outcome(
            student, lab, sandboxed=g.options.sandbox, original_id=g.originals.get(student, "")
        )
        found = inspect_submission(layout.submission(student, lab), lab, layout.release(lab), layout.source(lab))
        outcome.notes += found.notes
        if found.problem:
            outcome.graded = False
            outcome.notes.append(found.problem)
            continue
        late = g.late.get((student, lab), "")
        g.staged[(student, lab)] = stage(layout, g.scratch / "staged", student, lab, late, found.data)
