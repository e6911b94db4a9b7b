"""Attacks on lab 10's grade (today's block), graded for real (nbgrader, the sandbox, the
independent check) on a temporary course that holds lab 10: answers that hand back the
reference's result (called by name or captured in a default argument) or PyTorch's own op for the
exercise, and a forged pass in the kernel. Each scores nothing for the exercises it attacks; an
honest partial answer scores exactly its part. The attacks are written in hostile_class.py's
block for lab 10; the generic ones (sandbox, files, processes, network) are test_hostile.py's."""

from __future__ import annotations

import shutil

import nbformat
import pytest

from autograder.grading import answers
from autograder.grading.grader import grading, pipeline
from autograder.grading.grader.run import bwrap as sandbox
from autograder.grading.protocol.confinement import Limits
from tests.grading.helpers import REPO, released, with_answers, with_cell
from tests.grading.scenarios.hostile_class import INPUT_TRANSFORMER, LAB10, LAB10_POINTS, LAB10_REFERENCE, LAB10_TORCH

TOTAL = sum(LAB10_POINTS.values())


CASES = {  # student: (notebook maker, expected score, a phrase its summary line must hold or None)
    "reference": (lambda: with_answers(LAB10, LAB10_REFERENCE), 0, None),
    # apply_rope is honest, so the SDPA answer (which uses it) fails only for the op it calls
    "pytorch-ops": (
        lambda: with_answers(LAB10, LAB10_TORCH, answers.answered(REPO, LAB10, ["apply_rope"])),
        LAB10_POINTS["apply_rope"],
        None,
    ),
    "kernel-forge": (
        lambda: with_cell(released(LAB10), "imports", INPUT_TRANSFORMER),
        0,
        "failed the independent check",
    ),
    "honest-part": (
        lambda: answers.answered(REPO, LAB10, ["apply_rope", "rms_norm"]),
        LAB10_POINTS["apply_rope"] + LAB10_POINTS["rms_norm"],
        None,
    ),
    "honest-all": (lambda: answers.answered(REPO, LAB10), TOTAL, None),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> tuple[dict, str]:
    """Every student of CASES graded once through the pipeline: outcomes by student, and the summary."""
    if sandbox.probe() is not None:
        pytest.skip(f"bubblewrap cannot run here: {sandbox.probe()}")
    root = tmp_path_factory.mktemp("lab10")
    course = root / "course"
    course.mkdir()
    shutil.copy2(REPO / "nbgrader_config.py", course)
    for folder in ("solutions", "notebooks"):
        shutil.copytree(REPO / folder / LAB10, course / folder / LAB10)
    inbox = root / "inbox"
    for student, (make, _, _) in CASES.items():
        (inbox / student / LAB10).mkdir(parents=True)
        nbformat.write(make(), str(inbox / student / LAB10 / f"{LAB10}.ipynb"))
    outcomes = pipeline.grade(
        course, inbox, grading.Options(jobs=2, limits=Limits(memory_mb=2048), job_timeout=600, progress=False)
    )
    return {o.student: o for o in outcomes}, grading.summary(outcomes)


@pytest.mark.parametrize("student", list(CASES))
def test_lab10_attack_scores_only_its_honest_part(graded, student: str) -> None:
    """Does an answer that returns the reference's result or PyTorch's op for the exercise, or forges a
    pass in the kernel, score nothing for it, and an honest (partial) answer exactly its points?"""
    by_student, text = graded
    _, score, phrase = CASES[student]
    outcome = by_student[student]
    assert (outcome.score, outcome.max_score) == (score, TOTAL), f"{student}: {text}"
    if phrase:
        assert any(line.startswith(f"  {student} / {LAB10}:") and phrase in line for line in text.splitlines()), (
            f"{student}: no line saying {phrase!r} in\n{text}"
        )
