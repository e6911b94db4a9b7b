"""Which exercises a student left blank: an exercise is the graded test cell and the answer
(solution) cells before it, back to the previous graded test cell; it is blank when its check
failed and every one of those answer cells is as released, by nbgrader's own checksum
(``nbgrader.utils.compute_checksum`` against the checksum nbgrader's autograde put back in the
cell's metadata from the gradebook). One rule for the feedback's word and the recorded verdicts'
(``into_notebook``, ``save_verdicts``), which the class report reads. An exercise is blank only
when it scored nothing."""

from __future__ import annotations

from nbformat import NotebookNode
from nbgrader.utils import compute_checksum

from autograder import notebook_cells
from autograder.grading.grader.job import Verdict


def is_unchanged(cell: NotebookNode) -> bool:
    """Is this answer cell as released? Its checksum (nbgrader's) equals the recorded one."""
    recorded = notebook_cells.recorded_checksum(cell)
    try:
        return isinstance(recorded, str) and compute_checksum(cell) == recorded
    except (KeyError, TypeError, ValueError, AttributeError):  # metadata the student broke: not blank
        return False


def exercises(nb: NotebookNode) -> list[tuple[str, list[NotebookNode]]]:
    """(test cell's grade id, its answer cells) in notebook order."""
    out, pending = [], []
    for cell in nb.cells:
        if notebook_cells.is_plain_answer(cell):
            pending.append(cell)
        elif notebook_cells.is_graded_code(cell):
            out.append((notebook_cells.name_of(cell), pending))
            pending = []
    return out


def status(verdict: Verdict, answers: list[NotebookNode]) -> str:
    """``passed``, ``blank`` or ``failed``: the verdict's exercise, given its answer cells. An
    exercise that keeps its points by error carried forward is answered somewhere (a cell the
    student added), so it is never blank: it failed as written."""
    if verdict.passed:
        return "passed"
    if verdict.alone:
        return "failed"
    return "blank" if answers and all(is_unchanged(c) for c in answers) else "failed"
