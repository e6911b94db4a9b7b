"""Does an instructor's older copy of nbgrader_config.py, which names the grader's nbgrader classes
by the paths they had before the grader was laid out in stations, get an error naming each new
path (before nbgrader fails on an import), while the course's own config loads?"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from autograder.grading.grader.run import nbconfig

REPO = Path(__file__).resolve().parents[4]


def _course(tmp_path: Path, text: str) -> Path:
    (tmp_path / "nbgrader_config.py").write_text(text)
    return tmp_path


def test_the_courses_config_names_no_old_path() -> None:
    """Does the course's own nbgrader_config.py load, with each moved class at its new path?"""
    nbconfig.check_paths(REPO)
    text = (REPO / "nbgrader_config.py").read_text()
    assert all(new in text for new in nbconfig.MOVED.values())
    assert nbconfig.course_id(REPO) == "transformer-course"


def test_an_older_config_is_refused_with_the_new_paths(tmp_path: Path) -> None:
    """Does a config with the old dotted paths raise OutdatedConfig naming every old path and its
    replacement, when checked and when loaded?"""
    text = (REPO / "nbgrader_config.py").read_text()
    for old, new in nbconfig.MOVED.items():  # a module moved twice: its oldest path on a line of its own
        text = text.replace(new, old) if new in text else text + f"\nimport {old}\n"
    root = _course(tmp_path, text)
    with pytest.raises(nbconfig.OutdatedConfig) as refused:
        nbconfig.load_config(root, {})
    message = str(refused.value)
    assert all(f"{old}  ->  {new}" in message for old, new in nbconfig.MOVED.items()), message


def test_one_old_path_is_enough(tmp_path: Path) -> None:
    """Is a config with a single old preprocessor path refused, naming that one alone?"""
    shutil.copy(REPO / "nbgrader_config.py", tmp_path / "nbgrader_config.py")
    path = tmp_path / "nbgrader_config.py"
    old = "autograder.grading.grader.limits.CapOutputBytes"
    path.write_text(path.read_text().replace(nbconfig.MOVED[old], old))
    with pytest.raises(nbconfig.OutdatedConfig, match="limits.CapOutputBytes  ->  .*run.cap_output_bytes") as refused:
        nbconfig.check_paths(tmp_path)
    assert "HideHiddenTests" not in str(refused.value)
