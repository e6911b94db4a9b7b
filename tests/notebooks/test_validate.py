"""Does every solution lab pass all its tests, and every released lab fail every graded test
with NotImplementedError? (nbgrader's Validator: `nbgrader validate` exits 0 even on failure.)"""

from __future__ import annotations

import copy
from pathlib import Path

import nbformat
import pytest
from nbgrader.validator import Validator

from autograder.grading import course

REPO = Path(__file__).resolve().parents[2]
LABS = course.labs(REPO)


@pytest.fixture(autouse=True)
def _grading_environment(monkeypatch) -> None:
    monkeypatch.setenv("NBGRADER_EXECUTION", "validate")  # labs skip slow demonstrations
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


def _validator() -> Validator:
    validator = Validator()
    validator.timeout = 120
    return validator


@pytest.mark.parametrize("lab", LABS)
def test_solution_passes_every_test(lab: str) -> None:
    """Does the solution notebook pass every test cell, hidden tests included?"""
    result = _validator().validate(str(REPO / "solutions" / lab / f"{lab}.ipynb"))
    assert not result.get("failed") and not result.get("errored"), result


@pytest.mark.parametrize("lab", LABS)
def test_release_fails_every_graded_test_with_not_implemented(lab: str) -> None:
    """Does every graded test of the untouched release fail, each with NotImplementedError?"""
    path = REPO / "notebooks" / lab / f"{lab}.ipynb"
    validator = _validator()
    executed: list[nbformat.NotebookNode] = []
    execute = validator._preprocess

    def once(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
        """The release run once; its two readings below (inverted and as is) read copies of that run."""
        if not executed:
            executed.append(execute(nb))
        return copy.deepcopy(executed[0])

    validator._preprocess = once  # type: ignore[method-assign]
    failed = validator.validate(str(path)).get("failed", [])
    validator.invert = True
    inverted = validator.validate(str(path))
    assert len(executed) == 1
    assert not inverted.get("passed") and not inverted.get("changed"), f"tests that pass on the stubs: {inverted}"
    graded = [
        c
        for c in nbformat.read(str(path), as_version=4).cells
        if c.metadata.get("nbgrader", {}).get("grade") and c.cell_type == "code"
    ]
    assert len(failed) == len(graded)
    for cell in failed:
        assert "NotImplementedError" in cell["raw_error"], f"{lab}: fails without NotImplementedError: {cell}"
