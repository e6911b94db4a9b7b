"""Does the grader flag, on the source alone, every answer that reaches PyTorch's or the
grader's machinery dynamically? (That no lab's solution is flagged: test_similarity.)"""

from __future__ import annotations

import pytest

from autograder.grading.grader.verdict import retyped as similarity
from autograder.grading.grader.verdict.dynamic_reach import dynamic_constructs


@pytest.mark.parametrize(
    "source, expected",
    [
        ("import sys\nsys.modules['torch._dynamo'] = object()", "sys.modules"),
        ("import importlib\nimportlib.import_module('autograder.checks.' + 'core')", "importlib"),
        ("m = __import__('autograder')", "__import__()"),
        ("name = 'forb' + 'idden'\nsetattr(core, name, lambda *a: None)", "setattr() with a name built at run time"),
        ("f = getattr(torch, 'so' + 'ftmax')", "getattr() with a name built at run time"),
        ("import operator\nget = operator.attrgetter(name)", "operator.attrgetter"),
        ("exec(code)", "exec()"),
        ("y = eval('x + 1')", "eval()"),
        ("c = compile(src, 'x', 'exec')", "compile()"),
        ("return torch.ops.aten.relu(x)", "torch.ops"),
        ("return torch._C._nn.mse_loss(a, b)", "torch._C"),
        ("from torch._C import _nn", "torch._C"),
        ("class M(TorchDispatchMode):\n    pass", "a dispatch or function mode"),
        ("import gc\ngc.get_objects()", "gc"),
        ("import sys\nframe = sys._getframe(1)", "frame inspection"),
        ("g = f.__globals__", "frame inspection"),
        ("d = vars(module)", "vars()"),
    ],
)
def test_each_dynamic_construct_is_named(source: str, expected: str) -> None:
    """Is each way of reaching the machinery dynamically named?"""
    assert expected in dynamic_constructs(source)


@pytest.mark.parametrize(
    "source",
    [
        "model.eval()\nreturn model(x)",
        "w = getattr(module, 'weight')",
        "return torch.softmax(scores, dim=-1)",
        "def ops(x):\n    return x.ops",
        "this is not python",
    ],
)
def test_ordinary_answers_are_not_flagged(source: str) -> None:
    """Are a method named eval, getattr with a literal name and plain PyTorch left alone?"""
    assert dynamic_constructs(source) == []


def test_a_dynamic_answer_is_flagged_once_never_scored() -> None:
    """Does a cell that swaps a module in sys.modules get one flag note naming what it does?"""
    notes = similarity.cell_notes("import sys, types\nsys.modules['torch._dynamo'] = types.SimpleNamespace()\n")
    assert notes == [
        "the answer reaches PyTorch or the grader dynamically (sys.modules): flagged for a look, not scored 0"
    ]
