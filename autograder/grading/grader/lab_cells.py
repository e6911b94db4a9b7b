"""What the grader reads of a lab's notebooks, by the cells' nbgrader metadata: each graded test
cell's code, each exercise's solution, the cells an answer runs, and the hidden-test block of a
test cell (``### BEGIN HIDDEN TESTS`` ... ``### END HIDDEN TESTS``).

Shared by the stations: the run station hides the block from the kernel and rechecks with the
test cells, the verdict station writes into them, the output station clears the block from the
feedback.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from autograder import notebook_cells


def hidden_lines(source: str, begin: str, end: str) -> set[int]:
    """The 1-based line numbers of ``source`` that are hidden tests, delimiters included."""
    hidden, inside = set(), False
    for number, line in enumerate(source.split("\n"), start=1):
        if begin in line:
            inside = True
        if inside:
            hidden.add(number)
        if end in line:
            inside = False
    return hidden


def clear_hidden(source: str, begin: str, end: str) -> str:
    hidden = hidden_lines(source, begin, end)
    return "\n".join(line for number, line in enumerate(source.split("\n"), start=1) if number not in hidden)


def test_cells(source: Path) -> dict[str, str]:
    """grade_id -> code of every graded code cell of a source notebook (hidden tests included)."""
    nb = nbformat.read(str(source), as_version=4)
    return {
        notebook_cells.own_grade_id(c): c.source
        for c in nb.cells
        if c.cell_type == "code" and notebook_cells.is_graded(c)
    }


def solution_cells(source: Path) -> dict[str, list[str]]:
    """grade_id of each graded test cell -> the source's answer cells since the previous one
    (the lab's solution of that exercise)."""
    out: dict[str, list[str]] = {}
    since: list[str] = []
    for cell in nbformat.read(str(source), as_version=4).cells:
        if cell.cell_type == "code" and notebook_cells.is_answer(cell):
            since.append(cell.source)
        elif cell.cell_type == "code" and notebook_cells.is_graded(cell):
            out[notebook_cells.own_grade_id(cell)], since = since, []
    return out


def answer_cells(submission: Path) -> list[str]:
    """The code cells a submission runs before its tests can be called: all but the graded
    test cells, in order."""
    nb = nbformat.read(str(submission), as_version=4)
    return [c.source for c in nb.cells if c.cell_type == "code" and not notebook_cells.is_graded(c)]


def answers_before_tests(submission: Path) -> dict[str, list[str]]:
    """grade_id of each graded test cell of a submission -> the code cells before it (all but
    graded test cells, in order): what had run when the notebook reached that test."""
    out: dict[str, list[str]] = {}
    since: list[str] = []
    for cell in nbformat.read(str(submission), as_version=4).cells:
        if cell.cell_type != "code":
            continue
        if notebook_cells.is_graded(cell):
            out.setdefault(notebook_cells.own_grade_id(cell), list(since))
        else:
            since.append(cell.source)
    return out
