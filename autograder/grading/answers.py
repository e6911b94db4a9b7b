"""A released lab with its exercises answered from the source's solutions: the submissions
that the grading tests and ``benchmarks/bench_grading.py`` grade."""

from __future__ import annotations

import copy
from collections.abc import Collection
from pathlib import Path

import nbformat

from autograder import notebook_cells as nbcells
from autograder.grading.layout import CourseLayout

_MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


def solutions(root: Path, lab: str) -> dict[str, str]:
    """grade_id -> the solution cell of ``solutions/LAB/LAB.ipynb`` without its markers, in the
    notebook's order."""
    source = nbformat.read(str(CourseLayout(Path(root)).source(lab)), as_version=4)
    return {
        nbcells.own_grade_id(cell): "\n".join(
            line for line in cell.source.splitlines() if not any(m in line for m in _MARKERS)
        )
        for cell in source.cells
        if cell.cell_type == "code" and nbcells.is_answer(cell)
    }


def released(root: Path, lab: str) -> nbformat.NotebookNode:
    """The released notebook ``notebooks/LAB/LAB.ipynb``, as a student gets it."""
    return nbformat.read(str(CourseLayout(Path(root)).release(lab)), as_version=4)


def answered(root: Path, lab: str, exercises: Collection[str] | None = None) -> nbformat.NotebookNode:
    """The released lab with ``exercises`` (grade ids; None: every one) answered correctly."""
    nb = copy.deepcopy(released(root, lab))
    answers = solutions(root, lab)
    for cell in nb.cells:
        grade_id = nbcells.grade_id(cell)
        if grade_id in answers and (exercises is None or grade_id in exercises):
            cell.source = answers[grade_id]
    return nb
