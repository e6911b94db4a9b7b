"""Are the committed released labs (notebooks/) exactly what `make release` makes from
solutions/, and free of solutions, hidden tests and outputs?"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest

from autograder.grading import course

REPO = Path(__file__).resolve().parents[2]
LABS = course.labs(REPO)


@pytest.fixture(scope="module")
def fresh_course(tmp_path_factory) -> Path:
    """A temporary copy of the course's sources, to release into."""
    root = tmp_path_factory.mktemp("course")
    shutil.copy2(REPO / "nbgrader_config.py", root / "nbgrader_config.py")
    shutil.copytree(REPO / "solutions", root / "solutions", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return root


def _files(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".ipynb_checkpoints" not in p.parts
    }


@pytest.mark.parametrize("lab", LABS)
def test_committed_release_equals_a_fresh_regeneration(fresh_course: Path, lab: str) -> None:
    """Is notebooks/LAB byte for byte what `make release` makes now (run it and commit if not)?"""
    fresh_release = course.release(fresh_course, [lab])[0].parent
    committed = REPO / "notebooks" / lab
    assert committed.is_dir(), f"notebooks/{lab} is missing: run `python -m autograder release {lab}`"
    assert _files(committed) == _files(fresh_release / lab), (
        f"notebooks/{lab} is out of date: run `python -m autograder release {lab}` and commit it"
    )


@pytest.mark.parametrize("lab", LABS)
def test_release_holds_no_solution_hidden_test_or_output(lab: str) -> None:
    """Does the released lab hide every solution and hidden test, and carry no outputs?"""
    path = REPO / "notebooks" / lab / f"{lab}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    text = path.read_text()
    for marker in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"):
        assert marker not in text, f"{path.name} still contains '{marker}'"
    source = nbformat.read(str(REPO / "solutions" / lab / f"{lab}.ipynb"), as_version=4)
    solutions = {
        c.metadata["nbgrader"]["grade_id"]
        for c in source.cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution") and "### BEGIN SOLUTION" in c.source
    }
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert cell.outputs == [] and cell.execution_count is None, f"{lab}: cell {cell.get('id')} has outputs"
        if cell.metadata.get("nbgrader", {}).get("grade_id") in solutions:
            assert "raise NotImplementedError" in cell.source, f"{lab}: a stub does not raise NotImplementedError"


@pytest.mark.parametrize("lab", LABS)
def test_lab_states_its_total_and_every_graded_cell_its_points(lab: str) -> None:
    """Does each graded cell carry points, and the first markdown cell state their total?"""
    nb = nbformat.read(str(REPO / "solutions" / lab / f"{lab}.ipynb"), as_version=4)
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert graded, f"{lab} has no graded cell"
    assert all(c.metadata["nbgrader"].get("points", 0) > 0 for c in graded)
    total = sum(c.metadata["nbgrader"]["points"] for c in graded)
    first_md = next(c for c in nb.cells if c.cell_type == "markdown")
    assert f"{total:g} points" in first_md.source
