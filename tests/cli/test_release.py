"""Does `release` rewrite the same bytes, and refuse a lab that is not in the course?"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from autograder import cli
from autograder.grading import course
from tests.grading.helpers import LAB, make_course


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


def test_release_rerun_is_byte_identical(tmp_path: Path) -> None:
    """Does `python -m autograder release LAB` rewrite the same bytes on a rerun?"""
    root = make_course(tmp_path / "course")
    committed = (root / "notebooks" / LAB / f"{LAB}.ipynb").read_bytes()
    subprocess.run(
        [sys.executable, "-m", "autograder", "--course", str(root), "release", LAB],
        check=True,
        capture_output=True,
        env=course.tool_env(),
    )
    assert (root / "notebooks" / LAB / f"{LAB}.ipynb").read_bytes() == committed
