"""Does the report count exactly what was planted in the synthetic class (report_class)?"""

from __future__ import annotations

import csv
from collections import Counter

import pytest

from autograder.checks.kit.mistakes import MISTAKES
from autograder.grading.grader.report.sheets import Row, Sheet
from autograder.grading.grader.report.tally import tally
from tests.grading.grader.report import report_class


def test_statuses_are_the_planted_numbers(reported):
    """Are passed / failed / blank per exercise the numbers planted, and do they cover every student?"""
    found = Counter(
        {(e.name, s): getattr(e, s) for e in reported.tally.exercises for s in ("passed", "failed", "blank")}
    )
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
    """Are the scores the planted points, and the exercises ranked by the points lost on them (none re-run
    on its own in this class, so the points lost as written)?"""
    assert {s: score for s, score, _ in reported.tally.scores} == reported.planted.scores
    status = reported.planted.status
    points = {e.name: e.max_points for e in reported.tally.exercises}
    lost = [(status[(e.name, "failed")] + status[(e.name, "blank")]) * points[e.name] for e in reported.tally.ranked()]
    assert lost == sorted(lost, reverse=True) and lost == [e.points_lost for e in reported.tally.ranked()]
    assert [e.lost for e in reported.tally.ranked()] == [
        status[(e.name, "failed")] + status[(e.name, "blank")] for e in reported.tally.ranked()
    ]
    softmax = next(e for e in reported.tally.exercises if e.name == "test_softmax")
    planted = {m: len(who) for (ex, m), who in reported.planted.mistakes.items() if ex == "test_softmax"}
    assert softmax.top_mistake() == max(planted, key=lambda m: planted[m])  # 4 with no sum, 3 with no shift


def test_exercises_are_ranked_by_points_lost_on_their_own():
    """Does an exercise that loses points only through an earlier one (right on its own: points_alone at
    its maximum) rank below that earlier one, though more students lost points on it as written?"""

    def sheet(student, softmax_points, attention_points, alone):
        return Sheet(
            student,
            None,
            "lab",
            (
                Row(
                    "test_softmax",
                    ("softmax",),
                    "passed" if softmax_points else "failed",
                    softmax_points,
                    2.0,
                    None if softmax_points else "softmax/wrong-axis",
                ),
                Row(
                    "test_attention",
                    ("attention",),
                    "passed" if attention_points else "failed",
                    attention_points,
                    4.0,
                    None if attention_points else "unnamed",
                    points_alone=alone,
                ),
            ),
        )

    sheets = [
        sheet("a", 0.0, 0.0, 4.0),
        sheet("b", 0.0, 0.0, 4.0),
        sheet("c", 0.0, 4.0, None),
        sheet("d", 2.0, 0.0, None),
    ]  # a and b: attention right given a right softmax; d: its own mistake
    t = tally("lab", sheets)
    assert [(e.name, e.points_lost, e.lost) for e in t.ranked()] == [
        ("test_softmax", 6.0, 3),
        ("test_attention", 4.0, 3),
    ]
    sheets[0] = sheet("a", 0.0, 0.0, None)  # not re-run: as written
    assert [(e.name, e.points_lost) for e in tally("lab", sheets).ranked()] == [
        ("test_attention", 8.0),
        ("test_softmax", 6.0),
    ]


def test_csv_counts_match_the_page_numbers(reported):
    """Do mistakes.csv (with ids) and class/mistakes.csv (without) hold the same counts as the tally?"""
    folder = reported.root / "reports" / "02-self-attention"
    with_ids = list(csv.DictReader((folder / "mistakes.csv").open()))
    without = list(csv.DictReader((folder / "class" / "mistakes.csv").open()))
    assert [(r["exercise"], r["mistake"], int(r["students"])) for r in with_ids] == [
        (m.exercise, m.mistake, m.count) for m in reported.tally.mistakes
    ]
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
    used = {o for *_, odds in report_class.EXAMPLE_PLAN for o in odds} - {"passed", "blank", "unnamed"}
    assert used <= set(MISTAKES), used - set(MISTAKES)
