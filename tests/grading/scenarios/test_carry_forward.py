"""Does one mistake cost once? A planted class of labs 02 and 07, each with a wrong helper
under right later exercises, graded with error carried forward (the course's default) and
without it: each student loses only the points of the exercise with the mistake, and without
it the scores are what grading gave before; a submission that looks for the binding, or keeps
what it returned to answer an earlier exercise with it, gains nothing from it, exercise by exercise."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import nbformat
import pytest

from autograder import notebook_cells as nbcells
from autograder.grading import answers
from autograder.grading.grader import pipeline
from autograder.grading.grader.run import bwrap as sandbox
from tests.grading.helpers import REPO

LABS = ("02-self-attention", "07-transformer-block")
ATTENTION, BLOCK = LABS

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
    for student, (lab, make, _, _) in CLASS.items():
        path = inbox / student / lab / f"{lab}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(make(), str(path))
    outcomes = pipeline.grade(course, inbox, pipeline.Options(jobs=2, progress=False))
    points = {}
    for student, (lab, _, _, _) in CLASS.items():
        recorded = json.loads((course / "autograded" / student / lab / "verdicts.json").read_text())
        points[student] = {e["exercise"]: e["points"] for e in recorded["exercises"]}
    return {o.student: o.score for o in outcomes}, points, pipeline.summary(outcomes)


@pytest.mark.slow
def test_one_mistake_costs_once(tmp_path: Path) -> None:
    """With error carried forward, does each student lose only the points of the exercise with
    the mistake, and without it get what grading gave before; does the submission that looks
    for the binding score no more with it than without, exercise by exercise; and does the
    feedback say why a failing exercise kept its points?"""
    if sandbox.probe() is not None:
        pytest.skip(f"bubblewrap cannot run here: {sandbox.probe()}")
    carried, carried_points, text = _grade(tmp_path / "carried", True)
    written, written_points, _ = _grade(tmp_path / "written", False)
    assert carried == {s: float(c[2]) for s, c in CLASS.items()}, text
    assert written == {s: float(c[3]) for s, c in CLASS.items()}
    assert carried_points["detector"] == written_points["detector"]
    assert carried_points["grabber"]["test_softmax"] == written_points["grabber"]["test_softmax"] == 0
    assert all(carried_points[s][e] >= written_points[s][e] for s in CLASS for e in carried_points[s])
    feedback = (tmp_path / "carried" / "feedback" / "no-scale" / ATTENTION / f"{ATTENTION}.html").read_text()
    assert "Error carried forward" in feedback and "scaled_dot_product_attention" in feedback
    assert (
        "Error carried forward"
        not in (tmp_path / "written" / "feedback" / "no-scale" / ATTENTION / f"{ATTENTION}.html").read_text()
    )
