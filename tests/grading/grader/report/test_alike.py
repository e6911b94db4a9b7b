"""Similar submissions: is a shared answer flagged, and are answers written independently not?"""

from __future__ import annotations

import ast
import inspect
import itertools
import json
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

from autograder import reference
from autograder.grading.grader.report import alike as similar
from autograder.grading.grader.report import write_report
from autograder.grading.grader.report.release import read_release
from tests.grading.grader.report import report_class

LAB = report_class.LAB
CHECK_TESTS = sorted((report_class.REPO / "tests" / "checks").glob("lab*/test_*.py"))


def test_the_shared_pair_is_flagged(reported):
    """Is the answer that two students share, renamed and reformatted, flagged on its exercise?"""
    first, second = reported.planted.shared
    assert [(p.exercise, p.first, p.second) for p in reported.pairs if p.exercise == "test_softmax"] == [
        ("test_softmax", first, second)
    ]


def test_only_shared_or_identical_answers_are_flagged(reported):
    """Is every flagged pair the planted one or two students given the very same variant (never a blank)?"""
    sources = reported.planted.sources
    for p in reported.pairs:
        if [p.first, p.second] != reported.planted.shared:
            assert sources[(p.exercise, p.first)] == sources[(p.exercise, p.second)] != "blank", p


def test_renaming_and_reformatting_change_nothing():
    """Do renamed variables, split lines, comments and the stub's own lines vanish from the normalised code?"""
    stub = ["def f(x, dim=-1):", '    """Doc."""']
    a = 'def f(x, dim=-1):\n    """Doc."""\n    y = x.exp()  # why\n    return y / y.sum(dim, keepdim=True)\n'
    b = 'def f(x, dim=-1):\n    """Doc."""\n    e = x.exp()\n\n    return e / e.sum(dim,\n  keepdim=True)\n'
    assert similar.normalise(a, stub) == [
        "N",
        "=",
        "N",
        ".",
        "exp",
        "(",
        ")",
        ";",
        "return",
        "N",
        "/",
        "N",
        ".",
        "sum",
        "(",
        "N",
        ",",
        "N",
        "=",
        "True",
        ")",
        ";",
    ]
    assert similar.normalise(b, stub) == similar.normalise(a, stub)


def test_short_answers_are_not_compared():
    """Are two identical answers shorter than K normalised tokens left unflagged, and longer ones flagged?"""
    short = "return x @ W.T\n"
    assert len(similar.normalise(short)) < similar.MIN_TOKENS
    assert similar.similar_pairs("e", {"a": short, "b": short}) == []
    long = "\n".join(f"y{i} = x.sum({i}) * w.mean({i})" for i in range(4))
    assert len(similar.normalise(long)) >= similar.MIN_TOKENS
    assert [(p.first, p.second) for p in similar.similar_pairs("e", {"a": long, "b": long.replace("y", "z")})] == [
        ("a", "b")
    ]


PASSES = re.compile(r"accept|right_answers|pass")  # the tests that hold right answers ...
NOT_PASSES = re.compile(r"fail|name|forbid|mistake|stub|reject|validated|refuse")  # ... and not wrong ones


def _valid_variants(path: Path) -> list[str]:
    """The right answers of the checks' tests in ``path``: the module's functions and classes
    that a test of right answers names (in its body or its parametrize), and the reference's own."""
    text = path.read_text()
    tree = ast.parse(text)
    defined = {
        n.name: ast.get_source_segment(text, n)
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.ClassDef) and not n.name.startswith("test_")
    }
    sources = []
    for test in tree.body:
        if not (isinstance(test, ast.FunctionDef) and PASSES.search(test.name) and not NOT_PASSES.search(test.name)):
            continue
        for node in itertools.chain.from_iterable(ast.walk(n) for n in [test, *test.decorator_list]):
            if isinstance(node, ast.Name) and node.id in defined:
                sources.append(defined[node.id])
            elif (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "reference"
                and inspect.isfunction(getattr(reference, node.attr, None))
            ):
                sources.append(inspect.getsource(getattr(reference, node.attr)))
    return [s for s in dict.fromkeys(sources) if s]


def test_independent_valid_variants_are_not_flagged():
    """Is no pair of the right answers written independently in the checks' tests flagged, above K, even by
    containment (the smaller's fingerprints found in the other's), before any boilerplate is taken out?"""
    compared, flagged = 0, []
    for path in CHECK_TESTS:
        for group in [_valid_variants(path)]:
            # each as its own answer: the def line is the stub's, so it is left out as the stub's lines are
            tokens = {s: similar.normalise(s, s.splitlines()[:1]) for s in group}
            long = [s for s in group if len(tokens[s]) >= similar.MIN_TOKENS]
            for a, b in itertools.combinations(long, 2):
                compared += 1
                score = similar.containment(similar.fingerprints(tokens[a]), similar.fingerprints(tokens[b]))
                if score >= similar.THRESHOLD:
                    flagged.append(f"{path.name}: {a.splitlines()[0]} ~ {b.splitlines()[0]} ({score:.2f})")
    assert compared >= 200, compared
    assert not flagged, flagged


def test_an_answer_python_cannot_read_is_still_compared():
    """Are two copies of an answer with a syntax error (renamed) still flagged, read as words and symbols?"""
    broken = "\n".join(f"y{i} = x.sum({i} * w.mean({i})" for i in range(4))  # parentheses never closed
    assert len(similar.normalise(broken)) >= similar.MIN_TOKENS
    assert len(similar.similar_pairs("e", {"a": broken, "b": broken.replace("y", "z")})) == 1


def test_fingerprints_are_the_same_in_every_process():
    """Does a rerun in another process (another seed of Python's str hash) give the same fingerprints?"""
    code = (
        "from autograder.grading.grader.report import alike as similar; "
        f"print(sorted(similar.fingerprints(similar.normalise(open({str(report_class.SHARED)!r}).read()))))"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2")
    }
    assert len(runs) == 1 and len(runs.pop()) > 20


def _one_line_class(root: Path, moved_by_last: bool) -> None:
    """Three students of lab 02 with one-line answers to softmax and single_query_attention, the
    first two the same; the last (by id) moved single_query_attention above test_softmax, so
    that its own verdicts give test_softmax both cells (what grading records of that notebook)."""
    shutil.copytree(report_class.REPO / "notebooks" / LAB, root / "notebooks" / LAB)
    stubs = report_class.stubs()
    bodies = {
        "softmax": "    return torch.exp(x) / torch.exp(x).sum(dim, keepdim=True)",
        "single_query_attention": "    return softmax(K @ q / q.shape[0] ** 0.5) @ V",
    }
    own = {
        "softmax": "    e = x.exp()\n    return e / e.sum(dim, keepdim=True)",
        "single_query_attention": "    return softmax(q @ K.T / len(q) ** 0.5, -1) @ V",
    }
    for student, chosen in (("s00", bodies), ("s01", bodies), ("s02", own)):
        cells = {"test_softmax": ["softmax"], "test_single_query_attention": ["single_query_attention"]}
        if moved_by_last and student == "s02":
            cells = {"test_softmax": ["single_query_attention", "softmax"], "test_single_query_attention": []}
        verdicts = [report_class.verdict(e, c, "passed", 2.0, None) for e, c in cells.items()]
        answers = {c: stubs[c].replace(report_class.STUB_BODY, b) for c, b in chosen.items()}
        report_class.write_verdicts(root, student, verdicts, answers)


def test_the_exercises_come_from_the_release_not_a_submission(tmp_path):
    """Does a class whose last student moved an answer cell above the first test cell compare the
    same cells as an honest class, leaving two honest one-line answers unflagged?"""
    results = {}
    for moved in (False, True):
        root = tmp_path / str(moved)
        _one_line_class(root, moved)
        assert read_release(root, LAB).exercises["test_softmax"] == ("softmax",)
        _, found, _ = write_report(root, LAB)
        results[moved] = found
    assert results[True] == results[False] == []
    # the map the moved notebook records joins both cells: long enough to be compared, and alike
    moved = ("single_query_attention", "softmax")
    answers = {
        s: "\n".join(
            json.loads((tmp_path / "True" / "autograded" / s / LAB / "verdicts.json").read_text())["answers"][c]
            for c in moved
        )
        for s in ("s00", "s01")
    }
    stub = [line for c in moved for line in report_class.stubs()[c].splitlines()]
    assert [(p.first, p.second) for p in similar.similar_pairs("test_softmax", answers, stub)] == [("s00", "s01")]


# Small variations of people typing the reference softmax on their own (old, new), each student 1 or 2 of them.
TYPED = [
    ("x.amax(dim=dim, keepdim=True)", "x.amax(dim, keepdim=True)"),
    (
        "torch.where(torch.isfinite(top), top, torch.zeros_like(top))",
        "torch.where(top.isfinite(), top, torch.zeros_like(top))",
    ),
    ("torch.exp(x - top)", "(x - top).exp()"),
    ("e.sum(dim=dim, keepdim=True)", "torch.sum(e, dim=dim, keepdim=True)"),
    ("total.clamp_min(torch.finfo(x.dtype).tiny)", "total.clamp(min=torch.finfo(x.dtype).tiny)"),
    ("return e / total", "out = e / total\n    return out"),
    ("torch.zeros_like(top)", "torch.zeros_like(x).amax(dim=dim, keepdim=True)"),
    ("e = torch.exp", "e = 1.0 * torch.exp"),
]


def _class_of_20(root: Path) -> dict[str, str]:
    """Lab 02's softmax in a class of 20: 15 typed the reference solution on their own (renamed, with one
    or two small variations each), s15 and s16 share an unusual answer (the second renamed and
    reformatted), s17 wrote an answer of their own, s18 and s19 left it blank. Their answers."""
    for folder in ("notebooks", "solutions"):
        shutil.copytree(report_class.REPO / folder / LAB, root / folder / LAB)
    release = read_release(root, LAB)
    stub, solution = release.stubs["softmax"], release.solutions["softmax"]
    body = solution[solution.index("    ### BEGIN SOLUTION") :]
    rng = random.Random(0)
    bodies = []
    for _ in range(15):
        typed = body
        for old, new in rng.sample(TYPED, rng.choice([1, 2])):
            typed = typed.replace(old, new)
        renamed = typed.replace("top", rng.choice(["m", "biggest", "top"]))
        bodies.append(renamed.replace("total", rng.choice(["s", "z"])))
    variants = report_class._variants_module()
    own = [report_class.body(inspect.getsource(f)) for f in (variants.softmax_by_moving_axis, variants.softmax_no_sum)]
    bodies += [own[0], report_class.SHARED.read_text(), own[1], report_class.STUB_BODY, report_class.STUB_BODY]
    answers = {f"s{n:02d}": stub.replace(report_class.STUB_BODY, b.rstrip("\n")) for n, b in enumerate(bodies)}
    for student, answer in answers.items():
        passed = report_class.verdict("test_softmax", ["softmax"], "passed", 2.0, None)
        report_class.write_verdicts(root, student, [passed], {"softmax": answer})
    return answers


def test_the_standard_answer_typed_by_many_never_makes_a_pair(tmp_path):
    """In a class of 20 where 15 typed the reference answer on their own and two share an unusual answer
    with renamed variables, is there exactly one pair, the two? (Without the stub's and the reference's
    fingerprints taken out and M, those who typed the reference are paired.)"""
    answers = _class_of_20(tmp_path)
    _, pairs, _ = write_report(tmp_path, LAB)
    assert [m.students for m in similar.matches(pairs)] == [("s15", "s16")]
    similar_csv = (tmp_path / "reports" / LAB / "similar.csv").read_text().splitlines()
    assert len(similar_csv) == 2 and similar_csv[1].startswith("1,s15,s16,test_softmax,")
    given = read_release(tmp_path, LAB).stubs["softmax"].splitlines()
    unfiltered = similar.matches(similar.similar_pairs("test_softmax", answers, given, max_shared=len(answers)))
    assert any(set(m.students) & {f"s{n:02d}" for n in range(15)} for m in unfiltered)


def test_code_in_more_than_m_answers_is_dropped():
    """Is an answer (not the reference) typed by 12 students never a pair with M = 10, and are all 66 pairs
    of them alike when M is raised to 12?"""
    long = "\n".join(f"y{i} = x.sum({i}) * w.mean({i}) + x.max({i}).values" for i in range(4))
    answers = {f"s{n:02d}": long.replace("y", f"v{n}_") for n in range(12)}
    assert similar.MAX_SHARED == 10 and similar.similar_pairs("e", answers) == []
    found = similar.matches(similar.similar_pairs("e", answers, max_shared=12))
    assert sorted(m.students for m in found) == list(itertools.combinations(sorted(answers), 2))


def test_pairs_of_students_never_chain_through_a_third():
    """Are pairs on any exercise shown per two students (both exercises of the same two on one row), a
    student who copied from two classmates beside each, and those two never beside each other?"""
    pairs = [
        similar.Pair("relu", "a", "c", 10, 10, 12),
        similar.Pair("mse", "b", "c", 9, 10, 10),
        similar.Pair("relu", "d", "e", 12, 12, 12),
        similar.Pair("mse", "d", "e", 8, 9, 10),
    ]
    found = similar.matches(pairs)
    assert [(m.students, m.exercises) for m in found] == [
        (("d", "e"), ("relu", "mse")),
        (("a", "c"), ("relu",)),
        (("b", "c"), ("mse",)),
    ]
    assert pairs[1].contained == 0.9 and pairs[0].inside == ("a", "c") and pairs[0].similarity == 10 / 12


def test_the_example_class_holds_one_pair(tmp_path):
    """Does the guide's and the benchmark's invented class, whose answers are drawn apart, hold exactly
    one pair: the student who copied a classmate's answer (report_class.COPIED), and that classmate?"""
    report_class.example_class(tmp_path, students=40)
    _, pairs, _ = write_report(tmp_path, report_class.LAB)
    copied = sorted({student for key, source in report_class.COPIED.items() for student in (key[0], source[0])})
    assert [m.students for m in similar.matches(pairs)] == [tuple(copied)] == [("s0007", "s0031")]
