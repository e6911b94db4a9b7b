"""The verdict station's steps of one submission, in the worker: what the independent check
found, made the submission's record.

    points         each exercise's points decided from its verdict and the gradebook settled;
                   a disagreement with the notebook is a note
    into_notebook  the verdicts shown in the autograded notebook's test cells, for feedback
    flags          answers that retype the reference or touch the checks: notes, never points

(``save_verdicts.record``, the verdicts as data, is the station's last step.)
"""

from __future__ import annotations

from autograder.grading.grader.job import Submission
from autograder.grading.grader.lab_cells import test_cells
from autograder.grading.grader.output import gradebook
from autograder.grading.grader.verdict import retyped
from autograder.grading.grader.verdict.into_notebook import annotate, hidden_failures


def hidden_tests_failed(grade_id: str | None) -> str:
    """The note for a test cell whose visible check passed and whose hidden tests failed."""
    return f"test cell {grade_id}: the visible check passed but the hidden tests failed (hard-coded outputs?)"


def headline(message: str) -> str:
    """The line of a check's message that says most: the likely mistake, else what was found."""
    lines = [line.strip() for line in message.strip().splitlines() if line.strip()] or ["failed"]
    for label in ("likely mistake:", "found:"):
        for line in lines:
            if line.startswith(label):
                return line[:200]
    return lines[0][:200]


def points(s: Submission) -> bool:
    """An exercise keeps its points only if its test cell passed in the notebook and the
    independent check passes, or (error carried forward) it passes once the earlier exercises
    the student got wrong are made right; the gradebook is settled so, and each disagreement
    with the notebook is a note."""
    hidden = hidden_failures(test_cells(s.source), s.verdicts)  # never run by the kernel
    before = gradebook.settle(
        s.config.CourseDirectory.db_url,
        s.config.CourseDirectory.course_id,
        s.job.student,
        s.job.lab,
        {grade_id: None if v.alone and not v.passed else v.passed for grade_id, v in s.verdicts.items()},
    )
    for grade_id, verdict in s.verdicts.items():
        earned, verdict.max_points = before[grade_id]
        verdict.exercise, verdict.points = grade_id, earned if verdict.passed else 0.0
        if verdict.alone and not verdict.passed:
            verdict.points = verdict.max_points
            continue
        if verdict.passed or not earned:  # it scored nothing in the notebook: no disagreement to report
            continue
        if grade_id in hidden:
            s.result.notes.append(hidden_tests_failed(grade_id))
        else:
            s.result.notes.append(
                f"test cell {grade_id} passed in the notebook but failed the independent check "
                f"({headline(verdict.message)}): scored 0"
            )
    return True


def into_notebook(s: Submission) -> bool:
    """Show the independent check's verdict in each test cell of the autograded notebook, in
    place of what the kernel printed there, for the feedback."""
    annotate(s.autograded, test_cells(s.source), s.verdicts)
    return True


def flags(s: Submission) -> bool:
    """Answers that retype the reference or touch the checks' machinery: a note for the
    instructor, never a score."""
    s.result.notes += retyped.notes(s.autograded)
    return True
