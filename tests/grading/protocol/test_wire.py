"""Does the boundary carry plain values exactly, and refuse everything else?"""

from __future__ import annotations

import json
import os
import struct

import pytest
import torch

from autograder.grading.protocol import wire
from autograder.grading.protocol.remote import Connection


def _round_trip(value, trusting: bool = False):
    sender, receiver = Connection(-1, -1, trusting=True), Connection(-1, -1, trusting=trusting)
    document, tensors = sender.encode(value)
    data = wire.pack({"value": document}, tensors)
    r, w = os.pipe()
    try:
        os.write(w, data)
        message, blobs = wire.receive(r, timeout=5)
    finally:
        os.close(r)
        os.close(w)
    return receiver.decode(message["value"], blobs)


def test_plain_values_cross_unchanged() -> None:
    """Do numbers (NaN and infinities too), strings, tuples, dicts, dtypes and tensors of
    every kind come back equal, with their types?"""
    value = [
        None,
        True,
        3,
        2.5,
        float("inf"),
        "text",
        (1, (2, 3)),
        {"a": [1, 2]},
        torch.float64,
        torch.device("cpu"),
        torch.Size([2, 3]),
        torch.arange(6).reshape(2, 3).t(),
        torch.tensor([[True, False]]),
        torch.zeros(0, 4),
        torch.randn(3, dtype=torch.float64),
        torch.tensor(1.5),
    ]
    back = _round_trip(value)
    assert back[:4] == [None, True, 3, 2.5] and back[4] == float("inf") and type(back[2]) is int
    assert back[5:10] == ["text", (1, (2, 3)), {"a": [1, 2]}, torch.float64, torch.device("cpu")]
    assert back[10] == (2, 3)
    for sent, got in zip(value[11:], back[11:], strict=True):
        assert got.dtype == sent.dtype and torch.equal(got, sent)
    assert _round_trip(float("nan")) != _round_trip(float("nan"))  # NaN, not a string


def test_a_tensor_that_needs_grad_arrives_as_a_plain_tensor_for_the_grader() -> None:
    """Does the grader receive values only (no requires_grad, no graph)?"""
    got = _round_trip(torch.ones(2, requires_grad=True) * 2)
    assert not got.requires_grad and got.grad_fn is None


def test_other_objects_travel_as_handles_never_as_values() -> None:
    """Does an object that is not plain stay where it is, the other side holding a handle?"""
    sender = Connection(-1, -1, trusting=False)
    document, _ = sender.encode({"layer": torch.nn.Linear(2, 2)})
    node = document["$dict"]["layer"]
    assert set(node) == {"$ref", "kind"} and node["kind"] == "module"
    with pytest.raises(TypeError, match="do not cross"):
        sender.encode(os)  # a module: never handed out by the grader
    with pytest.raises(TypeError, match="do not cross"):
        sender.encode(torch.nn.Linear)


@pytest.mark.parametrize(
    "node",
    [
        {"$dataclass": "os:system", "fields": {"$dict": {}}},  # the grader never imports what it is told to
        {"$own": 12345},  # a handle to something the grader never exported
        {"__reduce__": "x"},
        {"$float": "1e999"},
        {"$dtype": "Tensor"},
        {"$tensor": "missing"},
    ],
)
def test_the_grader_refuses_what_it_did_not_send(node) -> None:
    """Is every value the grader does not accept a WireError, never an import or a crash?"""
    with pytest.raises(wire.WireError):
        Connection(-1, -1, trusting=False).decode(node, {})


@pytest.mark.parametrize(
    "data",
    [
        struct.pack(">I", 5) + b"nope!" + struct.pack(">Q", 0),
        struct.pack(">I", 2) + b"[]" + struct.pack(">Q", 0),
        struct.pack(">I", 2) + b"{}" + struct.pack(">Q", 4) + b"junk",
        struct.pack(">I", wire.MAX_JSON + 1),
        struct.pack(">I", 2) + b"{}" + struct.pack(">Q", wire.MAX_BLOB + 1),
    ],
)
def test_a_broken_message_is_an_error_not_a_crash(data: bytes) -> None:
    """Is a message that is not JSON, not an object, too large or with a blob that does not
    parse refused with WireError?"""
    r, w = os.pipe()
    try:
        os.write(w, data)
        os.close(w)
        with pytest.raises(wire.WireError):
            wire.receive(r, timeout=5)
    finally:
        os.close(r)


def test_silence_is_a_timeout() -> None:
    """Does a side that never answers make the other wait only as long as it allows?"""
    r, w = os.pipe()
    try:
        with pytest.raises(TimeoutError):
            wire.receive(r, timeout=0.2)
    finally:
        os.close(r)
        os.close(w)


def test_pack_refuses_nan_in_json() -> None:
    """Is a raw NaN in a document refused (floats that are not finite go as $float)?"""
    with pytest.raises(ValueError):
        wire.pack({"x": float("nan")}, {})
    assert json.loads(wire.pack({"x": 1}, {})[4:-8]) == {"x": 1}
