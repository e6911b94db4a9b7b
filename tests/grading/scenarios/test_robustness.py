"""End to end: the real nbgrader commands on a temporary course, one student per way a
submission can go wrong. Each gets the right score and a clear line in the summary, and
nothing is lost for anyone else."""

from __future__ import annotations

import csv
from pathlib import Path

import nbformat

from autograder.grading.grader import grading, pipeline
from autograder.grading.protocol.confinement import Limits
from tests.grading.helpers import LAB, answered, index_of, released, submit, with_cell

HARD_CODED_RELU = """
import torch
from autograder.checks.kit.core import random_tensor

_recorded = {}
for _i, (_shape, _dtype) in enumerate([((4,), torch.float32), ((2, 3, 5), torch.float32),
                                       ((3, 7), torch.float64), ((1,), torch.float32)]):
    _x = random_tensor(_shape, _i, _dtype)
    _x.view(-1)[0] = 0.0
    _recorded[(_shape, float(_x.sum()))] = torch.where(_x > 0, _x, torch.zeros((), dtype=_dtype))


def relu(x):
    return _recorded.get((tuple(x.shape), float(x.sum())), x.clone())
"""

PATCH_CHECKS = """
import autograder.checks
import autograder.checks.lab00_warmup.warmup
autograder.checks.check_relu = lambda *args, **kwargs: None
autograder.checks.lab00_warmup.warmup.check_relu = lambda *args, **kwargs: None
check_relu = lambda *args, **kwargs: None
"""


def _cases() -> dict[str, tuple[object, float, str | None]]:
    """student: (submission, expected score, a phrase the summary must say about them)."""
    edited = answered("mean_squared_error")
    edited.cells[index_of(edited, "test_relu")].source = "print('all good')"
    deleted = answered()
    del deleted.cells[index_of(deleted, "test_mean_squared_error")]
    hard_coded = answered("mean_squared_error")
    hard_coded.cells[index_of(hard_coded, "relu")].source = HARD_CODED_RELU
    patched = answered("mean_squared_error")
    patched.cells[index_of(patched, "relu")].source = "def relu(x):\n    return x"
    patched = with_cell(patched, "relu", PATCH_CHECKS)
    return {
        "full": (answered(), 5, None),
        "untouched": (released(), 0, None),
        "partial": (answered("relu"), 2, None),
        "edited_test": (edited, 3, "test cell test_relu was edited"),
        "deleted_test": (deleted, 5, "test cell test_mean_squared_error was deleted"),
        "infinite_loop": (with_cell(answered(), "relu", "while True:\n    pass"), 5, "ran past the time limit"),
        "os_exit": (with_cell(answered(), "relu", "import os\nos._exit(3)"), 0, "the kernel died"),
        "segfault": (with_cell(answered(), "relu", "import ctypes\nctypes.string_at(0)"), 0, "the kernel died"),
        "memory_hog": (
            with_cell(answered(), None, "blocks = []\nwhile True:\n    blocks.append(bytearray(2**27))"),
            5,
            "ran out of memory",
        ),
        "big_output": (with_cell(answered(), "relu", "for i in range(100_000):\n    print('spam ' * 20)"), 5, None),
        "not_json": (b'{"cells": [ this is not json', 0, "not a valid notebook"),
        "renamed": (answered(), 5, "notebook renamed"),
        "patches_checks": (patched, 3, "patches a check function"),
        "hard_coded": (hard_coded, 3, "hidden tests failed"),
    }


def test_every_kind_of_submission_gets_its_score(course: Path, tmp_path: Path, capsys) -> None:
    """Does every broken, hostile or odd submission get the right score and a clear line,
    with every other student still graded?"""
    cases = _cases()
    inbox = tmp_path / "inbox"
    for student, (nb, _, _) in cases.items():
        submit(inbox, student, nb, name="my lab (final).ipynb" if student == "renamed" else f"{LAB}.ipynb")
    outcomes = pipeline.grade(
        course, inbox, grading.Options(jobs=2, limits=Limits(memory_mb=2048), job_timeout=240, progress=False)
    )
    by_student = {o.student: o for o in outcomes}
    text = grading.summary(outcomes)
    print(text)
    assert sorted(by_student) == sorted(cases)
    for student, (_, score, phrase) in cases.items():
        outcome = by_student[student]
        assert (outcome.score, outcome.max_score) == (score, 5), f"{student}: {outcome}"
        if phrase:
            assert any(line.startswith(f"  {student} / {LAB}:") and phrase in line for line in text.splitlines()), (
                f"{student}: no line saying {phrase!r} in\n{text}"
            )
    rows = list(csv.DictReader((course / "grades.csv").open()))
    assert {r["student_id"]: float(r["score"]) for r in rows} == {s: float(c[1]) for s, c in cases.items()}
    # feedback for every student whose notebook ran; the printed spam was cut down
    assert (course / "feedback" / "full" / LAB / f"{LAB}.html").is_file()
    spam = nbformat.read(str(course / "autograded" / "big_output" / LAB / f"{LAB}.ipynb"), as_version=4)
    assert sum(len(o.get("text", "")) for c in spam.cells for o in c.get("outputs", [])) < 100_000
