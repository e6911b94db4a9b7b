"""Does the report count exactly what was planted in the synthetic class (report_class)?"""

from __future__ import annotations

import csv
from collections import Counter

import pytest

from autograder.checks.mistakes import MISTAKES
from autograder.grading.grader.report import example
from autograder.grading.grader.report.sheets import Row, Sheet
from autograder.grading.grader.report.tally import tally


def test_statuses_are_the_planted_numbers(reported):
    """Are passed / failed / blank per exercise the numbers planted, and do they cover every student?"""
    found = Counter({(e.name, s): getattr(e, s) for e in reported.tally.exercises
                     for s in ("passed", "failed", "blank")})
    assert +found == reported.planted.status
    assert all(e.passed + e.failed + e.blank == len(reported.planted.students) for e in reported.tally.exercises)


def test_mistakes_are_the_planted_students(reported):
    """Is each mistake made by exactly the students it was planted in, as a share of those who attempted?"""
    found = {(m.exercise, m.mistake): set(m.students) for m in reported.tally.mistakes}
    assert found == reported.planted.mistakes
    status = reported.planted.status
    for m in reported.tally.mistakes:
        attempted = status[(m.exercise, "passed")] + status[(m.exercise, "failed")]
        assert (m.attempted, m.share) == (attempted, pytest.approx(m.count / attempted))


def test_scores_and_ranking(reported):
    """Are the scores the planted points, and the exercises ranked by students who lost points?"""
    assert {s: score for s, score, _ in reported.tally.scores} == reported.planted.scores
    status = reported.planted.status
    lost = [status[(e.name, "failed")] + status[(e.name, "blank")] for e in reported.tally.ranked()]
    assert lost == sorted(lost, reverse=True) and lost == [e.lost for e in reported.tally.ranked()]
    softmax = next(e for e in reported.tally.exercises if e.name == "test_softmax")
    planted = {m: len(who) for (ex, m), who in reported.planted.mistakes.items() if ex == "test_softmax"}
    assert softmax.top_mistake() == max(planted, key=lambda m: planted[m])  # 4 with no sum, 3 with no shift


def test_csv_counts_match_the_page_numbers(reported):
    """Do mistakes.csv (with ids) and class/mistakes.csv (without) hold the same counts as the tally?"""
    folder = reported.root / "reports" / "02-self-attention"
    with_ids = list(csv.DictReader((folder / "mistakes.csv").open()))
    without = list(csv.DictReader((folder / "class" / "mistakes.csv").open()))
    assert [(r["exercise"], r["mistake"], int(r["students"])) for r in with_ids] == \
        [(m.exercise, m.mistake, m.count) for m in reported.tally.mistakes]
    assert [{k: v for k, v in r.items() if k != "ids"} for r in with_ids] == without
    assert {r["ids"] for r in with_ids} == {" ".join(m.students) for m in reported.tally.mistakes}


def test_a_failure_without_a_mistake_is_unnamed():
    """Is a failed row that names no mistake counted as unnamed, and a blank one not as attempted?"""
    rows = (Row("test_a", ("a",), "failed", 0.0, 1.0, None), Row("test_b", ("b",), "blank", 0.0, 1.0, None))
    t = tally("lab", [Sheet("x", None, "lab", rows), Sheet("y", None, "lab", rows[1:])])
    assert [(m.exercise, m.mistake, m.students, m.attempted) for m in t.mistakes] == [("test_a", "unnamed", ("x",), 1)]
    b = next(e for e in t.exercises if e.name == "test_b")
    assert (b.attempted, b.blank, b.lost) == (0, 2, 2)


def test_the_ids_are_the_checks_own(reported):
    """Is every mistake of the synthetic class an id the checks raised (in the registry), none a stand-in?"""
    ids = {m.mistake for m in reported.tally.mistakes}
    assert ids <= set(MISTAKES), ids - set(MISTAKES)
    assert len(reported.planted.mistakes) == 13  # the 13 wrong variants of PLAN, each named apart on its exercise


def test_the_example_class_uses_registered_ids():
    """Are the mistakes of the guide's and the benchmark's example class ids that the checks raise?"""
    used = {o for *_, odds in example.PLAN for o in odds} - {"passed", "blank", "unnamed"}
    assert used <= set(MISTAKES), used - set(MISTAKES)
