"""Copies hidden from the class report: inside a larger answer, in a cell of the student's own under
the stub, and a copier of two classmates who resemble each other in nothing; each beside its control."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder import notebook_cells
from autograder.grading.grader.report import alike as similar
from autograder.grading.grader.report import write_report
from tests.grading.helpers import LAB, REPO
from tests.grading.scenarios import similar_answers as planted


def _hand_in(root: Path, student: str, nb: nbformat.NotebookNode) -> None:
    """``nb`` as grading leaves it: the autograded notebook, and its verdicts.json (answer cells recorded)."""
    folder = root / "autograded" / student / LAB
    folder.mkdir(parents=True)
    nbformat.write(nb, str(folder / f"{LAB}.ipynb"))
    answers = {notebook_cells.grade_id(c): c.source for c in nb.cells if notebook_cells.is_answer(c)}
    exercises = [("test_relu", "relu", 2.0), ("test_mean_squared_error", "mean_squared_error", 3.0)]
    verdicts = {
        "schema": "autograder.verdicts/1",
        "student": student,
        "original_id": None,
        "lab": LAB,
        "exercises": [
            {
                "exercise": e,
                "answer_cells": [c],
                "status": "passed",
                "points": p,
                "max_points": p,
                "mistake": None,
                "message": "",
            }
            for e, c, p in exercises
        ],
        "answers": answers,
    }
    (folder / "verdicts.json").write_text(json.dumps(verdicts), encoding="utf-8")


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """The class of ``similar_answers``, graded as far as the report reads it, and its report."""
    root = tmp_path_factory.mktemp("hidden-copies")
    for folder in ("notebooks", "solutions"):
        shutil.copytree(REPO / folder / LAB, root / folder / LAB)
    for student, nb in planted.similar_answers().items():
        _hand_in(root, student, nb)
    write_report(root, LAB)
    return root


def _pairs(root: Path) -> list[similar.Pair]:
    return write_report(root, LAB, root / "again")[1]


def test_the_report_lists_exactly_the_planted_pairs(course):
    """Are the pairs the report lists, per exercise, exactly those planted (no honest student, no
    two students who only share a copier)?"""
    assert {(p.first, p.second, p.exercise) for p in _pairs(course)} == planted.ALIKE


def test_an_answer_holding_another_is_flagged_whatever_it_adds(course):
    """Is a renamed copy of relu with a helper of its own flagged beside the plain renamed copy (the
    control), though the two sets' Jaccard overlap is under the threshold?"""
    found = {(p.first, p.second): p for p in _pairs(course) if p.exercise == "test_relu"}
    plain, helped = found[("alike_a", "alike_renamed")], found[("alike_a", "alike_helper")]
    assert plain.similarity >= similar.THRESHOLD  # flagged before round 4 too
    assert helped.similarity < similar.THRESHOLD <= helped.contained and helped.inside == ("alike_a", "alike_helper")


def test_containment_is_what_flags_a_pair():
    """Given an answer and the same answer renamed with as much code again of its own, is the pair
    flagged, and an honest answer of the same length not?"""
    answer = "\n".join(f"y{i} = x.sum({i}) * w.mean({i}) + x.max({i}).values" for i in range(4))
    extra = "\n".join(f"z{i} = q.var({i}) - k.std({i}) / v.min({i}).indices" for i in range(4))
    honest = "\n".join(f"u{i} = x.prod({i}) ** w.median({i}) - x.cumsum({i})" for i in range(4))
    answers = {"a": answer, "b": answer.replace("y", "t") + "\n" + extra, "c": honest}
    [pair] = similar.similar_pairs("e", answers)
    assert (pair.first, pair.second, pair.inside) == ("a", "b", ("a", "b"))
    assert pair.contained == 1.0 and pair.similarity < similar.THRESHOLD


def test_a_copy_in_a_cell_of_the_students_own_is_compared(course):
    """Is mean_squared_error copied into an added cell under the untouched stub paired with its source,
    as the same copy in the answer cell is (alike_both's, the control)?"""
    mse = {(p.first, p.second) for p in _pairs(course) if p.exercise == "test_mean_squared_error"}
    assert {("alike_added", "alike_b"), ("alike_b", "alike_both")} <= mse


def test_a_copier_of_two_classmates_is_paired_with_each_not_them_together(course):
    """Does the report show alike_both beside alike_a on relu and beside alike_b on mean_squared_error, and never
    alike_a beside alike_b, nor alike_honest beside anyone, in the page and in similar.csv?"""
    folder = course / "reports" / LAB
    page = (folder / "index.html").read_text(encoding="utf-8")
    listed = [row.split("</span>")[0].split() for row in page.split('<span class="ids">')[1:]]  # who is on one row
    assert ["alike_a", "alike_both"] in listed and ["alike_b", "alike_both"] in listed
    assert all(not {"alike_a", "alike_b"} <= set(row) for row in listed) and "alike_honest" not in page
    rows = list(csv.DictReader((folder / "similar.csv").open(encoding="utf-8")))
    assert {(r["first"], r["second"], r["exercise"]) for r in rows} == planted.ALIKE
    matches = {m.students: m.exercises for m in similar.matches(_pairs(course))}
    assert sorted(matches) == sorted(tuple(row) for row in listed)
    assert matches[("alike_a", "alike_both")] == ("test_relu",)
    assert matches[("alike_b", "alike_both")] == ("test_mean_squared_error",)


def test_an_unreadable_notebook_is_a_note_and_its_recorded_answers_stand(course, tmp_path):
    """Does an autograded notebook that is not JSON give a note naming it, while the student keeps their
    place in the report with the answer cells verdicts.json recorded (a missing one: those, silently)?"""
    root = tmp_path / "course"
    shutil.copytree(course, root, ignore=shutil.ignore_patterns("reports", "again"))
    (root / "autograded" / "alike_renamed" / LAB / f"{LAB}.ipynb").write_text("{not json", encoding="utf-8")
    (root / "autograded" / "alike_a" / LAB / f"{LAB}.ipynb").unlink()
    tally, pairs, notes = write_report(root, LAB)
    [note] = notes
    assert f"alike_renamed/{LAB}/{LAB}.ipynb: not readable" in note and "recorded answer cells" in note
    assert len(tally.scores) == len(planted.similar_answers())
    assert {(p.first, p.second) for p in pairs if p.exercise == "test_relu"} >= {
        ("alike_a", "alike_renamed"),
        ("alike_a", "alike_helper"),
    }


def test_a_hostile_notebook_costs_its_author_nothing_and_nobody_else_anything(course, tmp_path):
    """Does a notebook with nesting no parser survives, a cell over the size parsed, and metadata that is
    not a dict leave the report whole, the other pairs as they were?"""
    root = tmp_path / "course"
    shutil.copytree(course, root, ignore=shutil.ignore_patterns("reports", "again"))
    nb = planted.similar_answers()["alike_honest"]
    nb.cells.append(nbformat.v4.new_code_cell("x = " + "(" * 100_000 + ")" * 100_000))
    nb.cells.append(nbformat.v4.new_code_cell("def relu(x):\n    return x\n" + "# pad\n" * 200_000))
    nb.cells[-1].metadata["nbgrader"] = "not a dict"
    nbformat.write(nb, str(root / "autograded" / "alike_honest" / LAB / f"{LAB}.ipynb"))
    tally, pairs, notes = write_report(root, LAB)
    assert notes == [] and len(tally.scores) == len(planted.similar_answers())
    assert {(p.first, p.second, p.exercise) for p in pairs} == planted.ALIKE
