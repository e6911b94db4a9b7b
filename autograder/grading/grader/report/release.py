"""What the course handed out for a lab, read for the report: never what a student handed in.

Which answer cells make up an exercise is the course's fact: the release notebook
(``notebooks/LAB/LAB.ipynb``) says it, each graded test cell testing the answer cells since the
previous one (the rule by which grading records ``answer_cells``); where the release is not
there, the source notebook (``solutions/LAB/LAB.ipynb``) says the same. A submission's own
record of it (its verdicts' ``answer_cells``) is never read here: a student who moved a cell
would otherwise change what is compared for the whole class.

The release also gives the stub of each answer cell (the lines the student did not write) and
the source notebook the reference solution, whose code the comparison of answers leaves out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import notebook_cells
from autograder.grading.layout import CourseLayout


@dataclass(frozen=True)
class Release:
    """A lab as the course released it; empty where neither notebook is found."""

    exercises: dict[str, tuple[str, ...]] = field(default_factory=dict)  # test cell -> its answer cells
    stubs: dict[str, str] = field(default_factory=dict)  # answer cell -> its source as released
    solutions: dict[str, str] = field(default_factory=dict)  # answer cell -> the reference solution's source
    found: str = ""  # the notebook the exercises were read from ("" for none)


def _cells(path: Path) -> list | None:
    if not path.is_file():
        return None
    return nbformat.read(str(path), as_version=4).cells  # the course's own notebook, not a submission


def _exercises(cells: list) -> dict[str, tuple[str, ...]]:
    out, pending = {}, []
    for cell in cells:
        if notebook_cells.is_answer(cell) and notebook_cells.grade_id(cell):
            pending.append(str(notebook_cells.grade_id(cell)))
        elif notebook_cells.is_test(cell):
            out[notebook_cells.own_grade_id(cell)] = tuple(pending)
            pending = []
    return out


def _answers(cells: list | None) -> dict[str, str]:
    return {
        str(notebook_cells.grade_id(c)): c.source
        for c in cells or []
        if notebook_cells.is_answer(c) and notebook_cells.grade_id(c)
    }


def read_release(root: Path, lab: str) -> Release:
    """``lab``'s exercises, stubs and reference answers, from ROOT/notebooks and ROOT/solutions."""
    released = _cells(CourseLayout(root).release(lab))
    source = _cells(CourseLayout(root).source(lab))
    where = "notebooks" if released is not None else "solutions" if source is not None else ""
    return Release(
        _exercises(released if released is not None else source or []),
        _answers(released),
        _answers(source),
        f"{where}/{lab}/{lab}.ipynb" if where else "",
    )
