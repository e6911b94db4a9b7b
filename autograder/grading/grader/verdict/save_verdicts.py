"""The grading step that records the verdicts as data: ``autograded/STUDENT/LAB/verdicts.json``.

It runs in the worker after the independent check has settled the gradebook, so its points
are the ones grades.csv gets. Each exercise is passed, failed or blank by ``blank``'s rule.
Writing the file never costs a grade: an error is a note on the summary line.
"""

from __future__ import annotations

import nbformat
from nbformat import NotebookNode

from autograder import notebook_cells
from autograder.grading.grader.job import Submission, Verdict
from autograder.grading.grader.lab_cells import test_cells
from autograder.grading.grader.verdict import blank
from autograder.grading.grader.verdict.into_notebook import in_hidden_tests, without_expected
from autograder.grading.grader.verdicts_json import FILENAME, ExerciseVerdict, LabVerdicts, write_verdicts


def _message(verdict: Verdict, grade_id: str, source: str) -> str:
    """The message as the feedback shows it: a hidden test's failure without its ``expected:``."""
    if verdict.passed:
        return ""
    if in_hidden_tests(verdict.error, grade_id, source):
        return without_expected(verdict.message)
    return str(verdict.message)


def lab_verdicts(
    student: str,
    original_id: str | None,
    lab: str,
    autograded: NotebookNode,
    sources: dict[str, str],
    verdicts: dict[str, Verdict],
) -> LabVerdicts:
    """The verdicts file's content for one autograded notebook and the independent check's
    verdicts (``sources``: each test cell's code in the source notebook, hidden tests included)."""
    out = LabVerdicts(student=student, original_id=original_id, lab=lab)
    for grade_id, answers in blank.exercises(autograded):
        verdict = verdicts.get(grade_id)
        if verdict is None:
            continue
        status = blank.status(verdict, answers)
        out.exercises.append(
            ExerciseVerdict(
                exercise=grade_id,
                answer_cells=[notebook_cells.name_of(c) for c in answers],
                status=status,
                points=float(verdict.points),
                max_points=float(verdict.max_points),
                mistake=str(verdict.mistake) if status == "failed" else None,
                message=_message(verdict, grade_id, sources.get(grade_id, "")),
                points_alone=None if verdict.alone is None else float(verdict.max_points) if verdict.alone else 0.0,
                status_alone=None if verdict.alone is None else "passed" if verdict.alone else "failed",
            )
        )
        out.answers.update({notebook_cells.name_of(c): c.source for c in answers})
    return out


def record(s: Submission) -> bool:
    """Write ``verdicts.json`` beside the autograded notebook; a failure is a note, not a zero."""
    path = s.autograded.parent / FILENAME
    try:
        nb = nbformat.read(str(s.autograded), as_version=4)
        original = s.job.original_id or None
        write_verdicts(path, lab_verdicts(s.job.student, original, s.job.lab, nb, test_cells(s.source), s.verdicts))
    except Exception as err:  # the record is for the report; the grade stands without it
        s.result.notes.append(f"the verdicts were not recorded ({type(err).__name__}: {err})")
        if path.is_symlink() or path.is_file():  # never leave a stale or planted file as the record
            path.unlink(missing_ok=True)
    return True
