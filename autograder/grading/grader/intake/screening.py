"""What a submission looks like before grading, in words an instructor can act on."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import checks, notebook_cells
from autograder.grading.grader.intake.untrusted import Refused, is_plain, read_plain, why_not_plain

# A student cell that rebinds or patches a check function: an assignment to one of the
# checks' names (bare or as an attribute), setattr on a checks module, or an assignment into
# autograder.checks. A variable of the student's that merely starts with check_ is not one.
_ASSIGNS_CHECK = re.compile(r"^\s*(?:[\w.]*\.)?(?P<name>check_\w+)\s*=[^=]", re.MULTILINE)
_PATCHES_CHECKS = re.compile(r"setattr\(\s*[\w.]*checks\b|\bautograder\.checks\b[\w.]*\s*=[^=]")


# What nbgrader is given at most: it keeps the gradebook (and its lock) open while it looks up
# every cell that carries a grade id, so a notebook's size must not decide how long that takes.
MAX_CELLS = 2000  # a lab has tens; a student's own exploring cells fit many times over
MAX_UNKNOWN_IDS = 50  # cells with nbgrader metadata of an id the release does not have


def _oversized(nb, release_ids: set[str] | None) -> str | None:
    """Why a notebook is too large for nbgrader to be given (None: it is not)."""
    if len(nb.cells) > MAX_CELLS:
        return f"a notebook of {len(nb.cells)} cells (at most {MAX_CELLS} are graded); scored 0"
    if release_ids is not None:
        unknown = sum(1 for c in nb.cells if (g := notebook_cells.grade_id(c)) and g not in release_ids)
        if unknown > MAX_UNKNOWN_IDS:
            return f"{unknown} cells carry grade ids the lab does not have (at most {MAX_UNKNOWN_IDS}); scored 0"
    return None


def patches_checks(source: str) -> bool:
    """Does this cell's code replace or patch one of the course's check functions?"""
    names = checks.names()  # read from the sources: torch is not imported here
    return bool(_PATCHES_CHECKS.search(source) or any(m["name"] in names for m in _ASSIGNS_CHECK.finditer(source)))


@dataclass
class Inspection:
    notebook: Path | None  # the file to grade, under its expected name (None: nothing to grade)
    problem: str | None = None  # why it cannot be graded at all
    notes: list[str] = field(default_factory=list)
    data: bytes = b""  # the notebook's bytes as looked at: what grading stages for nbgrader


def _graded_cells(nb) -> dict[str, str]:
    return {
        notebook_cells.own_grade_id(c): c.source
        for c in nb.cells
        if notebook_cells.is_graded(c) and c.cell_type == "code"
    }


def inspect_submission(folder: Path, lab: str, release: Path | None, source: Path | None = None) -> Inspection:
    """Find the notebook of ``lab`` in a student's ``folder`` (a renamed one is copied back
    to ``LAB.ipynb``) and compare its test cells with the released notebook ``release`` (and,
    where they differ, with the lab's ``source``: the instructor's own notebook handed in)."""
    expected = folder / f"{lab}.ipynb"
    notes: list[str] = []
    if os.path.lexists(expected) and (why := why_not_plain(os.lstat(expected))):
        return Inspection(None, f"{lab}.ipynb is {why}; scored 0")
    if not is_plain(expected):
        others = sorted(p for p in folder.glob("*.ipynb") if is_plain(p) and p != expected)
        if len(others) != 1:
            found = ", ".join(p.name for p in others) or "no notebook"
            return Inspection(None, f"no {lab}.ipynb in the submission (found {found}); scored 0")
        try:
            renamed = read_plain(others[0])
        except (OSError, Refused) as err:
            return Inspection(None, f"{others[0].name} could not be read ({err}); scored 0")
        expected.unlink(missing_ok=True)  # a link or pipe of that name is never written through
        expected.write_bytes(renamed)
        notes.append(f"notebook renamed to {others[0].name}: graded as {lab}.ipynb")
    try:
        data = read_plain(expected)
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except Refused as err:
        return Inspection(None, f"{lab}.ipynb is {err}; scored 0", notes)
    except Exception as err:  # any unreadable file is reported, not crashed on
        reason = str(err).splitlines()[0][:120] if str(err) else type(err).__name__
        return Inspection(None, f"not a valid notebook ({type(err).__name__}: {reason}); scored 0", notes)
    released = nbformat.read(str(release), as_version=4) if release is not None and release.is_file() else None
    release_ids = None if released is None else {g for c in released.cells if (g := notebook_cells.grade_id(c))}
    if problem := _oversized(nb, release_ids):
        return Inspection(None, problem, notes)
    if released is not None:
        notes += _test_cell_notes(_graded_cells(released), _graded_cells(nb), lab, source)
    for cell in nb.cells:
        if cell.cell_type == "code" and not notebook_cells.is_graded(cell) and patches_checks(cell.source):
            cell_id = notebook_cells.grade_id(cell)
            name = f"cell {cell_id}" if cell_id else "a cell the student added"
            notes.append(f"{name} replaces or patches a check function (hidden tests re-import them)")
    return Inspection(expected, None, notes, data)


def _test_cell_notes(wanted: dict[str, str], present: dict[str, str], lab: str, source: Path | None) -> list[str]:
    """A note for each released test cell deleted or edited; one note for them all where the
    notebook's test cells are the source's, hidden tests included (solutions/ handed in)."""
    edited = [g for g, code in wanted.items() if g in present and present[g].strip() != code.strip()]
    if edited and source is not None and source.is_file():
        own = _graded_cells(nbformat.read(str(source), as_version=4))
        if all(present[g].strip() == own.get(g, "").strip() for g in edited):
            return [
                f"this is the instructor's notebook of {lab} (solutions/), hidden tests included, not a "
                "student's: graded with the released tests (to try grading, `make demo` builds a class; "
                "from a student, the solutions have leaked)"
            ]
    return [
        f"test cell {g} was deleted: added back and scored"
        if g not in present
        else f"test cell {g} was edited: restored from the source and scored"
        for g in wanted
        if g not in present or g in edited
    ]
