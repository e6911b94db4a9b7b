"""An example class of any size, as recorded verdicts: for the instructor guide's figures and
the report's benchmark (``benchmarks/bench_report.py``), where no real class may be shown.

Lab 02-self-attention; each student's outcome on each exercise is drawn, with a fixed seed,
from ``PLAN`` (passed, blank, or one of the checks' mistake ids), and each answer is a body of
its own: three statements drawn from a pool, so that no two students share an answer by chance;
one student copied a classmate's answer and renamed its variables (``COPIED``).
The class's release (``notebooks/LAB/LAB.ipynb``: one answer cell and one test cell per
exercise) is written beside it, since the report reads which cells make up an exercise there.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import nbformat

from autograder import notebook_cells
from autograder.grading.layout import CourseLayout

LAB = "02-self-attention"
# exercise, answer cell, points, outcome -> probability (a mistake id, "passed" or "blank")
PLAN: list[tuple[str, str, float, dict[str, float]]] = [
    (
        "test_softmax",
        "softmax",
        2.0,
        {
            "passed": 0.6,
            "blank": 0.04,
            "softmax/nan-rows": 0.16,
            "softmax/no-max-shift": 0.1,
            "softmax/wrong-axis": 0.06,
            "unnamed": 0.04,
        },
    ),
    (
        "test_single_query_attention",
        "single_query_attention",
        2.0,
        {"passed": 0.75, "blank": 0.05, "attention/no-scale": 0.12, "single-query-attention/returns-weights": 0.08},
    ),
    (
        "test_scaled_dot_product_attention",
        "scaled_dot_product_attention",
        4.0,
        {
            "passed": 0.38,
            "blank": 0.08,
            "attention/mask-after-softmax": 0.18,
            "attention/nan-rows": 0.14,
            "attention/mask-inverted": 0.1,
            "attention/softmax-over-queries": 0.07,
            "unnamed": 0.05,
        },
    ),
    (
        "test_self_attention",
        "self_attention",
        2.0,
        {
            "passed": 0.62,
            "blank": 0.2,
            "self-attention/queries-keys-swapped": 0.1,
            "self-attention/values-not-projected": 0.08,
        },
    ),
]
# (student, answer cell) -> the classmate's whose answer it copies, renamed: one pair of similar answers
COPIED = {("s0031", "scaled_dot_product_attention"): ("s0007", "scaled_dot_product_attention")}
_CALLS = ["sum", "amax", "exp", "transpose", "masked_fill", "softmax", "matmul", "sqrt", "clamp_min", "movedim"]


def _answer(rng: random.Random, cell: str) -> str:
    lines = [
        f"    v{i} = {rng.choice(['x', 'q', 'k'])}.{rng.choice(_CALLS)}({rng.randint(-2, 9)}) "
        f"{rng.choice(['*', '/', '+', '@'])} {rng.choice(_CALLS)}({rng.randint(0, 99)}, dim={rng.randint(-2, 2)})"
        for i in range(3)
    ]
    return f"def {cell}(x, *args):\n" + "\n".join(lines) + "\n    return v0 + v1 * v2\n"


def _stub(cell: str) -> str:
    return f"def {cell}(x, *args):\n    raise NotImplementedError()"


def write_release(root: Path) -> Path:
    """Write the example lab's release notebook under ``root/notebooks``: its path."""
    nb = nbformat.v4.new_notebook()
    for exercise, cell, points, _ in PLAN:
        nb.cells.append(
            nbformat.v4.new_code_cell(_stub(cell), metadata=notebook_cells.metadata(cell, solution=True, locked=False))
        )
        nb.cells.append(
            nbformat.v4.new_code_cell(
                f"check_{cell}({cell})", metadata=notebook_cells.metadata(exercise, grade=True, points=points)
            )
        )
    path = CourseLayout(root).release(LAB)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(path))
    return path


def example_class(root: Path, students: int = 60, seed: int = 0) -> list[str]:
    """Write ``root/autograded/sNNNN/LAB/verdicts.json`` for ``students`` students; their ids."""
    rng = random.Random(seed)
    write_release(root)
    ids = [f"s{n:04d}" for n in range(students)]
    drawn: dict[tuple[str, str], tuple[str, str]] = {}
    for student in ids:
        exercises, answers = [], {}
        for exercise, cell, points, odds in PLAN:
            outcome = rng.choices(list(odds), weights=list(odds.values()))[0]
            answer = _answer(rng, cell)
            copied = COPIED.get((student, cell))
            if copied in drawn:  # the same answer as a classmate's, its names changed: the same outcome
                outcome, answer = drawn[copied][0], re.sub(r"\bv(\d)", r"t\1", drawn[copied][1])
            drawn[(student, cell)] = (outcome, answer)
            status = outcome if outcome in ("passed", "blank") else "failed"
            exercises.append(
                {
                    "exercise": exercise,
                    "answer_cells": [cell],
                    "status": status,
                    "points": points if status == "passed" else 0.0,
                    "max_points": points,
                    "mistake": outcome if status == "failed" else None,
                    "message": "",
                }
            )
            answers[cell] = _stub(cell) if status == "blank" else answer
        folder = CourseLayout(root).autograded / student / LAB
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "verdicts.json").write_text(
            json.dumps(
                {
                    "schema": "autograder.verdicts/1",
                    "student": student,
                    "original_id": None,
                    "lab": LAB,
                    "exercises": exercises,
                    "answers": answers,
                }
            ),
            encoding="utf-8",
        )
    return ids
