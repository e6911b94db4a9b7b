"""Tests of the step that records the verdicts (``grader/verdict/save_verdicts.py``), without grading: the
exercises and their answer cells, blank detection by nbgrader's checksum, and a failure to
write that costs no grade."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

from autograder.grading.grader.job import Verdict
from autograder.grading.grader.verdict import blank
from autograder.grading.grader.verdict import save_verdicts as record
from autograder.grading.grader.verdicts_json import read_verdicts

ROOT = Path(__file__).resolve().parents[4]
RELEASE = ROOT / "notebooks" / "00-warmup" / "00-warmup.ipynb"  # cells carry nbgrader's release checksums
SOURCE = ROOT / "solutions" / "00-warmup" / "00-warmup.ipynb"


def _release() -> nbformat.NotebookNode:
    return nbformat.read(str(RELEASE), as_version=4)


def _cell(nb: nbformat.NotebookNode, grade_id: str) -> nbformat.NotebookNode:
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_exercises_are_test_cells_with_the_answer_cells_before_them() -> None:
    """Is each graded test cell paired with the solution cells since the previous one, in order?"""
    found = [
        (grade_id, [c.metadata.nbgrader.grade_id for c in cells]) for grade_id, cells in blank.exercises(_release())
    ]
    assert found == [("test_relu", ["relu"]), ("test_mean_squared_error", ["mean_squared_error"])]


def test_released_answer_cell_is_unchanged_and_an_edited_one_is_not() -> None:
    """Does nbgrader's checksum call the released stub unchanged, and a one-character edit changed?"""
    nb = _release()
    relu = _cell(nb, "relu")
    assert blank.is_unchanged(relu)
    relu.source += " "
    assert not blank.is_unchanged(relu)


@pytest.mark.parametrize("meta", [{}, {"checksum": None}, {"checksum": "0" * 32}], ids=["none", "null", "other"])
def test_answer_cell_without_its_release_checksum_is_not_blank(meta: dict) -> None:
    """Is a cell whose recorded checksum is missing or different never taken for blank?"""
    relu = _cell(_release(), "relu")
    relu.metadata.nbgrader.pop("checksum")
    relu.metadata.nbgrader.update(meta)
    assert not blank.is_unchanged(relu)


def test_statuses_points_and_mistakes() -> None:
    """Are a failing stub blank (no mistake), a failing edited answer failed with its mistake id,
    and a passing one passed, with the settled points and every answer as submitted?"""
    nb = _release()
    _cell(nb, "mean_squared_error").source = "def mean_squared_error(pred, target):\n    return (pred - target).sum()"
    verdicts = {
        "test_relu": Verdict(False, "NotImplementedError: ", exercise="test_relu", max_points=2.0),
        "test_mean_squared_error": Verdict(
            False,
            "CheckFailed: check_mean_squared_error failed.",
            exercise="test_mean_squared_error",
            max_points=3.0,
            mistake="mean-squared-error/summed",
        ),
    }
    out = record.lab_verdicts("ada", None, "00-warmup", nb, {}, verdicts)
    assert [(e.exercise, e.status, e.mistake, e.points, e.max_points) for e in out.exercises] == [
        ("test_relu", "blank", None, 0.0, 2.0),
        ("test_mean_squared_error", "failed", "mean-squared-error/summed", 0.0, 3.0),
    ]
    assert out.answers["mean_squared_error"].endswith("(pred - target).sum()")
    assert out.answers["relu"] == _cell(nb, "relu").source
    verdicts["test_relu"] = Verdict(True, exercise="test_relu", points=2.0, max_points=2.0)
    out = record.lab_verdicts("ada", None, "00-warmup", nb, {}, verdicts)
    assert (out.exercises[0].status, out.exercises[0].mistake, out.exercises[0].points) == ("passed", None, 2.0)


@dataclass
class _Job:
    student: str = "ada"
    lab: str = "00-warmup"
    original_id: str = ""


@dataclass
class _Result:
    notes: list[str] = field(default_factory=list)


@dataclass
class _Graded:
    root: Path
    autograded: Path
    source: Path = SOURCE
    job: _Job = field(default_factory=_Job)
    result: _Result = field(default_factory=_Result)
    verdicts: dict = field(default_factory=dict)


def test_record_writes_the_file_beside_the_autograded_notebook(tmp_path: Path) -> None:
    """Does the step write verdicts.json beside the autograded notebook, and go on?"""
    folder = tmp_path / "autograded" / "ada" / "00-warmup"
    folder.mkdir(parents=True)
    notebook = folder / "00-warmup.ipynb"
    notebook.write_bytes(RELEASE.read_bytes())
    s = _Graded(
        tmp_path, notebook, verdicts={"test_relu": Verdict(True, exercise="test_relu", points=2.0, max_points=2.0)}
    )
    assert record.record(s) is True and s.result.notes == []
    written = read_verdicts(folder / "verdicts.json")
    assert (written.student, written.original_id, written.lab) == ("ada", None, "00-warmup")
    assert [e.exercise for e in written.exercises] == ["test_relu"]


def test_record_takes_who_the_student_is_from_the_job(tmp_path: Path) -> None:
    """Does the record name the student as the job says (intake's record, carried by the job),
    without reading intake's files again? A marks file that says otherwise changes nothing."""
    folder = tmp_path / "autograded" / "ada" / "00-warmup"
    folder.mkdir(parents=True)
    notebook = folder / "00-warmup.ipynb"
    notebook.write_bytes(RELEASE.read_bytes())
    (tmp_path / "submitted").mkdir()
    (tmp_path / "submitted" / ".intake.json").write_text('{"originals": {"ada": "Someone Else"}}', encoding="utf-8")
    s = _Graded(
        tmp_path, notebook, verdicts={"test_relu": Verdict(True, exercise="test_relu", points=2.0, max_points=2.0)}
    )
    s.job.original_id = "Ada Lovelace (Moodle 7)"
    assert record.record(s) is True and s.result.notes == []
    assert read_verdicts(folder / "verdicts.json").original_id == "Ada Lovelace (Moodle 7)"


def test_failure_to_write_is_a_note_and_leaves_no_planted_file(tmp_path: Path) -> None:
    """When the notebook cannot be read, is the failure a note (the steps go on) and is a
    verdicts.json already there removed rather than left as the record?"""
    folder = tmp_path / "autograded" / "ada" / "00-warmup"
    folder.mkdir(parents=True)
    (folder / "verdicts.json").write_text('{"schema": "autograder.verdicts/1", "planted": true}', encoding="utf-8")
    notebook = folder / "00-warmup.ipynb"
    notebook.write_text("not a notebook", encoding="utf-8")
    s = _Graded(tmp_path, notebook)
    assert record.record(s) is True
    assert len(s.result.notes) == 1 and s.result.notes[0].startswith("the verdicts were not recorded")
    assert not (folder / "verdicts.json").exists()
