"""Does collecting bring every layout of submissions into submitted/STUDENT/LAB/LAB.ipynb?"""

from __future__ import annotations

import zipfile
from pathlib import Path

import nbformat
import pytest
from grading_helpers import LAB, answered, make_course, released

from autograder.grading.pipeline import collect


def test_folder_layouts_are_copied_into_submitted(tmp_path: Path) -> None:
    """Are STUDENT/LAB/*.ipynb and STUDENT/LAB.ipynb both collected, replacing an older copy?"""
    root = make_course(tmp_path / "course")
    inbox = tmp_path / "inbox"
    (inbox / "ada" / LAB).mkdir(parents=True)
    nbformat.write(answered(), str(inbox / "ada" / LAB / f"{LAB}.ipynb"))
    (inbox / "ben").mkdir()
    nbformat.write(released(), str(inbox / "ben" / f"{LAB}.ipynb"))
    (root / "submitted" / "ada" / LAB).mkdir(parents=True)
    (root / "submitted" / "ada" / LAB / "old.ipynb").write_text("{}")
    collect(root, inbox, [LAB])
    assert sorted(p.relative_to(root / "submitted").as_posix() for p in (root / "submitted").rglob("*.ipynb")) == \
        [f"ada/{LAB}/{LAB}.ipynb", f"ben/{LAB}/{LAB}.ipynb"]


@pytest.mark.slow
def test_lms_zip_is_collected_with_nbgrader_zip_collect(tmp_path: Path) -> None:
    """Is an LMS download (files named STUDENT_..._LAB.ipynb, in folders or not) collected
    per student by nbgrader zip_collect?"""
    root = make_course(tmp_path / "course")
    archive = tmp_path / "class.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"ada_12345_678_{LAB}.ipynb", nbformat.writes(answered()))
        zf.writestr(f"week0/ben_{LAB}.ipynb", nbformat.writes(released()))
        zf.writestr("readme.txt", "not a notebook")
    collect(root, archive, [LAB])
    for student in ("ada", "ben"):
        assert (root / "submitted" / student / LAB / f"{LAB}.ipynb").is_file(), student
