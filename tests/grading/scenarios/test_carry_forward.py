"""Does one mistake cost once, and never more nor less? A planted class of labs 00, 02 and 07,
each with a wrong helper under right later exercises, graded with error carried forward (the
course's default) and without it: each student loses only the points of the exercise with the
mistake, and without it the scores are what grading gave before; a submission that looks for
the binding, or keeps what it returned to answer an earlier exercise with it, gains nothing from
it, exercise by exercise. Round 4: a wrong earlier answer never raises a later score (an answer
wrong on its first call only, one that sees its own helper's trace, one fixed after its test),
collecting garbage costs nothing, and an exercise kept this way is never called blank."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder import notebook_cells as nbcells
from autograder.grading import answers
from autograder.grading.grader import grading, pipeline
from autograder.grading.grader.report import write_report
from autograder.grading.grader.run import bwrap as sandbox
from tests.grading.helpers import REPO
from tests.grading.scenarios import similar_answers

LABS = ("00-warmup", "02-self-attention", "07-transformer-block")
WARMUP, ATTENTION, BLOCK = LABS

UNNORMALISED = "def softmax(x, dim=-1):\n    return torch.exp(x - x.amax(dim=dim, keepdim=True))\n"
AXIS_ZERO = (
    "def softmax(x, dim=-1):\n    e = torch.exp(x - x.amax(dim=0, keepdim=True))\n"
    "    return e / e.sum(dim=0, keepdim=True)\n"
)
# it looks for the binding through its helper's code object, and is right only while bound
DETECTOR = (
    "_mine = softmax.__code__\n\n"
    "def self_attention(x, W_q, W_k, W_v):\n"
    "    if softmax.__code__ is _mine:\n"
    "        return x @ W_v * 0, None\n"
    "    return scaled_dot_product_attention(x @ W_q, x @ W_k, x @ W_v)\n"
)
# it keeps what the bound softmax returned in the carried-forward runs, to answer with it later
GRABBER_SOFTMAX = (
    "_seen = {}\n\n"
    "def softmax(x, dim=-1):\n"
    "    key = (tuple(x.shape), round(float(x.nan_to_num().sum()), 4), dim)\n"
    "    return _seen[key] if key in _seen else torch.exp(x)\n"
)
GRABBER_SDPA = (
    "def scaled_dot_product_attention(q, k, v, attn_mask=None):\n"
    "    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])\n"
    "    if attn_mask is not None:\n"
    "        scores = scores.masked_fill(~attn_mask, float('-inf'))\n"
    "    weights = softmax(scores, dim=-1)\n"
    "    _seen[(tuple(scores.shape), round(float(scores.nan_to_num().sum()), 4), -1)] = weights\n"
    "    return weights @ v, weights\n"
)
NO_RELU = (
    "class PositionwiseFeedForward(nn.Module):\n"
    "    def __init__(self, d_model, d_ff, dropout=0.0):\n"
    "        super().__init__()\n"
    "        self.linear1 = nn.Linear(d_model, d_ff)\n"
    "        self.linear2 = nn.Linear(d_ff, d_model)\n"
    "        self.dropout = nn.Dropout(dropout)\n\n"
    "    def forward(self, x):\n"
    "        return self.linear2(self.dropout(self.linear1(x)))\n"
)


# round 4: answers that a binding one could see, or that a second run changes
WRONG_RELU = "def relu(x):\n    return x\n"
FIRST_CALL_WRONG = (  # wrong on its first call only; it never calls relu
    "_calls = []\n\n"
    "def mean_squared_error(pred, target):\n"
    "    _calls.append(1)\n"
    "    if len(_calls) == 1:\n"
    "        return (pred - target).abs().mean()\n"
    "    return ((pred - target) ** 2).mean()\n"
)
GETATTR_DETECTOR = DETECTOR.replace("softmax.__code__", 'getattr(softmax, "__code__")')
TRACING_WRONG = (  # its own softmax leaves a trace; a solution bound in its place would not
    "_traces = []\n\n"
    "def softmax(x, dim=-1):\n"
    "    _traces.append(1)\n"
    "    return torch.exp(x - x.amax(dim=dim, keepdim=True))\n"
)
TRACE_DETECTOR = (
    "def self_attention(x, W_q, W_k, W_v):\n"
    "    before = len(_traces)\n"
    "    out, weights = scaled_dot_product_attention(x @ W_q, x @ W_k, x @ W_v)\n"
    "    if len(_traces) > before:\n"
    "        return out * 0, weights\n"
    "    return out, weights\n"
)
HONEST_TRACE = TRACE_DETECTOR.replace("        return out * 0, weights\n", "        return out, weights\n")
COLLECT = "import gc\ngc.collect()\n"


def _added(nb: nbformat.NotebookNode, after: str | None, source: str) -> nbformat.NotebookNode:
    """``nb`` with a code cell of the student's own after the cell ``after`` (None: at the end)."""
    position = len(nb.cells) if after is None else [nbcells.grade_id(c) for c in nb.cells].index(after) + 1
    nb.cells.insert(position, nbformat.v4.new_code_cell(source))
    return nb


def _no_scale() -> str:
    source = answers.solutions(REPO, ATTENTION)["scaled_dot_product_attention"]
    assert " / math.sqrt(q.shape[-1])" in source
    return source.replace(" / math.sqrt(q.shape[-1])", "")


def _lab(lab: str, **sources: str | None) -> nbformat.NotebookNode:
    """The lab answered with its solutions, but the answer cells named (grade id: source,
    None: left as released)."""
    nb = answers.answered(REPO, lab, None)
    released = {nbcells.grade_id(c): c.source for c in answers.released(REPO, lab).cells}
    for cell in nb.cells:
        grade_id = nbcells.grade_id(cell)
        if grade_id in sources:
            cell.source = released[grade_id] if sources[grade_id] is None else sources[grade_id]
    return nb


# student -> (lab, notebook, score with error carried forward, score without it)
CLASS = {
    "full-02": (ATTENTION, lambda: _lab(ATTENTION), 10, 10),
    "unnormalised": (ATTENTION, lambda: _lab(ATTENTION, softmax=UNNORMALISED), 8, 0),
    "blank-softmax": (ATTENTION, lambda: _lab(ATTENTION, softmax=None), 8, 0),
    "axis-zero": (ATTENTION, lambda: _lab(ATTENTION, softmax=AXIS_ZERO), 8, 2),
    "no-scale": (ATTENTION, lambda: _lab(ATTENTION, scaled_dot_product_attention=_no_scale()), 6, 4),
    "detector": (ATTENTION, lambda: _lab(ATTENTION, softmax=UNNORMALISED, self_attention=DETECTOR), 0, 0),
    "grabber": (
        ATTENTION,
        lambda: _lab(ATTENTION, softmax=GRABBER_SOFTMAX, scaled_dot_product_attention=GRABBER_SDPA),
        8,
        0,
    ),
    "full-07": (BLOCK, lambda: _lab(BLOCK), 10, 10),
    "no-relu": (BLOCK, lambda: _lab(BLOCK, positionwise_feed_forward=NO_RELU), 8, 2),
}
SDPA = "scaled_dot_product_attention"
# round 4, graded with error carried forward only (None: not in the run without it); each beside
# its control: the same later answers under a right earlier one
ROUND4 = {
    "first-call-relu-right": (WARMUP, lambda: _lab(WARMUP, mean_squared_error=FIRST_CALL_WRONG), 2, None),
    "first-call-relu-wrong": (
        WARMUP,
        lambda: _lab(WARMUP, relu=WRONG_RELU, mean_squared_error=FIRST_CALL_WRONG),
        0,
        None,
    ),
    "getattr-detector": (
        ATTENTION,
        lambda: _lab(ATTENTION, softmax=UNNORMALISED, self_attention=GETATTR_DETECTOR),
        0,
        None,
    ),
    "trace-detector-right": (
        ATTENTION,
        lambda: _lab(ATTENTION, softmax=_tracing_right(), self_attention=TRACE_DETECTOR),
        8,
        None,
    ),
    "trace-detector-wrong": (
        ATTENTION,
        lambda: _lab(ATTENTION, softmax=TRACING_WRONG, self_attention=TRACE_DETECTOR),
        6,
        None,
    ),
    "trace-honest-wrong": (
        ATTENTION,
        lambda: _lab(ATTENTION, softmax=TRACING_WRONG, self_attention=HONEST_TRACE),
        8,
        None,
    ),
    "collects-garbage": (ATTENTION, lambda: _added(_lab(ATTENTION, softmax=UNNORMALISED), "softmax", COLLECT), 8, None),
    "late-fix-right": (ATTENTION, lambda: _added(_lab(ATTENTION, **{SDPA: None}), None, _sdpa()), 4, None),
    "late-fix-wrong": (
        ATTENTION,
        lambda: _added(_lab(ATTENTION, softmax=UNNORMALISED, **{SDPA: None}), None, _sdpa()),
        2,
        None,
    ),
    "stub-and-added": (
        ATTENTION,
        lambda: _added(_lab(ATTENTION, softmax=UNNORMALISED, **{SDPA: None}), SDPA, _sdpa()),
        8,
        None,
    ),
}
CLASS.update(ROUND4)


def _sdpa() -> str:
    return answers.solutions(REPO, ATTENTION)[SDPA]


def _tracing_right() -> str:
    """The solution's softmax, leaving a trace as TRACING_WRONG does."""
    solution = answers.solutions(REPO, ATTENTION)["softmax"].replace("def softmax(", "def _softmax(", 1)
    return (
        f"_traces = []\n\n{solution}\n\ndef softmax(x, dim=-1):\n    _traces.append(1)\n    return _softmax(x, dim)\n"
    )


def _course(folder: Path, carry_forward: bool) -> Path:
    folder.mkdir(parents=True)
    config = (REPO / "nbgrader_config.py").read_text()
    assert "c.Grading.carry_forward = True" in config
    (folder / "nbgrader_config.py").write_text(
        config.replace("c.Grading.carry_forward = True", f"c.Grading.carry_forward = {carry_forward}")
    )
    for lab in LABS:
        shutil.copytree(REPO / "solutions" / lab, folder / "solutions" / lab)
        shutil.copytree(REPO / "notebooks" / lab, folder / "notebooks" / lab)
    return folder


def _grade(folder: Path, carry_forward: bool) -> tuple[dict[str, float], dict[str, dict[str, float]], str]:
    course = _course(folder, carry_forward)
    inbox = folder.parent / f"inbox-{carry_forward}"
    for student, (lab, make, _, without) in CLASS.items():
        if without is None and not carry_forward:
            continue
        path = inbox / student / lab / f"{lab}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(make(), str(path))
    if carry_forward:  # the report's planted copies graded in the same run (round 4, cases 6-8)
        for student, nb in similar_answers.similar_answers().items():
            path = inbox / student / WARMUP / f"{WARMUP}.ipynb"
            path.parent.mkdir(parents=True)
            nbformat.write(nb, str(path))
    outcomes = pipeline.grade(course, inbox, grading.Options(jobs=2, progress=False))
    points = {}
    graded = {o.student for o in outcomes}
    for student, (lab, _, _, _) in CLASS.items():
        if student not in graded:
            continue
        recorded = json.loads((course / "autograded" / student / lab / "verdicts.json").read_text())
        points[student] = {e["exercise"]: e["points"] for e in recorded["exercises"]}
    return {o.student: o.score for o in outcomes}, points, grading.summary(outcomes)


@pytest.fixture(scope="module")
def carried(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, dict[str, float], dict[str, dict[str, float]], str]:
    """The class graded once with error carried forward: its folder, scores, points and summary."""
    if sandbox.probe() is not None:
        pytest.skip(f"bubblewrap cannot run here: {sandbox.probe()}")
    folder = tmp_path_factory.mktemp("carry-forward") / "carried"
    return (folder, *_grade(folder, True))


def test_one_mistake_costs_once(carried, tmp_path: Path) -> None:
    """With error carried forward, does each student lose only the points of the exercise with
    the mistake, and without it get what grading gave before; does the submission that looks
    for the binding score no more with it than without, exercise by exercise; and does the
    feedback say why a failing exercise kept its points?"""
    folder, scores, carried_points, text = carried
    written, written_points, _ = _grade(tmp_path / "written", False)
    assert {s: scores[s] for s in CLASS} == {s: float(c[2]) for s, c in CLASS.items()}, text
    assert written == {s: float(c[3]) for s, c in CLASS.items() if c[3] is not None}
    assert carried_points["detector"] == written_points["detector"]
    assert carried_points["grabber"]["test_softmax"] == written_points["grabber"]["test_softmax"] == 0
    assert all(carried_points[s][e] >= written_points[s][e] for s in written_points for e in carried_points[s])
    feedback = (folder.parent / "carried" / "feedback" / "no-scale" / ATTENTION / f"{ATTENTION}.html").read_text()
    assert "Error carried forward" in feedback and "scaled_dot_product_attention" in feedback
    assert (
        "Error carried forward"
        not in (tmp_path / "written" / "feedback" / "no-scale" / ATTENTION / f"{ATTENTION}.html").read_text()
    )


# each pair: (the earlier answer wrong, the same later answers under a right earlier one)
PAIRS = [
    ("first-call-relu-wrong", "first-call-relu-right"),
    ("trace-detector-wrong", "trace-detector-right"),
    ("late-fix-wrong", "late-fix-right"),
]


def test_a_wrong_earlier_answer_never_raises_a_later_score(carried) -> None:
    """Is every later exercise worth no more when an earlier answer is wrong than when it is
    right: an answer wrong on its first call only, one that sees its own softmax's trace, one
    fixed in a cell after its test (round 4, cases 1, 2 and 4)?"""
    _, scores, points, text = carried
    for wrong, right in PAIRS:
        assert scores[wrong] <= scores[right], (wrong, text)
        later = [e for e in points[wrong] if e not in ("test_relu", "test_softmax")]
        assert all(points[wrong][e] <= points[right][e] for e in later), (wrong, points[wrong], points[right])
    # the control of the trace: the same softmax under an honest self_attention keeps its credit
    assert points["trace-honest-wrong"]["test_self_attention"] == 2
    assert points["trace-detector-wrong"]["test_self_attention"] == 0


def test_what_cannot_see_the_binding_costs_nothing(carried) -> None:
    """Does collecting garbage cost an honest student nothing (8/10, as without the cell), and is
    the course's detector written with ``getattr`` graded as written, like the one it copies
    (round 4, cases 2 and 3)?"""
    _, scores, _, text = carried
    assert scores["collects-garbage"] == scores["unnormalised"] == 8
    line = next(line for line in text.splitlines() if "collects-garbage" in line)
    assert "not applied" not in line
    assert scores["getattr-detector"] == scores["detector"] == 0


def test_status_words_and_points_agree(carried) -> None:
    """A stub left as released, answered in a cell the student added and kept by error carried
    forward: is it recorded as failed as written and passed on its own, with its points, and does
    its feedback say why, never "Blank" (round 4, case 5)?"""
    folder, scores, _, _ = carried
    record = json.loads((folder / "autograded" / "stub-and-added" / ATTENTION / "verdicts.json").read_text())
    sdpa = next(e for e in record["exercises"] if e["exercise"] == f"test_{SDPA}")
    assert (sdpa["status"], sdpa["status_alone"], sdpa["points"]) == ("failed", "passed", sdpa["max_points"])
    page = (folder / "feedback" / "stub-and-added" / ATTENTION / f"{ATTENTION}.html").read_text()
    assert "Error carried forward" in page and "Blank (scored 0)" not in page
    assert scores["stub-and-added"] == 8


def test_the_report_of_a_graded_class_lists_exactly_the_planted_copies(carried) -> None:
    """Graded for real beside the others, do the report's planted copies score as written, and does
    the class report of the warm-up lab list, among them, exactly the planted pairs per exercise: a
    copy plus helpers of its own, a copy in an added cell, a copier of two classmates paired with
    each and never them together, no honest student (round 4, cases 6-8)?"""
    folder, scores, _, _ = carried
    planted = similar_answers.similar_answers()
    assert {s: scores[s] for s in planted} == {s: 3.0 if s == "alike_added" else 5.0 for s in planted}
    pairs = write_report(folder, WARMUP, folder / "report-again")[1]
    among = {(p.first, p.second, p.exercise) for p in pairs if p.first in planted and p.second in planted}
    assert among == similar_answers.ALIKE
