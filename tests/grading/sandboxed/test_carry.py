"""Does the child's binding for error carried forward make the student's own objects the
solution's (a function its code, a class its methods, super() included), reach a helper held
in a default argument, and put everything back afterwards?"""

from __future__ import annotations

import torch
from torch import nn

from autograder.grading.sandboxed import carry

STUDENT = """
class FF(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.linear = nn.Linear(d, d)

    def forward(self, x):
        return self.linear(x) * 0


def softmax(x, dim=-1):
    return x.exp()


def uses(x, helper=softmax):
    return helper(x)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.ff = FF(2)

    def forward(self, x):
        return self.ff(x)
"""
SOLUTION = """
class FF(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.linear = nn.Linear(d, d)

    def forward(self, x):
        return self.linear(x) * 0 + 1


def softmax(x, dim=-1):
    return torch.softmax(x, dim)
"""


def _run(cells: list[str], namespace: dict) -> list[str | None]:
    for cell in cells:
        exec(cell, namespace)  # noqa: S102 - the test's own code
    return [None] * len(cells)


def test_the_students_objects_become_the_solution_and_come_back() -> None:
    """While bound, are FF and softmax the student's very objects running the solution (a
    default argument and a layer that builds FF included); afterwards, the student's again?"""
    namespace = {"torch": torch, "nn": nn}
    _run([STUDENT], namespace)
    ff, softmax = namespace["FF"], namespace["softmax"]
    x = torch.tensor([[1.0, 2.0]])
    bound, undo = carry.bind(namespace, [SOLUTION], _run)
    assert sorted(bound) == ["FF", "softmax"]
    assert namespace["FF"] is ff and namespace["softmax"] is softmax
    assert torch.allclose(namespace["uses"](x), torch.softmax(x, -1))
    assert torch.equal(namespace["Layer"]()(x), torch.ones(1, 2))
    carry.unbind(undo)
    assert torch.equal(namespace["uses"](x), x.exp()) and torch.equal(namespace["Layer"]()(x), torch.zeros(1, 2))
    assert undo == []


def test_a_name_bound_to_another_kind_of_object_is_rebound_and_restored() -> None:
    """Is a helper the student made an nn.Softmax instance replaced by name, then put back?"""
    namespace = {"torch": torch, "nn": nn}
    _run(["softmax = nn.Softmax(dim=-1)"], namespace)
    mine = namespace["softmax"]
    _, undo = carry.bind(namespace, [SOLUTION], _run)
    assert namespace["softmax"] is not mine and callable(namespace["softmax"])
    carry.unbind(undo)
    assert namespace["softmax"] is mine and "FF" not in namespace
