"""Does the look at a submission before grading say what an instructor needs to know?"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat

from autograder.grading.grader.intake.screening import inspect_submission
from tests.grading.helpers import LAB, REPO, answered, index_of, submit, with_cell

RELEASE = REPO / "notebooks" / LAB / f"{LAB}.ipynb"
SOURCE = REPO / "solutions" / LAB / f"{LAB}.ipynb"


def test_clean_submission_has_no_notes(tmp_path: Path) -> None:
    """Does a plain answered lab pass without a note?"""
    path = submit(tmp_path, "ada", answered())
    found = inspect_submission(path.parent, LAB, RELEASE)
    assert (found.notebook, found.problem, found.notes) == (path, None, [])


def test_renamed_notebook_is_graded_under_its_name(tmp_path: Path) -> None:
    """Is a lone notebook with another name copied back to LAB.ipynb, with a note?"""
    path = submit(tmp_path, "ada", answered(), name="Copy of lab.ipynb")
    found = inspect_submission(path.parent, LAB, RELEASE)
    assert found.notebook == path.parent / f"{LAB}.ipynb" and found.notebook.is_file()
    assert found.notes == [f"notebook renamed to Copy of lab.ipynb: graded as {LAB}.ipynb"]


def test_invalid_json_and_missing_notebooks_are_problems(tmp_path: Path) -> None:
    """Are a file that is not JSON and a folder with no (or two) notebooks reported, not crashed on?"""
    broken = submit(tmp_path, "ada", b"{ nope")
    assert "not a valid notebook" in inspect_submission(broken.parent, LAB, RELEASE).problem
    (tmp_path / "ben" / LAB).mkdir(parents=True)
    assert "no 00-warmup.ipynb" in inspect_submission(tmp_path / "ben" / LAB, LAB, RELEASE).problem
    submit(tmp_path, "cy", answered(), name="a.ipynb")
    submit(tmp_path, "cy", answered(), name="b.ipynb")
    assert "found a.ipynb, b.ipynb" in inspect_submission(tmp_path / "cy" / LAB, LAB, RELEASE).problem


def test_edited_and_deleted_test_cells_are_named(tmp_path: Path) -> None:
    """Are an edited and a deleted test cell named in the notes?"""
    nb = answered()
    nb.cells[index_of(nb, "test_relu")].source = "pass"
    del nb.cells[index_of(nb, "test_mean_squared_error")]
    path = submit(tmp_path, "ada", nb)
    notes = inspect_submission(path.parent, LAB, RELEASE).notes
    assert "test cell test_relu was edited: restored from the source and scored" in notes
    assert "test cell test_mean_squared_error was deleted: added back and scored" in notes


def test_the_instructors_notebook_handed_in_is_named_once(tmp_path: Path) -> None:
    """Is solutions/'s own notebook handed in (a newcomer's first try, or a leak) one note that
    says what it is and where to try grading, rather than a note per test cell, while a student's
    edit of a test cell among them is still named?"""
    path = submit(tmp_path, "ada", SOURCE.read_bytes())
    notes = inspect_submission(path.parent, LAB, RELEASE, SOURCE).notes
    assert len(notes) == 1 and "the instructor's notebook of 00-warmup" in notes[0] and "make demo" in notes[0]
    nb = nbformat.read(str(SOURCE), as_version=4)
    nb.cells[index_of(nb, "test_relu")].source = "pass"
    edited = submit(tmp_path, "ben", nb)
    notes = inspect_submission(edited.parent, LAB, RELEASE, SOURCE).notes
    assert "test cell test_relu was edited: restored from the source and scored" in notes
    assert not any("instructor's notebook" in note for note in notes)


def test_cells_that_patch_checks_are_named(tmp_path: Path) -> None:
    """Is a student cell that rebinds or patches a check function noted, and a cell that only
    calls one not?"""
    for source, flagged in [
        ("check_relu = lambda f: None", True),
        ("import autograder.checks as c\nc.check_relu = print", True),
        ("setattr(autograder.checks, 'check_relu', print)", True),
        ("autograder.checks.lab00_warmup.warmup.check_relu = print", True),
        ("check_relu(relu)", False),
        ("ok = check_relu == 3", False),
        ("check_sum = x.sum()", False),
        ("self.check_every = 10", False),
    ]:
        path = submit(tmp_path, "ada", with_cell(answered(), "relu", source))
        notes = inspect_submission(path.parent, LAB, RELEASE).notes
        assert any("patches a check function" in n for n in notes) == flagged, source
        nbformat.read(str(path), as_version=4)


def test_a_linked_notebook_is_refused_unread(tmp_path: Path) -> None:
    """Is a LAB.ipynb that is a symbolic or hard link (to the solutions, say) refused with a
    message naming it, and its target never read, nor a lone link taken as a renamed notebook?"""
    solutions = REPO / "solutions" / LAB / f"{LAB}.ipynb"
    (tmp_path / "ada" / LAB).mkdir(parents=True)
    (tmp_path / "ada" / LAB / f"{LAB}.ipynb").symlink_to(solutions)
    found = inspect_submission(tmp_path / "ada" / LAB, LAB, RELEASE)
    assert found.problem == f"{LAB}.ipynb is a symbolic link, not followed; scored 0" and found.data == b""
    target = tmp_path / "outside.ipynb"
    target.write_bytes(solutions.read_bytes())
    (tmp_path / "ben" / LAB).mkdir(parents=True)
    os.link(target, tmp_path / "ben" / LAB / f"{LAB}.ipynb")
    assert inspect_submission(tmp_path / "ben" / LAB, LAB, RELEASE).problem.startswith(f"{LAB}.ipynb is a hard link")
    (tmp_path / "cy" / LAB).mkdir(parents=True)
    (tmp_path / "cy" / LAB / "mine.ipynb").symlink_to(solutions)
    assert "found no notebook" in inspect_submission(tmp_path / "cy" / LAB, LAB, RELEASE).problem
    assert not (tmp_path / "cy" / LAB / f"{LAB}.ipynb").exists()


def test_the_bytes_looked_at_are_the_bytes_staged(tmp_path: Path) -> None:
    """Does the look at a submission hand back the very bytes it read, for grading to stage?"""
    path = submit(tmp_path, "ada", answered())
    assert inspect_submission(path.parent, LAB, RELEASE).data == path.read_bytes()
