"""Does `workspace` bring a changed release to a student without losing their work?

Each "new release" is made in a temporary course by editing a copy of notebooks/LAB with
nbformat; the real repository is never written."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import nbformat
import pytest
from nbgrader.utils import compute_checksum

from autograder import cli
from autograder.grading import course, workspace
from tests.grading.helpers import LAB, REPO, answered, index_of, make_course, with_cell

OTHER = "02-self-attention"
NOW = datetime(2026, 11, 23, 12, 4)
ANSWERS = ("relu", "mean_squared_error")


def _release_path(root: Path, lab: str = LAB) -> Path:
    return root / "notebooks" / lab / f"{lab}.ipynb"


def _edit_release(root: Path, edit, lab: str = LAB) -> None:
    """Apply ``edit`` to the released LAB, with nbgrader's checksums remade as a release would."""
    nb = nbformat.read(str(_release_path(root, lab)), as_version=4)
    edit(nb)
    for cell in nb.cells:
        cell.metadata["nbgrader"]["checksum"] = compute_checksum(cell)
    nbformat.write(nb, str(_release_path(root, lab)))


def _cell(nb: nbformat.NotebookNode, grade_id: str) -> nbformat.NotebookNode:
    return nb.cells[index_of(nb, grade_id)]


def _student(root: Path, target: Path, nb: nbformat.NotebookNode | None = None) -> Path:
    """A workspace made from the current release, LAB then holding ``nb`` (default: every answer given)."""
    workspace.sync(root, target)
    path = target / LAB / f"{LAB}.ipynb"
    nbformat.write(nb if nb is not None else answered(), str(path))
    return path


def _erratum(nb) -> None:
    _cell(nb, "relu_text").source += "\n\n(Erratum: the gradient at 0 is taken to be 0.)"


def _changed_test(nb) -> None:
    _cell(nb, "test_relu").source += "\nassert relu(torch.tensor([-1.0])).item() == 0.0"


def _new_exercise(nb) -> None:
    at = index_of(nb, "test_mean_squared_error") + 1
    answer = nbformat.v4.new_code_cell(
        "def leaky_relu(x, slope=0.01):\n    # YOUR CODE HERE\n    raise NotImplementedError()"
    )
    answer.metadata["nbgrader"] = {
        "grade": False,
        "grade_id": "leaky_relu",
        "locked": False,
        "schema_version": 3,
        "solution": True,
        "task": False,
    }
    test = nbformat.v4.new_code_cell("assert leaky_relu(torch.tensor([-1.0])).item() < 0")
    test.metadata["nbgrader"] = {
        "grade": True,
        "grade_id": "test_leaky_relu",
        "locked": True,
        "points": 1,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    nb.cells[at:at] = [answer, test]


@pytest.mark.parametrize(
    "edit, changed",
    [
        (_erratum, "relu_text (text changed)"),
        (_changed_test, "test_relu (test changed)"),
        (_new_exercise, "leaky_relu (new exercise)"),
    ],
    ids=["erratum-in-text", "changed-test", "new-exercise"],
)
def test_changed_release_carries_answers_and_keeps_a_backup(tmp_path: Path, capsys, edit, changed) -> None:
    """After an erratum, a changed test or a new exercise, is the new release written with every answer
    carried over, the old copy kept as a dated backup, and the change said?"""
    root, target = make_course(tmp_path / "course"), tmp_path / "work"
    path = _student(root, target)
    before = path.read_bytes()
    _edit_release(root, edit)
    capsys.readouterr()
    assert cli.main(["--course", str(root), "workspace", str(target)]) == 0
    out = capsys.readouterr().out
    mine, release = nbformat.read(str(path), as_version=4), nbformat.read(str(_release_path(root)), as_version=4)
    nbformat.validate(mine)
    given = answered()
    for grade_id in ANSWERS:
        assert _cell(mine, grade_id).source == _cell(given, grade_id).source
    for cell in release.cells:  # every other cell is the new release's
        if not cell.metadata["nbgrader"]["solution"]:
            assert _cell(mine, cell.metadata["nbgrader"]["grade_id"]).source == cell.source
    assert [c.metadata["nbgrader"]["grade_id"] for c in mine.cells] == [
        c.metadata["nbgrader"]["grade_id"] for c in release.cells
    ]
    backups = sorted((target / "backups").iterdir())
    assert len(backups) == 1 and backups[0].read_bytes() == before and backups[0].name.startswith(f"{LAB}.20")
    assert f"updated {LAB}/{LAB}.ipynb" in out and changed in out and str(backups[0]) in out
    assert "relu, mean_squared_error" in out


def test_unchanged_lab_is_left_alone(tmp_path: Path, capsys) -> None:
    """Is a lab whose release did not change left byte for byte, with no backup?"""
    root, target = make_course(tmp_path / "course"), tmp_path / "work"
    path = _student(root, target)
    before = path.read_bytes()
    report = workspace.sync(root, target)
    assert report.kept == [f"{LAB}/{LAB}.ipynb"] and report.updated == [] and report.copied == []
    assert path.read_bytes() == before and not (target / "backups").exists()


def test_own_cells_stay_after_the_same_graded_cell(tmp_path: Path) -> None:
    """Are the cells a student added kept, each after the same graded cell as before, even when the
    release inserts cells above them?"""
    root, target = make_course(tmp_path / "course"), tmp_path / "work"
    nb = with_cell(with_cell(answered(), "relu", "# my scratch after relu"), "plot", "# my notes at the end")
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("my title"))
    path = _student(root, target, nb)
    _edit_release(root, lambda r: r.cells.insert(index_of(r, "relu_text"), _locked_markdown("new_text", "A new note.")))
    (update,) = workspace.sync(root, target, now=NOW).updated
    mine = nbformat.read(str(path), as_version=4)
    sources = [c.source for c in mine.cells]
    assert sources[0] == "my title"
    assert sources[index_of(mine, "relu") + 1] == "# my scratch after relu"
    assert sources[index_of(mine, "plot") + 1] == "# my notes at the end"
    assert update.own_cells == 3 and "new_text (new text)" in update.changed


def _locked_markdown(grade_id: str, source: str) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_markdown_cell(source)
    cell.metadata["nbgrader"] = {
        "grade": False,
        "grade_id": grade_id,
        "locked": True,
        "schema_version": 3,
        "solution": False,
        "task": False,
    }
    return cell


def test_answer_to_a_removed_exercise_is_kept_at_the_end(tmp_path: Path, capsys) -> None:
    """When an exercise leaves the release, is the student's answer kept, marked, at the end (and
    still there after a second update)?"""
    root, target = make_course(tmp_path / "course"), tmp_path / "work"
    path = _student(root, target)
    gone = {"mse_text", "mean_squared_error", "test_mean_squared_error"}
    _edit_release(
        root, lambda r: setattr(r, "cells", [c for c in r.cells if c.metadata["nbgrader"]["grade_id"] not in gone])
    )
    assert cli.main(["--course", str(root), "workspace", str(target)]) == 0
    assert "answers kept at the end (their exercise left the lab): mean_squared_error" in capsys.readouterr().out
    mine = nbformat.read(str(path), as_version=4)
    nbformat.validate(mine)
    answer = _cell(answered(), "mean_squared_error").source
    assert mine.cells[-1].source == answer and "nbgrader" not in mine.cells[-1].metadata
    assert mine.cells[-1].metadata["course"] == {"kept_answer": "mean_squared_error"}
    assert "Kept from your earlier copy" in mine.cells[-3].source
    _edit_release(root, _erratum)
    workspace.sync(root, target, now=NOW)
    again = nbformat.read(str(path), as_version=4)
    assert [c.source for c in again.cells[-3:]] == [c.source for c in mine.cells[-3:]]
    assert sum(c.source == answer for c in again.cells) == 1


def test_unanswered_exercise_takes_the_new_stub(tmp_path: Path) -> None:
    """Is an exercise the student has not touched replaced by the new release's version of it?"""
    root, target = make_course(tmp_path / "course"), tmp_path / "work"
    path = _student(root, target, answered("relu"))
    _edit_release(
        root,
        lambda r: setattr(
            _cell(r, "mean_squared_error"), "source", _cell(r, "mean_squared_error").source + "\n# hint: use .mean()"
        ),
    )
    (update,) = workspace.sync(root, target, now=NOW).updated
    mine = nbformat.read(str(path), as_version=4)
    assert _cell(mine, "mean_squared_error").source.endswith("# hint: use .mean()")
    assert update.carried == ["relu"] and update.unanswered == ["mean_squared_error"]
    assert "mean_squared_error (exercise changed)" in update.changed


def test_only_the_named_lab_is_refreshed(tmp_path: Path, capsys) -> None:
    """Does `workspace DIR --lab LAB` refresh that lab only, and refuse an unknown lab naming the known ones?"""
    root, target = make_course(tmp_path / "course"), tmp_path / "work"
    shutil.copytree(REPO / "notebooks" / OTHER, root / "notebooks" / OTHER)
    _student(root, target)
    other = target / OTHER / f"{OTHER}.ipynb"
    mine, other_before = (target / LAB / f"{LAB}.ipynb").read_bytes(), other.read_bytes()
    _edit_release(root, _erratum)
    _edit_release(root, lambda r: setattr(_cell(r, "intro"), "source", _cell(r, "intro").source + " Erratum."), OTHER)
    assert cli.main(["--course", str(root), "workspace", str(target), "--lab", OTHER]) == 0
    assert f"updated {OTHER}/{OTHER}.ipynb" in capsys.readouterr().out
    assert (target / LAB / f"{LAB}.ipynb").read_bytes() == mine and other.read_bytes() != other_before
    assert [p.name.split(".")[0] for p in (target / "backups").iterdir()] == [OTHER]
    with pytest.raises(course.UnknownLab, match=f"99-nothing.*{LAB}, {OTHER}"):  # not SystemExit: a library call
        workspace.sync(root, target, ["99-nothing"])
    assert cli.main(["--course", str(root), "workspace", str(target), "--lab", "99-nothing"]) == 2
    assert f"99-nothing (labs: {LAB}, {OTHER})" in capsys.readouterr().err


def test_make_lab_passes_LAB() -> None:
    """Does `make lab LAB=...` hand the lab to `--lab`, and `lab` accept it?"""
    recipe = (REPO / "Makefile").read_text().split("\nlab:", 1)[1].split("\n\n", 1)[0]
    assert "$(foreach l,$(LAB),--lab $(l))" in recipe
    assert cli._parser().parse_args(["lab", "--lab", OTHER, "--lab", LAB]).labs == [OTHER, LAB]


def test_second_run_makes_no_second_backup(tmp_path: Path) -> None:
    """Does a second run after an update find the lab unchanged: one backup, not two?"""
    root, target = make_course(tmp_path / "course"), tmp_path / "work"
    path = _student(root, target)
    _edit_release(root, _changed_test)
    assert len(workspace.sync(root, target).updated) == 1
    after = path.read_bytes()
    report = workspace.sync(root, target)
    assert report.updated == [] and report.kept == [f"{LAB}/{LAB}.ipynb"]
    assert path.read_bytes() == after and len(list((target / "backups").iterdir())) == 1


def test_backup_never_overwrites_a_backup(tmp_path: Path) -> None:
    """Do two updates in the same minute keep two backups under two names?"""
    root, target = make_course(tmp_path / "course"), tmp_path / "work"
    path = _student(root, target)
    firsts = []
    for edit in (_erratum, _changed_test):
        firsts.append(path.read_bytes())
        _edit_release(root, edit)
        workspace.sync(root, target, now=NOW)
    backups = sorted((target / "backups").iterdir())
    assert [p.name for p in backups] == [f"{LAB}.2026-11-23T1204-2.ipynb", f"{LAB}.2026-11-23T1204.ipynb"]
    assert [backups[1].read_bytes(), backups[0].read_bytes()] == firsts


def test_copy_made_before_the_manifest(tmp_path: Path) -> None:
    """For a copy with no record of its release, is it left alone when its release cells match the
    current release, and updated when they do not?"""
    root, target = make_course(tmp_path / "course"), tmp_path / "work"
    path = _student(root, target)
    (target / workspace.MANIFEST).unlink()
    before = path.read_bytes()
    assert workspace.sync(root, target).kept == [f"{LAB}/{LAB}.ipynb"] and path.read_bytes() == before
    assert json.loads((target / workspace.MANIFEST).read_text()) == {
        f"{LAB}/{LAB}.ipynb": workspace._sha256(_release_path(root))
    }
    (target / workspace.MANIFEST).unlink()
    _edit_release(root, _erratum)
    (update,) = workspace.sync(root, target).updated
    assert update.carried == list(ANSWERS) and update.changed == ["relu_text (text changed)"]


def test_deleted_lab_is_copied_again(tmp_path: Path) -> None:
    """Is a lab the student deleted copied again from the release?"""
    root, target = make_course(tmp_path / "course"), tmp_path / "work"
    _student(root, target)
    shutil.rmtree(target / LAB)
    assert workspace.sync(root, target).copied == [f"{LAB}/{LAB}.ipynb"]
    assert (target / LAB / f"{LAB}.ipynb").read_bytes() == _release_path(root).read_bytes()


def test_unreadable_copy_is_backed_up(tmp_path: Path) -> None:
    """When the release changed and the student's copy is not a notebook, is it kept as a backup?"""
    root, target = make_course(tmp_path / "course"), tmp_path / "work"
    path = _student(root, target)
    path.write_text("my answers")
    _edit_release(root, _erratum)
    (update,) = workspace.sync(root, target).updated
    assert update.unreadable and update.backup.read_text() == "my answers"
    assert path.read_bytes() == _release_path(root).read_bytes()
