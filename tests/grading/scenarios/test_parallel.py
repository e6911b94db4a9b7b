"""Do parallel grading, regrading one student and rerunning everything give the same grades?"""

from __future__ import annotations

import shutil
from pathlib import Path

from autograder.grading.grader import grading, pipeline
from tests.grading.helpers import LAB, answered, make_course, released, submit


def _inbox(folder: Path) -> Path:
    submit(folder, "ada", answered())
    submit(folder, "ben", released())
    submit(folder, "cy", answered("relu"))
    return folder


def test_jobs_2_gives_the_same_grades_as_jobs_1_and_regrading_changes_nothing(tmp_path: Path) -> None:
    """Is grades.csv byte for byte the same with --jobs 1 and --jobs 2, after regrading one
    student, and after rerunning the whole command, with every submission in the gradebook?"""
    inbox = _inbox(tmp_path / "inbox")
    serial, parallel = make_course(tmp_path / "serial"), make_course(tmp_path / "parallel")
    pipeline.grade(serial, inbox, grading.Options(jobs=1, progress=False))
    outcomes = pipeline.grade(parallel, inbox, grading.Options(jobs=2, progress=False))
    expected = (
        "student_id,lab,score,max_score,late,original_id\n"
        "ada,00-warmup,5,5,,ada\nben,00-warmup,0,5,,ben\ncy,00-warmup,2,5,,cy\n"
    )
    assert (serial / "grades.csv").read_text() == expected
    assert (parallel / "grades.csv").read_bytes() == (serial / "grades.csv").read_bytes()
    assert [o.status for o in outcomes] == ["ok"] * 3
    for student in ("ada", "ben", "cy"):
        assert (parallel / "feedback" / student / LAB / f"{LAB}.html").is_file()

    pipeline.grade(parallel, inbox, grading.Options(jobs=2, students=["cy"], progress=False))
    assert (parallel / "grades.csv").read_text() == expected
    shutil.rmtree(parallel / "autograded")
    pipeline.grade(parallel, parallel / "submitted", grading.Options(jobs=2, progress=False))
    assert (parallel / "grades.csv").read_text() == expected
