"""The synthetic class of ``report_class``, built once a session, and its report."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder.grading.grader import report
from autograder.grading.grader.report.alike import Pair
from autograder.grading.grader.report.tally import Tally
from tests.grading.grader.report import report_class


@dataclass
class Reported:
    """The class as planted, and its report as written under ``root/reports``."""

    root: Path
    planted: report_class.Planted
    tally: Tally
    pairs: list[Pair]
    notes: list[str]


@pytest.fixture(scope="session")
def reported(tmp_path_factory) -> Reported:
    root = tmp_path_factory.mktemp("report-course")
    for folder in ("notebooks", "solutions"):  # the release and the reference solution, as in a course
        shutil.copytree(report_class.REPO / folder / report_class.LAB, root / folder / report_class.LAB)
    planted = report_class.build(root)
    tally, pairs, notes = report.write_report(root, report_class.LAB)
    return Reported(root, planted, tally, pairs, notes)
