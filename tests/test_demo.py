"""`make demo` (python -m autograder demo): an example class of the warm-up lab built from the
release and the solutions, graded by the normal pipeline in the sandbox, with the paths of its
results printed last."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.grading import demo
from autograder.grading.grader.intake.collect import collect

REPO = Path(__file__).resolve().parents[1]


def test_the_four_students_answer_as_named(tmp_path: Path):
    """Is the full student's lab the solutions, the partial one's the first exercise only, the
    blank one the release, and the wrong one's every exercise changed from its solution?"""
    source = demo.build(REPO, tmp_path / "demo")
    with zipfile.ZipFile(source) as zf:
        read = {
            s: nbformat.reads(zf.read(f"{demo.moodle_folder(s)}/{demo.LAB}.ipynb").decode(), as_version=4)
            for s in demo.STUDENTS
        }
    cells = {s: {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells} for s, nb in read.items()}
    assert cells["full"]["relu"] != cells["blank"]["relu"] and "raise NotImplementedError" in cells["blank"]["relu"]
    assert cells["partial"]["relu"] == cells["full"]["relu"]
    assert cells["partial"]["mean_squared_error"] == cells["blank"]["mean_squared_error"]
    for exercise in ("relu", "mean_squared_error"):
        assert cells["wrong"][exercise] not in (cells["full"][exercise], cells["blank"][exercise]), exercise
    assert (tmp_path / "demo" / "notebooks" / demo.LAB).is_dir()
    assert (tmp_path / "demo" / "nbgrader_config.py").is_file()


def test_the_class_is_handed_in_as_a_moodle_download(tmp_path: Path):
    """Is the demo's class a Moodle "Download all submissions" zip, a folder per participant
    named as Moodle names it, that intake reads as four students with their participant ids?"""
    source = demo.build(REPO, tmp_path / "demo")
    assert source == tmp_path / "demo" / f"moodle-submissions-{demo.LAB}.zip"
    with zipfile.ZipFile(source) as zf:
        assert sorted(zf.namelist()) == sorted(
            f"{s}_{101 + i}_assignsubmission_file_/{demo.LAB}.ipynb" for i, s in enumerate(demo.STUDENTS)
        )
    collected = collect(tmp_path / "demo", source, [demo.LAB])
    assert collected.pairs == sorted((s, demo.LAB) for s in demo.STUDENTS) and collected.not_graded == []
    assert collected.originals == {s: f"{s} (Moodle {101 + i})" for i, s in enumerate(demo.STUDENTS)}


def test_a_folder_that_is_not_a_demo_is_left_alone(tmp_path: Path):
    """Is a non-empty folder without the demo's mark refused, nothing in it removed, and an
    earlier demo's folder written again?"""
    (tmp_path / "mine.txt").write_text("mine")
    with pytest.raises(demo.DemoFolderInUse):
        demo.build(REPO, tmp_path)
    assert (tmp_path / "mine.txt").read_text() == "mine"
    demo.build(REPO, tmp_path / "demo")
    (tmp_path / "demo" / "stale.txt").write_text("from before")
    demo.build(REPO, tmp_path / "demo")
    assert not (tmp_path / "demo" / "stale.txt").exists()


def test_a_wrong_answer_makes_one_mistake():
    assert demo.wrong_answer("return ((pred - target) ** 2).mean()") == "return ((pred - target) ** 2).sum()"
    assert demo.wrong_answer("return 1") == "return 1"


@pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap (bwrap) is not installed: grading refuses to run student code without its sandbox",
)
def test_the_demo_grades_its_class_and_says_where_the_results_are(tmp_path: Path):
    """Does `python -m autograder demo DIR` grade the class (full 5/5 with no finding, partial 2/5,
    blank and wrong 0), print the paths of grades.csv, the feedback and the class report, and end
    with the Moodle export: the grading worksheet holding each participant's grade, and the
    feedback zip?"""
    folder = tmp_path / "demo"
    run = subprocess.run(
        [sys.executable, "-m", "autograder", "--course", str(REPO), "demo", str(folder)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    rows = {
        r["student_id"]: (float(r["score"]), float(r["max_score"]))
        for r in csv.DictReader((folder / "grades.csv").open())
    }
    assert rows == {"full": (5, 5), "partial": (2, 5), "blank": (0, 5), "wrong": (0, 5)}
    lines = run.stdout.splitlines()
    full = next(line for line in lines if line.startswith("full "))
    assert full.split()[-2:] == ["5/5", "ok"], full
    attention, reading = [], False  # the lines under "Needs an instructor's eyes:", indented
    for line in lines:
        if reading and not line.startswith("  "):
            break
        attention += [line.strip()] if reading else []
        reading = reading or line == "Needs an instructor's eyes:"
    assert attention == [  # only who each participant is, as read from Moodle's folders: no finding
        f'{s}: the student id made from the name "{s} (Moodle {demo.FIRST_PARTICIPANT + demo.STUDENTS.index(s)})" '
        "(grades.csv: original_id)"
        for s in sorted(demo.STUDENTS)
    ], run.stdout
    results = {
        "grades.csv": folder / "grades.csv",
        "feedback": folder / "feedback",
        "report": folder / "reports" / demo.LAB / "index.html",
    }
    exports = folder.resolve() / "exports" / "moodle" / demo.LAB
    worksheet, feedback = (
        exports / f"moodle-grading-worksheet-{demo.LAB}.csv",
        exports / f"moodle-feedback-{demo.LAB}.zip",
    )
    assert lines[-2:] == [f"moodle import file: {worksheet}", f"moodle import file: {feedback}"], lines[-6:]
    for path in results.values():
        assert any(line.endswith(str(path.resolve())) for line in lines) and path.exists(), path
    sheet = {r["Identifier"]: r["Grade"] for r in csv.DictReader(worksheet.open(encoding="utf-8"))}
    assert sheet == {"Participant 101": "5", "Participant 102": "2", "Participant 103": "0", "Participant 104": "0"}
    with zipfile.ZipFile(feedback) as zf:
        assert f"full_101_assignsubmission_file_/{demo.LAB}.html" in zf.namelist()
    blank = (folder / "feedback" / "blank" / demo.LAB / f"{demo.LAB}.html").read_text()
    assert "relu is not answered yet" in blank
    assert "likely mistake" in (folder / "feedback" / "wrong" / demo.LAB / f"{demo.LAB}.html").read_text()
