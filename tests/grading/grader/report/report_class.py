"""The report's two synthetic classes of lab 02-self-attention, written as verdicts.json files
(no grading run), each as grading records a student's lab (``verdicts_json.LabVerdicts``).

``build``, for the report's tests: each exercise's answers are the stub of the release with its
body replaced by a variant from ``tests/checks/lab02_self_attention/test_self_attention.py`` (or left as
released: blank), each variant planted in a known number of students. Every answer cell is run
through its check in this process, so that a verdict's status and mistake id are the check's own
(``CheckFailed.mistake_id``; the planted name stands in where a check has none yet). Two
students share one answer: the second is the first with its variables renamed, its lines
reformatted and a comment added.

``example_class``, an example class of any size for the instructor guide's figures and the
report's benchmark (``benchmarks/bench_report.py``), where no real class may be shown: each
student's outcome on each exercise is drawn, with a fixed seed, from ``EXAMPLE_PLAN`` (passed,
blank, or one of the checks' mistake ids), and each answer is a body of its own: three
statements drawn from a pool, so that no two students share an answer by chance; one student
copied a classmate's answer and renamed its variables (``COPIED``). Its release
(``notebooks/LAB/LAB.ipynb``: one answer cell and one test cell per exercise) is written beside
it, since the report reads which cells make up an exercise there.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import random
import re
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder import notebook_cells, reference
from autograder.checks import CheckFailed
from autograder.checks.lab02_self_attention import self_attention as checks
from autograder.grading.grader.verdicts_json import ExerciseVerdict, LabVerdicts
from autograder.grading.layout import CourseLayout

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
    exec(compile(source, f"<answer {cell}>", "exec"), namespace)  # the checks' own test answers
    try:
        check(namespace[cell], seed=0)
    except CheckFailed as err:
        return "failed", getattr(err, "mistake_id", None) or planted, str(err)
    return "passed", None, ""


def write_verdicts(root: Path, student: str, exercises: list[ExerciseVerdict], answers: dict[str, str]) -> None:
    """Write ``root/autograded/STUDENT/LAB/verdicts.json``, as grading records a student's lab."""
    folder = CourseLayout(root).autograded / student / LAB
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "verdicts.json").write_text(
        LabVerdicts(student, None, LAB, exercises, answers).to_json(), encoding="utf-8"
    )


def verdict(
    exercise: str, cells: list[str], status: str, points: float, mistake: str | None, message: str = ""
) -> ExerciseVerdict:
    """One exercise's verdict (``cells``: its answer cells): the points when passed, else none."""
    got = points if status == "passed" else 0.0
    return ExerciseVerdict(exercise, cells, status, got, points, mistake, message)


def build(root: Path) -> Planted:
    """Write ``root/autograded/sNN/LAB/verdicts.json`` for the class of PLAN; what was planted."""
    module, released = _variants_module(), stubs()
    students = [f"s{n:02d}" for n in range(STUDENTS)]
    planted = Planted(students)
    verdicts: dict[str, list[ExerciseVerdict]] = {s: [] for s in students}
    answers: dict[str, dict[str, str]] = {s: {} for s in students}
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
            verdicts[student].append(verdict(exercise, [cell], status, points, mistake, message))
            answers[student][cell] = source
            planted.status[(exercise, status)] += 1
            planted.sources[(exercise, student)] = variant
            planted.scores[student] = planted.scores.get(student, 0.0) + verdicts[student][-1].points
            if mistake:
                planted.mistakes.setdefault((exercise, mistake), set()).add(student)
    for student in students:
        write_verdicts(root, student, verdicts[student], answers[student])
    return planted


# --- the example class, of any size ---------------------------------------------------------------
# exercise, answer cell, points, outcome -> probability (a mistake id, "passed" or "blank")
EXAMPLE_PLAN: list[tuple[str, str, float, dict[str, float]]] = [
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


def _drawn_answer(rng: random.Random, cell: str) -> str:
    lines = [
        f"    v{i} = {rng.choice(['x', 'q', 'k'])}.{rng.choice(_CALLS)}({rng.randint(-2, 9)}) "
        f"{rng.choice(['*', '/', '+', '@'])} {rng.choice(_CALLS)}({rng.randint(0, 99)}, dim={rng.randint(-2, 2)})"
        for i in range(3)
    ]
    return f"def {cell}(x, *args):\n" + "\n".join(lines) + "\n    return v0 + v1 * v2\n"


def _stub(cell: str) -> str:
    return f"def {cell}(x, *args):\n    raise NotImplementedError()"


def write_release(root: Path) -> Path:
    """Write the example class's release notebook under ``root/notebooks``: its path."""
    nb = nbformat.v4.new_notebook()
    for exercise, cell, points, _ in EXAMPLE_PLAN:
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
        verdicts: list[ExerciseVerdict] = []
        answers: dict[str, str] = {}
        for exercise, cell, points, odds in EXAMPLE_PLAN:
            outcome = rng.choices(list(odds), weights=list(odds.values()))[0]
            source = _drawn_answer(rng, cell)
            copied = COPIED.get((student, cell))
            if copied in drawn:  # the same answer as a classmate's, its names changed: the same outcome
                outcome, source = drawn[copied][0], re.sub(r"\bv(\d)", r"t\1", drawn[copied][1])
            drawn[(student, cell)] = (outcome, source)
            status = outcome if outcome in ("passed", "blank") else "failed"
            verdicts.append(verdict(exercise, [cell], status, points, outcome if status == "failed" else None))
            answers[cell] = _stub(cell) if status == "blank" else source
        write_verdicts(root, student, verdicts, answers)
    return ids
