"""Tests of the notes read from an autograded notebook (autograder/grading/grader/verdict/kernel_notes.py)."""

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_notebook, new_output

from autograder.grading.grader.verdict.kernel_notes import after_grading
from autograder.grading.grader.verdict.steps import hidden_tests_failed


def _test_cell(grade_id: str | None, outputs: list) -> nbformat.NotebookNode:
    cell = new_code_cell("check_relu(relu)", outputs=outputs)
    if grade_id:
        cell.metadata["nbgrader"] = {"grade": True, "grade_id": grade_id, "points": 2, "solution": False}
    return cell


def _error(ename: str) -> nbformat.NotebookNode:
    return new_output("error", ename=ename, evalue="", traceback=[])


def _write(tmp_path: Path, cells: list) -> Path:
    path = tmp_path / "autograded.ipynb"
    nbformat.write(new_notebook(cells=cells), str(path))
    return path


def test_each_failure_of_the_kernel_is_a_note_naming_its_cell(tmp_path: Path) -> None:
    """Is a visible check that passed before hidden tests failed, a timeout, a MemoryError and a dead
    kernel each a note naming its cell (a cell the student added named as such), and a cell that
    simply failed its check no note?"""
    passed = new_output("stream", name="stdout", text="check_relu: passed.\n")
    path = _write(
        tmp_path,
        [
            _test_cell("test_relu", [passed, _error("CheckFailed")]),
            _test_cell("test_mse", [_error("CheckFailed")]),
            _test_cell("test_loop", [_error("CellTimeoutError")]),
            _test_cell(None, [_error("MemoryError")]),
            _test_cell("test_plot", [_error("DeadKernelError")]),
        ],
    )
    assert after_grading(path) == [
        hidden_tests_failed("test_relu"),
        "cell test_loop ran past the time limit: interrupted, the rest was graded",
        "a cell the student added ran out of memory (MemoryError under the kernel's limit)",
        "the kernel died in cell test_plot",
    ]


def test_a_missing_notebook_gives_no_note(tmp_path: Path) -> None:
    """Does a lab whose autograded notebook was never written give no note rather than an error?"""
    assert after_grading(tmp_path / "absent.ipynb") == []
