"""Does every lab's solution get full marks through the whole pipeline (sandboxed kernel,
independent check, feedback), so that the independent check rejects no valid answer?"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder.grading.course import labs
from autograder.grading.grader import grading, pipeline
from autograder.grading.grader.run import bwrap as sandbox
from tests.grading.helpers import REPO, answered


def test_every_labs_solutions_get_full_marks(tmp_path: Path) -> None:
    """Is every exercise of every lab scored in full, with nothing flagged, when the solutions
    are handed in?"""
    if sandbox.probe() is not None:
        pytest.skip(f"bubblewrap cannot run here: {sandbox.probe()}")
    root = tmp_path / "course"
    root.mkdir()
    shutil.copy2(REPO / "nbgrader_config.py", root)
    for folder in ("solutions", "notebooks"):
        shutil.copytree(REPO / folder, root / folder)
    inbox = tmp_path / "inbox"
    for lab in labs(REPO):
        (inbox / "ada" / lab).mkdir(parents=True)
        nbformat.write(answered(lab=lab), str(inbox / "ada" / lab / f"{lab}.ipynb"))
    outcomes = pipeline.grade(root, inbox, grading.Options(jobs=2, progress=False))
    text = grading.summary(outcomes)
    assert [o.lab for o in outcomes] == labs(REPO), text
    for outcome in outcomes:
        assert outcome.max_score > 0 and outcome.score == outcome.max_score, text
        assert outcome.notes == [], text
    rows = list(csv.DictReader((root / "grades.csv").open()))
    assert all(row["score"] == row["max_score"] for row in rows) and len(rows) == len(labs(REPO))
