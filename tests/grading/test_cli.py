"""Does the command line release, copy a workspace without overwriting, and explain itself?"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from grading_helpers import LAB, make_course

from autograder import cli
from autograder.grading import course, workspace


def test_every_flag_has_help() -> None:
    """Does every option of every command carry a help text?"""
    parser = cli._parser()
    subparsers = next(a for a in parser._actions if a.dest == "command").choices
    for name, sub in [("", parser), *subparsers.items()]:
        for action in sub._actions:
            if action.dest != "help":
                assert action.help, f"{name} {action.dest} has no help"


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


def test_unknown_lab_is_refused(tmp_path: Path, capsys) -> None:
    """Does `release` refuse a lab that is not in solutions/ with an exception a library caller
    can catch (not SystemExit), naming the ones that are, and does the command line turn it
    into a message and exit status 2?"""
    root = make_course(tmp_path / "course")
    with pytest.raises(course.UnknownLab, match="00-warmup"):
        course.release(root, ["99-nothing"])
    assert cli.main(["--course", str(root), "release", "99-nothing"]) == 2
    err = capsys.readouterr().err
    assert "99-nothing" in err and "00-warmup" in err


@pytest.mark.slow
def test_release_rerun_is_byte_identical(tmp_path: Path) -> None:
    """Does `python -m autograder release LAB` rewrite the same bytes on a rerun?"""
    root = make_course(tmp_path / "course")
    committed = (root / "notebooks" / LAB / f"{LAB}.ipynb").read_bytes()
    subprocess.run([sys.executable, "-m", "autograder", "--course", str(root), "release", LAB],
                   check=True, capture_output=True, env=course.tool_env())
    assert (root / "notebooks" / LAB / f"{LAB}.ipynb").read_bytes() == committed
