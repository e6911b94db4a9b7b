"""Does grading work against a real PostgreSQL gradebook (several graders, a JupyterHub)?

The test starts its own server (``tests/grading/postgres_server.py``) and stops it afterwards."""

from __future__ import annotations

from pathlib import Path

from autograder.grading.grader import grading, pipeline
from tests.grading.helpers import answered, make_course, released, submit


def test_grades_into_postgresql(tmp_path: Path, postgres_url: str) -> None:
    """Do two students graded in parallel into PostgreSQL give the right grades.csv, with
    no SQLite gradebook made on the side?"""
    root = make_course(tmp_path / "course")
    inbox = tmp_path / "inbox"
    submit(inbox, "ada", answered())
    submit(inbox, "ben", released())
    pipeline.grade(root, inbox, grading.Options(jobs=2, db_url=postgres_url, progress=False))
    assert (
        root / "grades.csv"
    ).read_text() == "student_id,lab,score,max_score,late,original_id\nada,00-warmup,5,5,,ada\nben,00-warmup,0,5,,ben\n"
    assert not (root / "gradebook.db").exists()
