"""Does ``grade`` leave its caller's process as it found it, stop before the first student when
the grader itself is broken, and grade a second clone of the course?"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.grading.grader import grading, pipeline
from autograder.grading.grader.run import bwrap as sandbox
from autograder.grading.protocol.confinement import Limits
from tests.grading.helpers import LAB, REPO, answered, make_course, released, with_cell

needs_sandbox = pytest.mark.skipif(sandbox.probe() is not None, reason="the sandbox does not work here")


def test_grade_leaves_the_callers_path_alone(tmp_path: Path, monkeypatch) -> None:
    """Is the caller's PATH the same after ``grade`` as before, even when this Python's scripts
    (where nbgrader finds ``alembic``) were not on it, and does grading still find them?"""
    root = make_course(tmp_path / "course")
    inbox = tmp_path / "inbox"
    inbox.mkdir()
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert pipeline.grade(root, inbox, grading.Options(progress=False)) == []
    assert os.environ["PATH"] == "/usr/bin:/bin"
    assert (root / "grades.csv").read_text() == "student_id,lab,score,max_score,late,original_id\n"


SIGNALS = (
    "import os, signal\nfor pid in (os.getppid(), -1, 1):\n"
    "    try:\n        os.kill(pid, signal.SIGKILL)\n    except OSError as err:\n        print(err)\n"
)


def _second_clone(folder: Path) -> Path:
    """The course's git-tracked files copied to ``folder`` (a clone that this environment's
    editable install does not point at)."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, tracked.decode().split("\0")):
        if (REPO / name).is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, folder / name)
    return folder


@needs_sandbox
def test_a_second_clone_graded_with_another_checkouts_environment(tmp_path: Path) -> None:
    """Graded from a second clone of the course with this checkout's environment (whose editable
    install points elsewhere), from an LMS zip, does a full answer get full marks, a student who
    signals its parent get its own marks, and the stub 0; and does the summary note the two
    packages?"""
    clone = _second_clone(tmp_path / "clone")
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"full_11_21_{LAB}.ipynb", nbformat.writes(answered()))
        zf.writestr(f"signals_12_22_{LAB}.ipynb", nbformat.writes(with_cell(answered(), "relu", SIGNALS)))
        zf.writestr(f"stub_13_23_{LAB}.ipynb", nbformat.writes(released()))
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "grade",
            str(archive),
            "--lab",
            LAB,
            "--jobs",
            "2",
            "--no-progress",
            "--memory-mb",
            "2048",
        ],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout + run.stderr[-4000:]
    rows = {
        r["student_id"]: (float(r["score"]), float(r["max_score"]))
        for r in csv.DictReader((clone / "grades.csv").open())
    }
    assert rows == {"full": (5, 5), "signals": (5, 5), "stub": (0, 5)}, run.stdout
    # grade's last step, the class report: the stub's two exercises blank, the rest passed
    exercises = {
        r["exercise"]: (r["passed"], r["failed"], r["blank"])
        for r in csv.DictReader((clone / "reports" / LAB / "exercises.csv").open())
    }
    assert exercises == {"test_relu": ("2", "0", "1"), "test_mean_squared_error": ("2", "0", "1")}, run.stdout
    assert f"grading imports autograder from the course ({clone / 'autograder'})" in run.stdout


@needs_sandbox
def test_a_broken_grader_stops_before_the_first_student(tmp_path: Path) -> None:
    """When the course's own autograder cannot start the independent check's child (here its
    child module fails on import), does grading stop before any student with that cause, instead
    of giving every student 0?"""
    from autograder.grading.grader.run import preflight

    root = make_course(tmp_path / "course")
    shutil.copytree(REPO / "autograder", root / "autograder", ignore=shutil.ignore_patterns("__pycache__"))
    child = root / "autograder" / "grading" / "sandboxed" / "child.py"
    future = "from __future__ import annotations\n"  # must stay first: the failure goes right after it
    child.write_text(child.read_text().replace(future, future + 'raise ImportError("BROKEN-CHILD-0451")\n', 1))
    assert "BROKEN-CHILD-0451" in child.read_text()
    inbox = tmp_path / "inbox"
    (inbox / "ada" / LAB).mkdir(parents=True)
    nbformat.write(answered(), str(inbox / "ada" / LAB / f"{LAB}.ipynb"))
    with pytest.raises(preflight.PreflightFailed, match="BROKEN-CHILD-0451"):
        pipeline.grade(root, inbox, grading.Options(progress=False, limits=Limits(memory_mb=2048)))
    assert not (root / "autograded").exists() and not (root / "grades.csv").exists()


def test_the_exchanges_claimed_time_travels_on_only_when_it_is_a_time(tmp_path: Path) -> None:
    """nbgrader's exchange hands feedback back by the time in timestamp.txt: is a plain time kept, and
    anything else (a link, text around a time, a missing file) dropped?"""
    from autograder.grading.grader.intake.staging import _claimed_time

    (tmp_path / "good").write_text("2026-11-25 15:25:30.829563 UTC\n")
    (tmp_path / "odd").write_text("2026-11-25 15:25:30 =HYPERLINK()\n")
    (tmp_path / "link").symlink_to(tmp_path / "good")
    assert _claimed_time(tmp_path / "good") == "2026-11-25 15:25:30.829563 UTC"
    assert [_claimed_time(tmp_path / n) for n in ("odd", "link", "missing")] == ["", "", ""]
