"""Does ``grade`` leave its caller's process as it found it?"""

from __future__ import annotations

import os
from pathlib import Path

from grading_helpers import make_course

from autograder.grading import pipeline


def test_grade_leaves_the_callers_path_alone(tmp_path: Path, monkeypatch) -> None:
    """Is the caller's PATH the same after ``grade`` as before, even when this Python's scripts
    (where nbgrader finds ``alembic``) were not on it, and does grading still find them?"""
    root = make_course(tmp_path / "course")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert pipeline.grade(root, inbox, pipeline.Options(progress=False)) == []
    assert os.environ["PATH"] == "/usr/bin:/bin"
    assert (root / "grades.csv").read_text() == "student_id,lab,score,max_score,late,original_id\n"
