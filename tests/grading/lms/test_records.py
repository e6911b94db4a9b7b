"""Does the export read what grading recorded: who each student is in the LMS (as intake kept
it), and the points error carried forward earned (as the verdicts say)?"""

from __future__ import annotations

import zipfile
from pathlib import Path

from autograder.grading.grader.intake.collect import collect, recorded_originals
from autograder.grading.grader.verdicts_json import ExerciseVerdict, LabVerdicts, write_verdicts
from autograder.grading.lms.records import carried_forward, for_lms, identity
from tests.grading.helpers import LAB, make_course
from tests.grading.lms import formats


def test_intake_records_each_lms_account(tmp_path: Path) -> None:
    """Does intake record, for a student of each LMS's download, the account the export writes
    under (Blackboard's user name too), and nothing for a student of a plain folder?"""
    root = make_course(tmp_path / "course")
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        for name in (
            formats.moodle_member("John Smith", 201, LAB),
            formats.canvas_member("smithjohn", 501, 9001, LAB),
            formats.blackboard_member("eve", "2024-03-01-15-04-05", LAB),
            f"zed/{LAB}.ipynb",
        ):
            zf.writestr(name, "{}")
    assert collect(root, archive, [LAB]).not_graded == []
    who = recorded_originals(root)
    assert [identity(who.get(s, s)) for s in ("John Smith", "smithjohn", "eve", "zed")] == [
        ("moodle", "John Smith", "201"),
        ("canvas", "smithjohn", "501"),
        ("blackboard", "eve", "eve"),
        ("", "zed", ""),
    ]


def test_carried_forward_points_come_from_the_verdicts(tmp_path: Path) -> None:
    """Are the points of an exercise that failed as written and passed on its own counted as
    carried forward, and none when the verdicts are missing?"""
    folder = tmp_path / "autograded" / "ada" / LAB
    exercises = [
        ExerciseVerdict("relu_tests", ["relu"], "failed", 0, 2, "unnamed", "wrong"),
        ExerciseVerdict("mse_tests", ["mse"], "failed", 3, 3, "unnamed", "wrong", 3.0, "passed"),
    ]
    write_verdicts(folder / "verdicts.json", LabVerdicts("ada", None, LAB, exercises))
    assert carried_forward(tmp_path, "ada", LAB) == (3.0, ("mse_tests",))
    assert carried_forward(tmp_path, "ben", LAB) == (0.0, ())


def test_a_student_of_another_lms_is_not_exportable(tmp_path: Path) -> None:
    """Is a Canvas student, or a folder's, never written into Moodle's files, with the reason?"""
    from autograder.grading.lms.records import LmsRecord

    records = [
        LmsRecord("a", LAB, 1, 5, "a (Canvas 5)", "canvas", "a", "5"),
        LmsRecord("b", LAB, 1, 5, "b", "", "b", ""),
    ]
    mine, others = for_lms(records, "moodle")
    assert mine == [] and [s for s, _ in others] == ["a", "b"]
    assert "through Canvas" in others[0][1] and "no Moodle participant id" in others[1][1]
