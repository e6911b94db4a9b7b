"""nbgrader's metadata of a notebook cell, read and written here alone.

nbgrader keeps a cell's role in ``cell.metadata["nbgrader"]``: ``grade_id`` (the cell's name),
``grade`` (a graded cell, whose outcome is scored), ``solution`` (a cell the student answers),
``locked``, ``task``, ``points`` and, once released, ``checksum``. Every other module of
``autograder`` goes through the functions below (``tests/test_architecture.py`` holds it), so
that layout is written down once.

A submitted notebook's metadata is the student's to change. The readers keep what the course did
before they existed: a missing entry reads as absent (no grade_id, not graded, no points), except
in ``own_grade_id`` and ``checksum``, which raise ``KeyError`` as a dict does; an entry that is not
a dict is handed back as it is (``fields``) and fails where it is read as one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

KEY = "nbgrader"


def fields(cell: Any) -> Any:
    """The cell's nbgrader metadata as the notebook holds it (a dict, unless a submission changed
    it), ``{}`` when it has none."""
    return cell.get("metadata", {}).get(KEY, {})


def metadata(
    grade_id: str, *, solution: bool = False, grade: bool = False, locked: bool = True, points: float | None = None
) -> dict[str, Any]:
    """A new cell's ``metadata``: its nbgrader role, in nbgrader's schema 3."""
    meta: dict[str, Any] = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if points is not None:
        meta["points"] = points
    return {KEY: meta}


def forget(cell: Any) -> None:
    """Take the cell's nbgrader metadata away (it is then a plain cell to nbgrader)."""
    cell.metadata.pop(KEY, None)


def grade_id(cell: Any) -> str | None:
    """The cell's name in nbgrader, None when it has none (a cell the student added)."""
    return fields(cell).get("grade_id")


def own_grade_id(cell: Any) -> str:
    """The name of a cell that must have one (the course's own, or a graded cell); KeyError if not."""
    return fields(cell)["grade_id"]


def is_graded(cell: Any) -> bool:
    """Is the cell graded (nbgrader's ``grade``): a test cell, in the course's labs?"""
    return bool(fields(cell).get("grade"))


def is_answer(cell: Any) -> bool:
    """Is the cell one the student answers (nbgrader's ``solution``)?"""
    return bool(fields(cell).get("solution"))


def is_test(cell: Any) -> bool:
    """A graded code cell that is not a solution: the course's own test cell."""
    return cell.cell_type == "code" and is_graded(cell) and not is_answer(cell)


def points(cell: Any) -> float:
    """The points the cell is worth (0 for a cell that is not graded)."""
    return fields(cell).get("points", 0)


def checksum(cell: Any) -> str:
    """The checksum nbgrader recorded of the cell's released source; KeyError if none."""
    return fields(cell)["checksum"]


# Readers for a notebook after a submission had it: they never fail on metadata the student
# broke (an entry that is not a dict reads as no entry at all).


def _kept(cell: Any) -> dict[str, Any]:
    meta = fields(cell)
    return meta if isinstance(meta, dict) else {}


def name_of(cell: Any) -> str:
    """The cell's grade id as text (``"None"`` when it has none)."""
    return str(_kept(cell).get("grade_id"))


def is_graded_code(cell: Any) -> bool:
    """A graded code cell (a test cell of the course's labs)."""
    return cell.cell_type == "code" and bool(_kept(cell).get("grade"))


def is_plain_answer(cell: Any) -> bool:
    """A solution cell that is not itself graded, with a grade id: where the student writes an answer."""
    meta = _kept(cell)
    return bool(meta.get("solution")) and not meta.get("grade") and isinstance(meta.get("grade_id"), str)


def recorded_checksum(cell: Any) -> Any:
    """The checksum nbgrader recorded of the cell, as the notebook holds it (None when none)."""
    return _kept(cell).get("checksum")


def rename_unless(cell: Any, fits: Callable[[str], bool], rename: Callable[[str], str]) -> None:
    """Give the cell the grade id ``rename(old)`` unless ``fits(old)`` (a cell without one is left
    as it is)."""
    meta = fields(cell)
    if isinstance(meta, dict) and not fits(str(meta.get("grade_id", "x"))):
        meta["grade_id"] = rename(str(meta["grade_id"]))
