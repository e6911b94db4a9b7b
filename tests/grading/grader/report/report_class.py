"""A synthetic class for the report's tests, built from the checks' own right and wrong answers.

Lab 02-self-attention: each exercise's answers are the stub of the release with its body
replaced by a variant from ``tests/checks/lab02_self_attention/test_self_attention.py`` (or left as released:
blank), each variant planted in a known number of students. Every answer cell is run through
its check in this process, so that a verdict's status and mistake id are the check's own
(``CheckFailed.mistake_id``; the planted name stands in where a check has none yet). Two
students share one answer: the second is the first with its variables renamed, its lines
reformatted and a comment added. Written as verdicts.json files: no grading run.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import json
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import reference
from autograder.checks import CheckFailed
from autograder.checks.lab02_self_attention import self_attention as checks

REPO = Path(__file__).resolve().parents[4]
LAB = "02-self-attention"
VARIANTS = REPO / "tests" / "checks" / "lab02_self_attention" / "test_self_attention.py"

# The shared answer: softmax_by_moving_axis, renamed, reformatted, commented.
SHARED = Path(__file__).parent / "shared_softmax.py.txt"
STUB_BODY = "    raise NotImplementedError()"

# exercise -> (answer cell, check, points, [(variant, students)]); "reference", "blank", "shared" are special
PLAN: dict[str, tuple[str, object, float, list[tuple[str, int]]]] = {
    "test_softmax": (
        "softmax",
        checks.check_softmax,
        2.0,
        [
            ("reference", 1),
            ("softmax_logsumexp", 1),
            ("softmax_no_shift", 3),
            ("softmax_no_sum", 4),
            ("shared", 2),
            ("blank", 3),
        ],
    ),
    "test_single_query_attention": (
        "single_query_attention",
        checks.check_single_query_attention,
        2.0,
        [
            ("reference", 2),
            ("single_einsum", 1),
            ("single_no_scale", 3),
            ("single_over_dh", 1),
            ("single_returns_weights", 2),
            ("blank", 5),
        ],
    ),
    "test_scaled_dot_product_attention": (
        "scaled_dot_product_attention",
        checks.check_scaled_dot_product_attention,
        4.0,
        [
            ("reference", 1),
            ("sdpa_einsum", 1),
            ("sdpa_additive_mask_float64", 1),
            ("sdpa_no_scale", 2),
            ("sdpa_over_dh", 1),
            ("sdpa_over_queries", 3),
            ("sdpa_mask_after", 1),
            ("sdpa_inverted_mask", 2),
            ("sdpa_swapped", 1),
            ("blank", 1),
        ],
    ),
    "test_self_attention": (
        "self_attention",
        checks.check_self_attention,
        2.0,
        [
            ("reference", 1),
            ("self_attention_own", 1),
            ("self_attention_qk_swapped", 2),
            ("self_attention_unprojected_values", 3),
            ("blank", 7),
        ],
    ),
}
STUDENTS = 14  # every plan above plants exactly this many answers


@dataclass
class Planted:
    """What the class holds, to compare the report with."""

    students: list[str]
    status: Counter[tuple[str, str]] = field(default_factory=Counter)  # (exercise, status) -> students
    mistakes: dict[tuple[str, str], set[str]] = field(default_factory=dict)  # (exercise, id) -> students
    sources: dict[tuple[str, str], str] = field(default_factory=dict)  # (exercise, student) -> variant
    shared: list[str] = field(default_factory=list)  # the two students who share an answer
    scores: dict[str, float] = field(default_factory=dict)


def _variants_module():
    """The checks' test module, loaded under a name of its own (its helpers are the answers' globals)."""
    spec = importlib.util.spec_from_file_location("report_class_ch02_variants", VARIANTS)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def body(source: str) -> str:
    """The body of the first function in ``source``, indented by four spaces."""
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef))
    lines = source.splitlines()[node.body[0].lineno - 1 : node.end_lineno]
    return textwrap.indent(textwrap.dedent("\n".join(lines)), "    ")


def stubs() -> dict[str, str]:
    """The released answer cells of the lab: grade id -> source."""
    nb = nbformat.read(REPO / "notebooks" / LAB / f"{LAB}.ipynb", as_version=4)
    return {
        c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("solution")
    }


def answer(stub: str, cell: str, variant: str, module, copy: bool = False) -> str:
    """The answer cell a student with ``variant`` hands in."""
    if variant == "blank":
        return stub
    if variant == "reference":
        fn = getattr(reference, cell)
    elif variant == "shared":
        fn = module.softmax_by_moving_axis
    else:
        fn = getattr(module, variant)
    new = SHARED.read_text() if copy else body(inspect.getsource(fn))
    return stub.replace(STUB_BODY, new.rstrip("\n"))


def run_check(check, source: str, cell: str, module, planted: str) -> tuple[str, str | None, str]:
    """(status, mistake id, message) of ``check`` on the answer cell ``source``, run here."""
    namespace = dict(vars(module))
    exec(compile(source, f"<answer {cell}>", "exec"), namespace)  # noqa: S102 - the checks' own test answers
    try:
        check(namespace[cell], seed=0)
    except CheckFailed as err:
        return "failed", getattr(err, "mistake_id", None) or planted, str(err)
    return "passed", None, ""


def build(root: Path) -> Planted:
    """Write ``root/autograded/sNN/LAB/verdicts.json`` for the class of PLAN; what was planted."""
    module, released = _variants_module(), stubs()
    students = [f"s{n:02d}" for n in range(STUDENTS)]
    planted = Planted(students)
    sheets: dict[str, dict] = {
        s: {
            "schema": "autograder.verdicts/1",
            "student": s,
            "original_id": None,
            "lab": LAB,
            "exercises": [],
            "answers": {},
        }
        for s in students
    }
    results: dict[tuple[str, str], tuple[str, str | None, str]] = {}
    for offset, (exercise, (cell, check, points, plan)) in enumerate(PLAN.items()):
        assigned = [v for v, n in plan for _ in range(n)]
        assert len(assigned) == STUDENTS, (exercise, len(assigned))
        assigned = assigned[offset:] + assigned[:offset]  # a student's variants differ across exercises
        for student, variant in zip(students, assigned, strict=True):
            copy = variant == "shared" and len(planted.shared) == 1  # the second of the two is the copy
            source = answer(released[cell], cell, variant, module, copy=copy)
            if variant == "shared":
                planted.shared.append(student)
            if variant == "blank":
                status, mistake, message = "blank", None, "NotImplementedError"
            else:
                key = (variant, str(copy))
                if key not in results:
                    results[key] = run_check(check, source, cell, module, f"planted/{variant}")
                status, mistake, message = results[key]
            got = points if status == "passed" else 0.0
            sheets[student]["exercises"].append(
                {
                    "exercise": exercise,
                    "answer_cells": [cell],
                    "status": status,
                    "points": got,
                    "max_points": points,
                    "mistake": mistake,
                    "message": message,
                }
            )
            sheets[student]["answers"][cell] = source
            planted.status[(exercise, status)] += 1
            planted.sources[(exercise, student)] = variant
            planted.scores[student] = planted.scores.get(student, 0.0) + got
            if mistake:
                planted.mistakes.setdefault((exercise, mistake), set()).add(student)
    for student, sheet in sheets.items():
        folder = root / "autograded" / student / LAB
        folder.mkdir(parents=True)
        (folder / "verdicts.json").write_text(json.dumps(sheet, indent=1))
    return planted
