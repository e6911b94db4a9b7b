"""Does the binding of error carried forward, in a fork of the child, answer a wrong earlier
function's calls with the solution's results (``given``) or the student's own, while everything
else an answer could see is the same in both: the function's identity, its side effects, a
helper held in a default argument; and does a class become the solution's, super() included?"""

from __future__ import annotations

import pytest
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


calls = []


def softmax(x, dim=-1):
    calls.append(1)
    x.mul_(2)  # in place: neither fork's caller sees it
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
        exec(cell, namespace)  # the test's own code
    return [None] * len(cells)


def _fork(given: bool) -> dict:
    namespace = {"torch": torch, "nn": nn}
    _run([STUDENT], namespace)
    namespace["mine"] = (namespace["softmax"], namespace["FF"])
    assert sorted(carry.bind(namespace, [SOLUTION], _run, given=given)) == ["FF", "softmax"]
    return namespace


@pytest.mark.parametrize("given", [True, False])
def test_only_the_values_returned_differ_between_the_two_forks(given: bool) -> None:
    """In both forks, is softmax the student's very object (identity, defaults), do its side
    effects happen, and does the caller keep its own tensor; and is what it returns the
    solution's in the ``given`` fork only, a default argument's helper included?"""
    namespace = _fork(given)
    x = torch.tensor([[1.0, 2.0]])
    value = namespace["uses"](x)
    assert namespace["softmax"] is namespace["mine"][0]
    assert namespace["calls"] == [1]
    assert torch.equal(x, torch.tensor([[1.0, 2.0]]))
    expected = torch.softmax(x, -1) if given else (2 * x).exp()
    assert torch.allclose(value, expected)


def test_a_class_becomes_the_solutions_in_the_given_fork_only() -> None:
    """Does a layer that builds FF use the solution's FF (super() included) when given, the
    student's own otherwise, FF being the student's class object in both?"""
    x = torch.tensor([[1.0, 2.0]])
    given, mine = _fork(True), _fork(False)
    assert given["FF"] is given["mine"][1] and mine["FF"] is mine["mine"][1]
    assert torch.equal(given["Layer"]()(x), torch.ones(1, 2))
    assert torch.equal(mine["Layer"]()(x), torch.zeros(1, 2))


def test_a_failing_side_raises_only_where_it_is_returned() -> None:
    """A stub that raises: does the ``given`` fork return the solution's value, and the other
    raise the student's own error?"""
    stub = "def softmax(x, dim=-1):\n    raise NotImplementedError('not yet')\n"
    for given in (True, False):
        namespace = {"torch": torch, "nn": nn}
        _run([stub], namespace)
        carry.bind(namespace, [SOLUTION], _run, given=given)
        x = torch.tensor([1.0, 2.0])
        if given:
            assert torch.allclose(namespace["softmax"](x), torch.softmax(x, -1))
        else:
            with pytest.raises(NotImplementedError, match="not yet"):
                namespace["softmax"](x)


def test_a_name_bound_to_another_kind_of_object_is_rebound_in_both_forks() -> None:
    """Is a helper the student made an nn.Softmax instance answered by name in both forks, with
    the student's own result where not given?"""
    x = torch.tensor([3.0, 1.0])
    for given in (True, False):
        namespace = {"torch": torch, "nn": nn}
        _run(["softmax = nn.Softmax(dim=-1)"], namespace)
        carry.bind(namespace, [SOLUTION], _run, given=given)
        assert not isinstance(namespace["softmax"], nn.Softmax)
        assert torch.allclose(namespace["softmax"](x), torch.softmax(x, -1))
