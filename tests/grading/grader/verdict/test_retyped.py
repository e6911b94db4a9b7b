"""Tests of the flags for the instructor: an answer that retypes the reference (its syntax tree
after renaming, at least MIN_STATEMENTS statements) or touches the checks' machinery is flagged;
short answers, answers of another shape and every lab's solutions are not; nothing raises."""

from __future__ import annotations

import textwrap
from pathlib import Path

import nbformat
import pytest

from autograder.grading.grader.verdict import retyped as similarity
from autograder.reference import bpe

REPO = Path(__file__).resolve().parents[4]

# The reference's bpe_decode (9 statements) with every name changed, no docstring, no annotations.
RETYPED = """
_TO_BYTE = bpe.unicode_to_bytes()


def decode(ids, vocab):
    token_of = {n: t for t, n in vocab.items()}
    out = bytearray()
    for n in ids:
        if isinstance(n, bool) or not isinstance(n, int) or n not in token_of:
            raise ValueError(f"unknown token id {n!r}: the ids of this vocabulary run from 0 to {len(vocab) - 1}")
        piece = token_of[n]
        plain = all(c in _TO_BYTE for c in piece)
        out += bytes(_TO_BYTE[c] for c in piece) if plain else piece.encode("utf-8")
    return out.decode("utf-8", errors="replace")
"""

OWN = """
def decode(ids, vocab):
    to_byte = bpe.unicode_to_bytes()
    token_of = {i: token for token, i in vocab.items()}
    data = bytearray()
    for i in ids:
        token = token_of[i]
        if all(c in to_byte for c in token):
            data += bytes(to_byte[c] for c in token)
        else:
            data += token.encode("utf-8")
    return data.decode("utf-8", errors="replace")
"""


def test_a_retyped_reference_function_is_flagged_with_its_name() -> None:
    """Is the reference's bpe_decode with every name changed flagged, naming the reference function
    and the number of statements, against the function, against its module's index, and as a method?"""
    said = similarity.flag(RETYPED, bpe.bpe_decode)
    assert said is not None and "autograder.reference.bpe.bpe_decode" in said and "9 statements" in said
    assert any("autograder.reference.bpe.bpe_decode" in note for note in similarity.cell_notes(RETYPED))
    method = "class Mine:\n" + textwrap.indent(RETYPED.replace("def decode(ids", "def decode(self, ids"), "    ")
    assert similarity.cell_notes(method) == []  # an added argument changes the tree: not the same function
    inside = "class Mine:\n    @staticmethod\n" + textwrap.indent(RETYPED.split("\n\n\n")[1], "    ")
    assert any("bpe_decode" in note for note in similarity.cell_notes(inside))


def test_an_answer_of_its_own_and_a_short_copy_are_not_flagged() -> None:
    """Is an answer that computes the same thing in its own way not flagged, nor a copy of a reference
    function shorter than MIN_STATEMENTS (count_pairs, 5 statements)?"""
    assert similarity.flag(OWN, bpe.bpe_decode) is None
    assert similarity.cell_notes(OWN) == []
    short = (
        "def count(words):\n    pairs = defaultdict(int)\n    for w, n in words.items():\n"
        "        for p in pairwise(w):\n            pairs[p] += n\n    return dict(pairs)\n"
    )
    assert similarity.MIN_STATEMENTS > 5 and similarity.flag(short, bpe.count_pairs) is None


@pytest.mark.parametrize(
    "source, what",
    [
        ("import types\nf = types.FunctionType(bpe.train_bpe.__code__, {})\n", "FunctionType"),
        ("code = bpe.train_bpe.__code__\n", "__code__"),
        ("def relu(x):\n    return torch.ops.aten.relu(x)\n", "torch.ops"),
        ("from torch.utils._python_dispatch import _disable_current_modes\n", "_python_dispatch"),
        ("import autograder.checks.kit.sentinels as s\ns.forbidden = None\n", "autograder.checks"),
        ("import sys\nsys.setprofile(None)\n", "profile hook"),
    ],
)
def test_an_answer_touching_the_checks_machinery_is_flagged(source: str, what: str) -> None:
    """Is an answer that reads a code object, calls torch.ops, touches dispatch modes, the checks'
    package or the profile hook flagged, saying what it touched?"""
    notes = similarity.cell_notes(source)
    assert len(notes) == 1 and what in notes[0] and "not scored 0" in notes[0]


def test_what_is_not_python_or_too_big_gives_no_flag() -> None:
    """Does a cell that is not Python (a magic, a syntax error, deep nesting) or too big give no flag
    and raise nothing?"""
    for source in (
        "%timeit relu(x)",
        "def f(:\n",
        "x = " + "(" * 5000 + ")" * 5000,
        "x = 1\n" * (similarity._MAX_SOURCE // 6 + 1),
    ):
        assert similarity.cell_notes(source) == []
        assert similarity.flag(source, bpe.bpe_decode) is None


def test_every_labs_solutions_are_not_flagged() -> None:
    """Are the solutions of every lab (written by the course, not copied) free of flags, so that
    grading them shows no note?"""
    for notebook in sorted((REPO / "solutions").glob("*/*.ipynb")):
        assert similarity.notes(notebook) == [], notebook.name


def test_notes_name_the_cell_and_skip_test_cells(tmp_path: Path) -> None:
    """Do a notebook's notes name the exercise (or the cell's number) of each flagged cell, and leave
    the graded test cells alone (the course's, which import autograder.checks)?"""
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(RETYPED, metadata={"nbgrader": {"grade_id": "decode", "solution": True}}),
        nbformat.v4.new_code_cell(
            "from autograder.checks import check_decode\ncheck_decode(decode)",
            metadata={"nbgrader": {"grade_id": "test_decode", "grade": True}},
        ),
        nbformat.v4.new_code_cell("x = torch.ops.aten.relu(torch.ones(1))"),
    ]
    path = tmp_path / "lab.ipynb"
    nbformat.write(nb, str(path))
    notes = similarity.notes(path)
    assert len(notes) == 2 and notes[0].startswith("decode: ") and notes[1].startswith("cell 3: "), notes
    assert similarity.notes(tmp_path / "missing.ipynb") == []


@pytest.mark.parametrize(
    ("source", "sees"),
    [
        ("import gc\ngc.collect()\n", False),
        ("import gc\ngc.disable()\nx = 1\ngc.enable()\n", False),
        ("def f(x):\n    return getattr(x, 'shape')\n", False),
        ("def relu(x):\n    return x.clamp(min=0)\n", False),
        ("import gc\nfound = gc.get_objects()\n", True),
        ("import gc as collector\ncollector.collect()\n", True),
        ("import gc\ncollect = gc.collect\nfound = gc.get_referrers\n", True),
        ("from gc import collect\n", True),
        ("_mine = getattr(softmax, '__code__')\n", True),
        ("_mine = softmax.__code__\n", True),
        ("names = dir()\n", True),
        ("names = globals()\n", True),
    ],
)
def test_what_could_see_a_binding(source: str, sees: bool) -> None:
    """Does ``observes_binding`` find what could tell how error carried forward binds a
    function (code objects also by a literal name, the collector's objects, a namespace's
    listing), and leave collecting garbage alone?"""
    assert similarity.observes_binding(source) is sees
