"""Do the writers of each LMS's files, given what grading recorded (synthetic records, nothing
graded), write every student the LMS knows under their own id, no one else, and keep every
other cell of the LMS's own file as it was?"""

from __future__ import annotations

import csv
import zipfile
from pathlib import Path

import pytest

from autograder.grading.lms import blackboard, canvas, moodle
from autograder.grading.lms.records import LmsRecord, identity
from autograder.grading.lms.table import ExportError
from tests.grading.lms import formats

LAB = "00-warmup"
FORMULA_NAME = '=HYPERLINK("http://x")'


def _records(tmp_path: Path) -> list[LmsRecord]:
    page = tmp_path / "page.html"
    page.write_text("<html>feedback</html>")

    def record(student: str, score: float, who: str, late: str = "", carried: float = 0.0) -> LmsRecord:
        lms, name, account = identity(who)
        exercises = ("mean_squared_error",) if carried else ()
        return LmsRecord(student, LAB, score, 5.0, who, lms, name, account, late, carried, exercises, page)

    return [
        record("John Smith", 4, "John Smith (Moodle 201)"),
        record("John_Smith-1a2b3c4d", 0, "John Smith (Moodle 202)"),
        record("HYPERLINK-0a0a0a0a", 5, f"{FORMULA_NAME} (Moodle 203)", late="LATE", carried=3),
        record("smithjohn", 5, "smithjohn (Canvas 501)", late="LATE"),
        record("smithjohn-9f9f9f9f", 2, "smithjohn (Canvas 502)"),
        record("eve", 3, "eve (Blackboard eve)", late="2024-03-01 15:04:05"),
        record("zed", 5, "zed"),
    ]


def _write_csv(path: Path, table: list[list[str]], encoding: str = "utf-8", delimiter: str = ",") -> Path:
    with path.open("w", encoding=encoding, newline="") as f:
        csv.writer(f, delimiter=delimiter).writerows(table)
    return path


def test_identity_reads_what_intake_recorded() -> None:
    """Is each LMS's account read from who intake recorded, and a folder's student given none?"""
    assert identity("John Smith (Moodle 201)") == ("moodle", "John Smith", "201")
    assert identity("smithjohn (Canvas 501)") == ("canvas", "smithjohn", "501")
    assert identity("eve (Blackboard eve)") == ("blackboard", "eve", "eve")
    assert identity("Ann (Smith) Lee") == ("", "Ann (Smith) Lee", "")
    assert identity("zed") == ("", "zed", "")


def test_moodle_worksheet_and_feedback_zip_without_the_lms_file(tmp_path: Path) -> None:
    """Does each Moodle participant get one row under their own participant id (two John Smiths,
    two rows), with the grade, the late flag and the carried-forward points in the comment, a
    folder of the feedback zip each, every other student listed as not exportable with why, and a
    name that starts a formula neutralised?"""
    summary = moodle.write(_records(tmp_path), tmp_path / "out", LAB)
    sheet, archive = summary.files
    assert [h for h in formats.rows(sheet)[0]] == moodle.WORKSHEET
    read = formats.moodle_worksheet(sheet)
    assert {k: v[:2] for k, v in read.items()} == {"201": ("4", "5"), "202": ("0", "5"), "203": ("5", "5")}
    assert "Late: LATE." in read["203"][2] and "Error carried forward: 3 " in read["203"][2]
    assert "mean_squared_error" in read["203"][2] and "Late" not in read["201"][2]
    assert f"'{FORMULA_NAME}" in formats.cells(sheet) and FORMULA_NAME not in formats.cells(sheet)
    feedback = formats.moodle_feedback(archive)
    assert {k: v[1] for k, v in feedback.items()} == {p: [f"{LAB}.html"] for p in ("201", "202", "203")}
    assert feedback["201"][0] == feedback["202"][0] == "John Smith"
    assert dict(summary.not_exportable).keys() == {"smithjohn", "smithjohn-9f9f9f9f", "eve", "zed"}
    assert "no Moodle participant id recorded" in dict(summary.not_exportable)["zed"]
    assert summary.lines()[-2:] == [f"moodle import file: {sheet}", f"moodle import file: {archive}"]


def test_moodle_fills_in_its_own_worksheet_and_keeps_the_rest(tmp_path: Path) -> None:
    """With Moodle's downloaded worksheet, are only the graded participants' Grade and Feedback
    comments changed; does a participant with no submission keep the empty grade (0 with
    missing="0", a grade typed in Moodle kept either way); is a graded participant the worksheet
    lacks listed and not written?"""
    header = [*moodle.WORKSHEET[:9], "Feedback comments", "Marker"]
    template = [
        header,
        ["Participant 201", "John Smith", "js1@uni", "Submitted", "", "5.00", "Yes", "Mon", "-", "", "TA1"],
        ["Participant 202", "John Smith", "js2@uni", "Submitted", "", "5.00", "Yes", "Mon", "-", "", "TA2"],
        ["Participant 298", "Ann Lee", "ann@uni", "No submission", "3.00", "5.00", "Yes", "-", "Tue", "typed", "TA1"],
        ["Participant 299", "Bo Li", "bo@uni", "No submission", "", "5.00", "Yes", "-", "-", "", "TA2"],
    ]
    worksheet = _write_csv(tmp_path / "worksheet.csv", template)
    for missing, expected_299 in ((None, ""), ("0", "0")):
        summary = moodle.write(_records(tmp_path), tmp_path / "out", LAB, worksheet, missing)
        table = list(csv.reader(summary.files[0].open(encoding="utf-8")))
        assert table[0] == header
        assert table[1][:4] + table[1][5:10] + table[1][10:] == [
            *template[1][:4],
            *template[1][5:9],
            table[1][9],
            "TA1",
        ]
        assert (table[1][4], table[2][4], table[3][4], table[4][4]) == ("4", "0", "3.00", expected_299)
        assert table[3] == [*template[3][:4], "3.00", *template[3][5:]]
        assert summary.not_in_lms_file == ["HYPERLINK-0a0a0a0a"] and summary.no_submission == [
            "Participant 298",
            "Participant 299",
        ]
        assert set(formats.moodle_feedback(summary.files[1])) == {"201", "202"}


def test_canvas_gradebook_new_and_filled_in(tmp_path: Path) -> None:
    """Is each Canvas user written once under their user id (two smithjohns, two rows) with a
    Points Possible row, and, in Canvas's own export, only the lab's column changed, another
    assignment's column, the SIS ids and sections kept, a student without submission left empty?"""
    summary = canvas.write(_records(tmp_path), tmp_path / "new", LAB)
    grades, points = formats.canvas_gradebook(summary.files[0], LAB)
    assert grades == {"501": "5", "502": "2"} and points == "5"
    assert set(dict(summary.not_exportable)) == {
        "John Smith",
        "John_Smith-1a2b3c4d",
        "HYPERLINK-0a0a0a0a",
        "eve",
        "zed",
    }
    assert any("no comment column" in note for note in summary.notes)
    header = [*canvas.COLUMNS, "Quiz 1 (777)", f"{LAB} (12345)", "Current Score"]
    template = [
        header,
        ["    Points Possible", "", "", "", "", "10", "5", "(read only)"],
        ["Smith, John", "501", "S501", "js1", "Sec A", "9", "", "90"],
        ["Smith, John", "502", "S502", "js2", "Sec B", "8", "", "80"],
        ["Lee, Ann", "503", "S503", "al", "Sec A", "7", "", "70"],
    ]
    filled = canvas.write(_records(tmp_path), tmp_path / "filled", LAB, _write_csv(tmp_path / "gb.csv", template))
    table = list(csv.reader(filled.files[0].open(encoding="utf-8")))
    assert table[:2] == template[:2]
    assert table[2] == [*template[2][:6], "5", "90"] and table[3] == [*template[3][:6], "2", "80"]
    assert table[4] == template[4] and filled.no_submission == ["503"]
    assert formats.canvas_gradebook(filled.files[0], LAB) == ({"501": "5", "502": "2", "503": ""}, "5")
    with pytest.raises(ExportError, match="no column for 'Lab zero'"):
        canvas.write(_records(tmp_path), tmp_path / "x", LAB, tmp_path / "gb.csv", assignment="Lab zero")


def test_blackboard_grade_center_new_and_filled_in(tmp_path: Path) -> None:
    """Is each Blackboard user written under their user name, every cell quoted, in a new column
    with the lab's points; and in Blackboard's own download (tab-delimited UTF-16) only the
    column's grade and Feedback to Learner changed, the late time in the comment?"""
    summary = blackboard.write(_records(tmp_path), tmp_path / "new", LAB)
    assert formats.blackboard_grades(summary.files[0], LAB) == ({"eve": "3"}, "5", "")
    title = f"{LAB} [Total Pts: 5 Score] |4242"
    header = ["Last Name", "First Name", "Username", "Student ID", title, "Grading Notes", "Feedback to Learner"]
    template = [header, ["Ng", "Eve", "eve", "77", "", "", ""], ["Li", "Bo", "bo", "78", "", "", ""]]
    download = _write_csv(tmp_path / "download.xls", template, encoding="utf-16", delimiter="\t")
    filled = blackboard.write(_records(tmp_path), tmp_path / "filled", LAB, download, "0")
    assert formats.blackboard_grades(filled.files[0], LAB) == ({"eve": "3", "bo": "0"}, "5", "4242")
    row = formats.rows(filled.files[0])[0]
    assert (row["Student ID"], row["Last Name"]) == ("77", "Ng")
    assert "Late: 2024-03-01 15:04:05." in row["Feedback to Learner"]


def test_a_feedback_zip_is_a_zip_of_pages(tmp_path: Path) -> None:
    """Does the feedback zip hold each page's bytes, and nothing for a student without a page?"""
    records = _records(tmp_path)
    records[1].feedback = None
    summary = moodle.write(records, tmp_path / "out", LAB)
    with zipfile.ZipFile(summary.files[1]) as zf:
        assert zf.read(f"John Smith_201_assignsubmission_file_/{LAB}.html") == b"<html>feedback</html>"
        assert not any("_202_" in n for n in zf.namelist())
    assert any("no feedback page for John_Smith-1a2b3c4d" in note for note in summary.notes)


def test_a_maximum_the_lms_sets_otherwise_is_named_not_scaled(tmp_path: Path) -> None:
    """Where Moodle's worksheet gives the assignment a maximum of 100 and the lab has 5 points,
    is the grade the lab's points, unscaled, and does the summary say to set the maximum?"""
    template = [moodle.WORKSHEET, ["Participant 201", "John Smith", "", "", "", "100.00", "Yes", "", "", ""]]
    summary = moodle.write(_records(tmp_path), tmp_path / "out", LAB, _write_csv(tmp_path / "w.csv", template))
    assert formats.moodle_worksheet(summary.files[0])["201"][:2] == ("4", "100.00")
    assert any("maximum for this column is 100, the lab's is 5" in note for note in summary.notes)
