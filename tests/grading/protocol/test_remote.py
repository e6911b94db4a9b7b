"""Do objects on the other side of the boundary behave like local ones where the checks need
it (calls, modules, gradients, random state, in-place changes), and does the grader hand the
child nothing but what it exported?"""

from __future__ import annotations

import os
import threading
import types
from collections.abc import Iterator

import pytest
import torch

from autograder.grading.protocol.remote import Connection, RemoteModule
from autograder.grading.sandboxed.child import ChildServer


@pytest.fixture
def pair() -> Iterator[tuple[Connection, ChildServer]]:
    """A grader connection and a ChildServer serving from a thread, over two pipes."""
    to_child, from_grader = os.pipe()
    from_child, to_grader = os.pipe()
    child = ChildServer(to_child, to_grader)
    thread = threading.Thread(target=child.run, daemon=True)
    thread.start()
    yield Connection(from_child, from_grader, trusting=False, timeout=30), child
    os.close(from_grader)
    thread.join(timeout=10)
    for fd in (from_child, to_child, to_grader):
        os.close(fd)


def _handle(pair, obj):
    grader, child = pair
    return grader.decode(child.export(obj), {})


def test_a_module_is_built_loaded_and_run_over_there(pair) -> None:
    """Do construct, load_state_dict, to, eval and forward of a remote module give the
    local module's results, with parameter names and shapes?"""
    torch.manual_seed(0)
    local = torch.nn.Linear(3, 2)
    remote = _handle(pair, torch.nn.Linear)(3, 2)
    assert isinstance(remote, torch.nn.Module) and isinstance(remote, RemoteModule)
    assert {k: tuple(v.shape) for k, v in remote.state_dict().items()} == {"weight": (2, 3), "bias": (2,)}
    remote.load_state_dict(local.state_dict())
    assert remote.to(torch.float64).eval() is remote  # the same handle back
    assert remote.training is False
    x = torch.randn(4, 3, dtype=torch.float64)
    assert torch.allclose(remote(x), local.double()(x))


def test_one_parameter_read_twice_is_one_tensor(pair) -> None:
    """Is `a.weight is b.weight` true across the boundary when it is true over there?"""
    tied = torch.nn.Module()
    tied.a, tied.b = torch.nn.Linear(2, 2), torch.nn.Linear(2, 2)
    tied.b.weight = tied.a.weight
    remote = _handle(pair, tied)
    assert remote.a.weight is remote.b.weight
    assert remote.a.bias is not remote.b.bias


def test_a_scalar_computed_over_there_has_its_gradient_here(pair) -> None:
    """Does backward() of a remote loss fill the .grad of the tensor sent, as locally?"""

    def loss(x):
        return (x**2).sum() * 3

    x = torch.randn(5, requires_grad=True)
    found = _handle(pair, loss)(x)
    assert found.requires_grad
    found.backward()
    assert torch.allclose(x.grad, 6 * x.detach())


def test_the_random_state_and_grad_mode_travel_with_the_call(pair) -> None:
    """Does a draw over there advance the random state here, and does no_grad here hold there?"""
    draw = _handle(pair, lambda: (torch.rand(3), torch.is_grad_enabled()))
    torch.manual_seed(7)
    expected = torch.rand(3), torch.rand(3)
    torch.manual_seed(7)
    with torch.no_grad():
        first, grad_enabled = draw()
    assert torch.equal(first, expected[0]) and torch.equal(torch.rand(3), expected[1])
    assert grad_enabled is False


def test_an_argument_changed_in_place_changes_here_only_when_named(pair) -> None:
    """Does an answer that modifies its input in place modify the caller's tensor where the
    check named it (writing_back), and leave every other tensor the grader sent as it was?"""
    grader, _ = pair
    clamp = _handle(pair, lambda t, u: (t.clamp_(min=0), u.zero_()))
    x, y = torch.tensor([-1.0, 2.0]), torch.tensor([3.0, 4.0])
    with grader.writing_back((x,)):
        clamp(x, y)
    assert torch.equal(x, torch.tensor([0.0, 2.0])) and torch.equal(y, torch.tensor([3.0, 4.0]))
    x = torch.tensor([-1.0, 2.0])
    clamp(x, y)
    assert torch.equal(x, torch.tensor([-1.0, 2.0]))


def test_a_state_dict_handed_to_the_child_stays_the_graders(pair) -> None:
    """Does a module whose load_state_dict zeroes what it is given leave the grader's reference
    module (whose own parameters the state dict holds) unchanged?"""

    class Zeroing(torch.nn.Linear):
        def load_state_dict(self, state, strict=True):
            for t in state.values():
                t.zero_()
            return super().load_state_dict(state, strict)

    reference = torch.nn.Linear(3, 2)
    before = {k: v.clone() for k, v in reference.state_dict().items()}
    _handle(pair, Zeroing)(3, 2).load_state_dict(reference.state_dict())
    assert all(torch.equal(reference.state_dict()[k], v) for k, v in before.items())


def test_a_parameter_at_the_address_of_a_freed_one_is_read_as_itself(pair) -> None:
    """When the grader sends a new Parameter that took the address (id) of one it sent before and
    has freed since, does the child read the new one's values, not the old one's kept there?
    Parameters of new values are sent and freed one after another, so that addresses come back."""
    import gc
    import weakref

    total = _handle(pair, lambda p: float(p.sum()))
    seen: set[int] = set()
    reused = 0
    for i in range(200):
        parameter = torch.nn.Parameter(torch.full((4,), float(i)))
        reused += id(parameter) in seen
        seen.add(id(parameter))
        assert total(parameter) == 4.0 * i, f"Parameter number {i} was read with another's values"
        freed = weakref.ref(parameter)
        del parameter
        if freed() is not None:  # held in a cycle: collected (in a worker that ran many tests, a full
            gc.collect()  # collection takes a good part of a second, so only when needed)
        if reused >= 3:
            break
    assert reused >= 1, "no new Parameter took a freed one's address: the case was not exercised"


def test_the_parameters_kept_for_a_child_are_bounded(pair) -> None:
    """Does a child that sends parameter after parameter fail its call once the grader has kept
    MAX_PARAMS bytes of them, instead of growing the grader without end?"""
    from autograder.grading.protocol import bounds, wire

    size = bounds.MAX_PARAMS // 4 // 4 + 1  # a quarter of the bound, in float32, and a little more
    make = _handle(pair, lambda: torch.nn.Parameter(torch.zeros(size)))
    with pytest.raises(wire.WireError, match="MiB of parameters"):
        for _ in range(5):
            make()


def test_a_callback_cannot_spend_the_graders_memory(pair) -> None:
    """Does the child's call of a grader object on an input it chose (attention over 14,000
    positions: 2.3 GB of scores) fail over there, with the grader's memory left as it was?"""
    import resource

    def attention(x):
        return torch.softmax(x @ x.transpose(-1, -2), dim=-1) @ x

    child_side = _handle(pair, lambda layer: layer(torch.randn(4, 14000, 6)))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    with pytest.raises(Exception, match="allocate|Memory"):
        child_side(attention)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    assert grown < 1.2 * 2**30, f"the grader grew by {grown / 2**30:.1f} GiB"


def test_exceptions_keep_their_class_and_message(pair) -> None:
    """Is a ValueError over there a ValueError here, and an unknown class named as it was?"""

    class Mine(Exception):
        pass

    def raise_value_error():
        raise ValueError("d_model=7 is not divisible by num_heads=2")

    def raise_mine():
        raise Mine("boom")

    with pytest.raises(ValueError, match="not divisible"):
        _handle(pair, raise_value_error)()
    with pytest.raises(Exception, match="boom") as info:
        _handle(pair, raise_mine)()
    assert type(info.value).__name__ == "Mine"


def test_the_child_gets_only_what_the_grader_exported(pair) -> None:
    """Can the child's code, handed a grader object, read nothing private and receive no module
    or class, however it asks?"""
    grader, child = pair
    secret = types.SimpleNamespace(os=os, klass=Connection, _token="secret", value=3)

    def probe(obj):
        found = {"value": obj.value}
        for name in ("_token", "os", "klass"):
            try:
                getattr(obj, name)
                found[name] = "read"
            except Exception as err:  # what the child sees
                found[name] = type(err).__name__
        found["__dict__"] = "secret" in str(vars(obj))  # the handle's own, never the grader's
        return found

    found = _handle(pair, probe)(secret)
    assert found == {"value": 3, "_token": "AttributeError", "os": "TypeError", "klass": "TypeError", "__dict__": False}
    assert all(v is secret for v in grader.exported.values())


# A grader of its own for the memory test: its RSS is what is measured, and its child (the
# check's real child process, unsandboxed: the "submission" is this test's own code) calls back
# the grader's function CALLS times, each time with a new Parameter of MIB MiB.
GRADER = """
import json, sys
from autograder.grading.grader.run.independent_check import SandboxedChild

def rss(field):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(field))

calls, mib = int(sys.argv[1]), float(sys.argv[2])
answer = '''
import torch
def attack(layer):
    said = []
    for _ in range(%d):
        try:
            said.append(layer(torch.nn.Parameter(torch.zeros(%d))))
        except Exception as err:
            said.append(type(err).__name__)
    return said
''' % (calls, int(mib * 2**18))
child = SandboxedChild(lambda argv: argv, None, 300)
child.hello()
child.request({"op": "load", "cells": [answer], "limit": 300})
attack = child.request({"op": "global", "name": "attack"})
before = rss("VmRSS:")
said = attack(lambda p: int(p.shape[0]))
print(json.dumps({"peak": rss("VmHWM:") - before, "after": rss("VmRSS:") - before, "said": said}))
child.close()
"""


def _grader_grows(calls: int, mib: float) -> dict:
    import json
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-c", GRADER, str(calls), str(mib)], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_callbacks_with_parameters_leave_the_grader_within_its_bound() -> None:
    """Do 40 callbacks, each with a new 64 MiB Parameter, raise the grader's RSS (measured in
    its own process) by no more than the parameters it may keep (MAX_PARAMS) and one message in
    flight, where 40 callbacks with 64 KiB Parameters (the control) raise it by a few MiB?"""
    from autograder.grading.protocol import bounds

    control = _grader_grows(40, 1 / 16)
    assert control["said"] == [2**14] * 40  # every call answered
    assert control["peak"] < 64 * 2**20, f"the control grew the grader by {control['peak'] / 2**20:.0f} MiB"
    found = _grader_grows(40, 64)
    in_flight = 3 * 64 * 2**20  # one message: its bytes as read and joined, then its tensor; and slack
    assert found["peak"] < bounds.MAX_PARAMS + in_flight, f"the grader grew by {found['peak'] / 2**30:.2f} GiB"
    assert found["after"] < bounds.MAX_PARAMS + 64 * 2**20, f"it still holds {found['after'] / 2**30:.2f} GiB"
    # each a new Parameter: the grader keeps MAX_PARAMS of them (4), then refuses each call past it
    assert found["said"] == [2**24] * 4 + ["WireError"] * 36, found["said"]
