"""The round trip: one class handed in through all three LMSs at once (one zip holding Moodle's
participant folders, Canvas's and Blackboard's file names: two John Smiths, two smithjohns, a late
student, a blank and a resubmission, and a student from a plain folder), graded once, exported
for each LMS, and read back by the readers written from each format's documentation
(``formats``): is every id and grade the gradebook's, and no one else written?"""

from __future__ import annotations

import csv
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder import cli
from autograder.grading.grader import grading, pipeline
from autograder.grading.grader.intake import intake_record
from autograder.grading.grader.output import gradebook
from autograder.grading.grader.run.nbconfig import course_id
from autograder.grading.layout import CourseLayout
from autograder.grading.lms.export import export
from tests.grading.helpers import LAB, answered, make_course, released
from tests.grading.lms import formats

FORMULA = "=SUM(A1)"
CLASS = {
    formats.moodle_member("John Smith", 201, LAB): answered(),
    formats.moodle_member("John Smith", 202, LAB): answered("relu"),
    formats.moodle_member(FORMULA, 203, LAB): answered(),
    formats.moodle_member("Ann Lee", 204, LAB): released(),  # blank
    formats.canvas_member("smithjohn", 501, 9001, LAB, late=True): answered(),
    formats.canvas_member("smithjohn", 502, 9002, LAB): released(),
    formats.canvas_member("ada", 503, 9003, LAB): released(),
    formats.canvas_member("ada", 503, 9003, LAB, version=1): answered(),  # the resubmission is graded
    formats.blackboard_member("eve", "2024-03-01-15-04-05", LAB): answered("relu"),
    formats.blackboard_member("bob", "2024-02-28-09-00-00", LAB): answered(),
    f"zed/{LAB}.ipynb": answered(),  # a folder's student: no LMS id
}
EXPECTED = {  # who: the score the answers earn
    "John Smith (Moodle 201)": 5,
    "John Smith (Moodle 202)": 2,
    f"{FORMULA} (Moodle 203)": 5,
    "Ann Lee (Moodle 204)": 0,
    "smithjohn (Canvas 501)": 5,
    "smithjohn (Canvas 502)": 0,
    "ada (Canvas 503)": 5,
    "eve (Blackboard eve)": 2,
    "bob (Blackboard bob)": 5,
    "zed": 5,
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The class graded once, for every test of this module."""
    folder = tmp_path_factory.mktemp("lms-class")
    root = make_course(folder / "course")
    download = folder / "download.zip"
    with zipfile.ZipFile(download, "w") as zf:
        for name, nb in CLASS.items():
            zf.writestr(name, nbformat.writes(nb))
    pipeline.grade(root, download, grading.Options(jobs=1, progress=False))
    return root


def _gradebook(root: Path) -> dict[str, tuple[str, float, float]]:
    """Who (as intake recorded): (id, score, max score), from the gradebook itself."""
    who = intake_record.load(root).identities
    scores = gradebook.scores(CourseLayout(root).db_url, course_id(root))
    return {who.get(s, s): (s, score, top) for (s, lab), (score, top) in scores.items() if lab == LAB}


def test_the_class_is_graded_as_its_answers_earn(graded: Path) -> None:
    """Does the gradebook hold every student of the three LMSs and the folder, under the identity
    intake read (Blackboard's user name among them), with the points their answers earn?"""
    book = _gradebook(graded)
    assert {who: score for who, (_, score, _) in book.items()} == EXPECTED
    assert len({student for student, _, _ in book.values()}) == len(EXPECTED)


def test_moodle_round_trip(graded: Path) -> None:
    """Does the worksheet read back give every Moodle participant their gradebook grade, once,
    the two John Smiths apart, the formula name neutralised, the feedback zip a page each, and
    every other student listed as not exportable?"""
    summary = export(graded, LAB, "moodle")
    book = _gradebook(graded)
    sheet, archive = summary.files
    read = formats.moodle_worksheet(sheet)
    expected = {who.split("Moodle ")[1][:-1]: score for who, (_, score, _) in book.items() if "(Moodle " in who}
    assert {p: float(grade) for p, (grade, _, _) in read.items()} == expected
    assert all(float(top) == 5 for _, top, _ in read.values())
    assert f"'{FORMULA}" in formats.cells(sheet) and FORMULA not in formats.cells(sheet)
    assert set(formats.moodle_feedback(archive)) == set(expected)
    assert {s for s, _ in summary.not_exportable} == {s for who, (s, _, _) in book.items() if "(Moodle " not in who}


def test_canvas_round_trip(graded: Path) -> None:
    """Does the gradebook CSV read back give every Canvas user (both smithjohns, the late one,
    the resubmitted one) their gradebook grade under their user id, and the points possible?"""
    summary = export(graded, LAB, "canvas")
    grades, points = formats.canvas_gradebook(summary.files[0], LAB)
    book = _gradebook(graded)
    expected = {who.split("Canvas ")[1][:-1]: score for who, (_, score, _) in book.items() if "(Canvas " in who}
    assert {user: float(grade) for user, grade in grades.items()} == expected and points == "5"
    assert any("no comment column" in note for note in summary.notes)  # the late flag: in the feedback


def test_blackboard_round_trip(graded: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Through the command line, does the Grade Center file read back give each Blackboard user
    their gradebook grade, and the summary name the file last and the folder's student as not
    exportable?"""
    assert cli.main(["--course", str(graded), "export", "--lms", "blackboard", LAB]) == 0
    out = capsys.readouterr().out.splitlines()
    path = CourseLayout(graded).exports / "blackboard" / LAB / f"blackboard-grade-center-{LAB}.csv"
    assert out[-1] == f"blackboard import file: {path}"
    assert any(line.startswith("  not exportable: zed: no Blackboard user name") for line in out)
    grades, points, column = formats.blackboard_grades(path, LAB)
    assert {user: float(g) for user, g in grades.items()} == {"eve": 2, "bob": 5} and (points, column) == ("5", "")
    late = {r["student_id"]: r["late"] for r in csv.DictReader((graded / "grades.csv").open())}
    assert late["eve"] == "2024-03-01 15:04:05"
