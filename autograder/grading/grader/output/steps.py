"""The output station's steps: for one submission, in the worker, its feedback page
(``feedback``); for the class, the scores read back from the gradebook (``score``) and
grades.csv (``export``)."""

from __future__ import annotations

from autograder.grading.grader.grading import Grading
from autograder.grading.grader.job import Run, Submission
from autograder.grading.grader.output import gradebook
from autograder.grading.grader.output.grades_csv import write_csv
from autograder.grading.layout import CourseLayout


def feedback(s: Submission) -> bool:
    s.result.feedback = Run.of(s.api.generate_feedback(s.job.lab, s.job.student, force=True))
    return True


def score(g: Grading) -> None:
    """Score 0 what could not be graded, then read every score back from the gradebook, with
    the late flags and original names, into the outcomes."""
    for outcome in g.outcomes.values():
        if not outcome.graded:
            gradebook.record_zero(g.db_url, g.course_id, outcome.student, outcome.lab)
    g.scores = gradebook.scores(g.db_url, g.course_id)
    for key, outcome in g.outcomes.items():
        outcome.score, outcome.max_score = g.scores.get(key, (0.0, 0.0))
        outcome.late = g.late.get(key, "")
        outcome.original_id = g.originals.get(outcome.student, "")


def export(g: Grading) -> None:
    """grades.csv: every submission the gradebook holds, not just these."""
    write_csv(g.options.csv_path or CourseLayout(g.root).grades_csv, g.scores, g.late, g.originals)
