"""Can a submission change what the grader compares it with? Every check is run across the
boundary against a candidate whose every method zeroes each tensor it receives (the attack of a
``load_state_dict`` that zeroes the reference's state dict): no tensor the grader sent, the
reference's own parameters among them, may change, except one a check named (``writes_back``)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Iterator
from typing import Any

import pytest
import torch

import autograder.checks
from autograder.grading.protocol.remote import Connection
from tests.checks.across_boundary import across


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _tensors(item)


def _zero(*args: Any, **kwargs: Any) -> None:
    with torch.no_grad():
        for t in _tensors([args, kwargs]):
            if t.is_floating_point() or t.is_complex():
                t.zero_()
            elif t.dtype != torch.bool:
                t.fill_(0)


class Zeroing(torch.nn.Module):
    """Takes any arguments, zeroes every tensor it is handed, in every method."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        _zero(args, kwargs)
        self.weight = torch.nn.Parameter(torch.zeros(2, 2))

    def forward(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        _zero(args, kwargs)
        return torch.zeros(1)

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> Any:
        _zero(state_dict)
        return torch.nn.modules.module._IncompatibleKeys([], [])


def zeroing(*args: Any, **kwargs: Any) -> torch.Tensor:
    _zero(args, kwargs)
    return torch.zeros(1)


def _checks() -> list[tuple[str, Any]]:
    found = []
    for info in pkgutil.walk_packages(autograder.checks.__path__, "autograder.checks."):
        if not info.ispkg and info.name.split(".")[2].startswith("lab"):
            module = importlib.import_module(info.name)
            found += [
                (f"{info.name.removeprefix('autograder.checks.')}.{name}", fn)
                for name, fn in sorted(vars(module).items())
                if name.startswith("check_") and callable(fn) and fn.__module__ == module.__name__
            ]
    return found


@pytest.fixture
def guarded(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every call the grader makes across the boundary is watched: a tensor it sent that comes
    back changed, and that no check named through ``writing_back``, is listed."""
    changed: list[str] = []
    named: set[int] = set()
    plain_call, plain_writing_back = Connection.call, Connection.writing_back

    def writing_back(self: Connection, tensors: tuple) -> Any:
        named.update(id(t) for t in tensors)
        return plain_writing_back(self, tensors)

    def call(self: Connection, ref: int, args: tuple, kwargs: dict, **extra: Any) -> Any:
        sent = [(t, t.detach().clone()) for t in _tensors([list(args), kwargs])]
        try:
            return plain_call(self, ref, args, kwargs, **extra)
        finally:
            for t, before in sent:
                if id(t) not in named and not torch.equal(t.detach().nan_to_num(), before.nan_to_num()):
                    changed.append(f"a tensor of shape {tuple(t.shape)}")

    monkeypatch.setattr(Connection, "writing_back", writing_back)
    monkeypatch.setattr(Connection, "call", call)
    return changed


@pytest.mark.parametrize("name, check", _checks(), ids=[name for name, _ in _checks()])
def test_no_check_lets_the_child_change_what_it_sent(name: str, check: Any, guarded: list[str]) -> None:
    """Does every check leave each tensor it handed a zeroing candidate as it was, module or function?"""
    for candidate in (Zeroing, zeroing):
        try:
            across(check)(candidate)
        except Exception:  # the candidate is wrong: the check failing it is expected
            pass
    assert guarded == [], f"{name}: the child changed {guarded[0]} the grader sent"


class _Every(set):
    def __contains__(self, item: object) -> bool:
        return True


def test_the_guard_sees_a_write_back(guarded: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Would the guard notice if the connection copied back every change, as it did before?"""
    plain_init = Connection.__init__

    def init(self: Connection, *args: Any, **kwargs: Any) -> None:
        plain_init(self, *args, **kwargs)
        self.writable = _Every()

    monkeypatch.setattr(Connection, "__init__", init)
    across(lambda candidate: candidate(torch.ones(3)))(zeroing)
    assert guarded == ["a tensor of shape (3,)"]
