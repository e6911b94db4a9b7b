"""Does `workspace DIR` copy the labs into a student's folder without overwriting their work?"""

from __future__ import annotations

from pathlib import Path

from autograder import cli
from autograder.grading import workspace
from tests.grading.helpers import LAB, make_course


def test_workspace_copies_once_and_never_overwrites(tmp_path: Path, capsys) -> None:
    """Does `workspace DIR` copy the labs the first time, keep a student's edited file, and say which?"""
    root = make_course(tmp_path / "course")
    target = tmp_path / "work"
    assert cli.main(["--course", str(root), "workspace", str(target)]) == 0
    notebook = target / LAB / f"{LAB}.ipynb"
    assert notebook.read_bytes() == (root / "notebooks" / LAB / f"{LAB}.ipynb").read_bytes()
    assert f"{LAB}/{LAB}.ipynb" in capsys.readouterr().out
    notebook.write_text("my answers")
    report = workspace.sync(root, target)
    assert report.copied == [] and report.kept == [f"{LAB}/{LAB}.ipynb"]
    assert notebook.read_text() == "my answers"
