"""The code that answers an exercise: is it what a run of the notebook leaves bound, wherever it is?"""

from __future__ import annotations

from autograder.grading.grader.report import bound

STUB = 'def relu(x):\n    """Doc."""\n    raise NotImplementedError()'
ANSWER = "def relu(x):\n    keep = x > 0\n    return torch.where(keep, x, torch.zeros_like(x))"


def test_the_last_binding_in_an_added_cell_is_the_answer():
    """Under an untouched stub, is the definition in a cell the student added the answer, not the stub?"""
    written = bound.Written([("relu", STUB), (None, "print('hello')"), (None, ANSWER)])
    assert written.answer(["relu"], {"relu"}) == ANSWER


def test_a_definition_above_the_stub_is_not_the_answer():
    """Does a definition that the untouched stub binds again further down count for nothing (a run leaves the stub)?"""
    written = bound.Written([(None, ANSWER), ("relu", STUB)])
    assert written.answer(["relu"], {"relu"}) == STUB


def test_helpers_it_uses_come_along_and_the_rest_stays_out():
    """Are the helpers the answer uses (through another helper too) compared, and neither an unused helper,
    code at top level, nor another exercise's function it calls?"""
    cell = (
        "SCALE = 2.0\n"
        "def unused(t):\n    return t * 3\n"
        "def _inner(t):\n    return t * SCALE\n"
        "def _outer(t):\n    return _inner(t) + 1\n"
        "print(unused(1))\n"
        "def attend(q):\n    return softmax(_outer(q))\n"
    )
    other = "def softmax(x):\n    return x.exp() / x.exp().sum()"
    written = bound.Written([("softmax", other), ("attend", cell)])
    assert written.answer(["attend"], {"attend"}, others={"softmax"}) == (
        "SCALE = 2.0\n"
        "def _inner(t):\n    return t * SCALE\n"
        "def _outer(t):\n    return _inner(t) + 1\n"
        "def attend(q):\n    return softmax(_outer(q))"
    )


def test_bindings_inside_blocks_count_and_decorators_come_with_the_definition():
    """Is a definition under `if`/`try` at top level, or a decorated one, bound as a run binds it,
    while a name local to a function is not?"""
    guarded = "try:\n    import numpy\nexcept ImportError:\n    pass\nif True:\n    def relu(x):\n        return x\n"
    assert bound.Written([(None, guarded)]).last["relu"].first == 5  # the whole `if` block
    decorated = "@torch.no_grad()\ndef relu(x):\n    return x.clamp_min(0)"
    assert bound.Written([("relu", STUB), (None, decorated)]).answer(["relu"], {"relu"}) == decorated
    local = "def other(y):\n    relu = y\n    return relu"
    assert "relu" not in bound.Written([(None, local)]).last


def test_a_cell_that_is_not_python_is_compared_as_written():
    """Is an answer cell with a syntax error (it binds nothing) compared whole, and are IPython's
    magic lines read as blank lines rather than breaking the cell?"""
    broken = "def relu(x):\n    return torch.where(x > 0, x, 0\n"
    assert bound.Written([("relu", broken)]).answer(["relu"], {"relu"}) == broken
    magic = "%load_ext autoreload\n!ls\n" + ANSWER
    assert bound.Written([("relu", STUB), (None, magic)]).answer(["relu"], {"relu"}) == ANSWER


def test_a_stub_that_binds_nothing_leaves_the_answer_cells_whole():
    """Is an exercise whose stub binds no name compared on its answer cells as written (and only those)?"""
    assert bound.defined("# your code here\n") == set()
    written = bound.Written([("a", "x = 1\ny = x + 2"), ("b", "z = 3"), (None, "w = 4")])
    assert written.answer(["a"], set()) == "x = 1\ny = x + 2"


def test_the_stub_names_are_what_it_binds():
    """Are an exercise's names the functions, classes and assignments its stub binds at top level (not its imports)?"""
    stub = (
        "import torch\nclass Attention:\n    def forward(self):\n        pass\ndef helper():\n    inner = 1\nW = None"
    )
    assert bound.defined(stub) == {"Attention", "helper", "W"}
