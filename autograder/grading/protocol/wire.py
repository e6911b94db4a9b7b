"""What crosses the boundary between the grader and the sandboxed child: plain values only.

A message is a JSON document plus one safetensors blob for its tensors; nothing is ever
unpickled. Values are None, bools, numbers (NaN and infinities included), strings, lists,
tuples, dicts with string keys, tensors, dtypes and devices. Anything else travels as a
handle, ``{"$ref": id}``, to an object that stays on the side that owns it.

Frame: 4 bytes (big-endian) JSON length, the JSON, 8 bytes blob length, the blob.
"""

from __future__ import annotations

import json
import math
import os
import select
import struct
import time
from collections.abc import Callable
from typing import Any

import torch
from safetensors.torch import load as load_tensors
from safetensors.torch import save as save_tensors

MAX_JSON = 16 * 2**20
MAX_BLOB = 512 * 2**20


class WireError(Exception):
    """A message that is malformed, too large, or late: the peer broke the protocol."""


class PeerGone(WireError):
    """The other side closed its end (it exited or was killed)."""


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _dtype(name: Any) -> torch.dtype:
    value = getattr(torch, name, None) if isinstance(name, str) else None
    if not isinstance(value, torch.dtype):
        raise WireError(f"unknown dtype {name!r}")
    return value


class Encoder:
    """Turns a value into JSON plus tensors; ``handle(obj, encoder)`` gives the JSON of anything
    else. The encoder is passed, never kept by ``handle``: an encoder that a closure of its own
    held would be a reference cycle, and its tensors (copies of all it sent) would stay in memory
    until the cyclic garbage collector happened to run."""

    def __init__(
        self, handle: Callable[[Any, Encoder], dict], identify: Callable[[torch.Tensor], list[int]] | None = None
    ) -> None:
        self.handle = handle
        self.identify = identify or (lambda t: [id(t), 0])  # which parameter: see Connection._identify
        self.tensors: dict[str, torch.Tensor] = {}
        self.sources: dict[str, torch.Tensor] = {}  # key -> the tensor that was sent

    def tensor(self, t: torch.Tensor) -> dict:
        key = f"t{len(self.tensors)}"
        self.tensors[key] = t.detach().to("cpu").contiguous().clone()
        self.sources[key] = t
        out: dict[str, Any] = {"$tensor": key, "grad": bool(t.requires_grad)}
        if isinstance(t, torch.nn.Parameter):  # so that `a is b` holds for one parameter seen twice
            out["param"] = [*self.identify(t), int(t._version)]
        return out

    def __call__(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return value if math.isfinite(value) else {"$float": repr(value)}
        if isinstance(value, torch.Tensor):
            return self.tensor(value)
        if isinstance(value, torch.dtype):
            return {"$dtype": _dtype_name(value)}
        if isinstance(value, torch.device):
            return {"$device": str(value)}
        if isinstance(value, (tuple, torch.Size)):
            return {"$tuple": [self(v) for v in value]}
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, dict) and all(isinstance(k, str) for k in value):
            return {"$dict": {k: self(v) for k, v in value.items()}}
        return self.handle(value, self)


class Decoder:
    """Turns JSON plus tensors back into values; ``handle(node, decoder)`` resolves ``$ref``/``$own``
    nodes (the decoder passed, never kept: see ``Encoder``)."""

    def __init__(
        self,
        tensors: dict[str, torch.Tensor],
        handle: Callable[[dict, Decoder], Any],
        tensor_hook: Callable[[dict, torch.Tensor], torch.Tensor] | None = None,
    ) -> None:
        self.tensors, self.handle, self.tensor_hook = tensors, handle, tensor_hook

    def __call__(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self(v) for v in node]
        if not isinstance(node, dict) or len(node) == 0:
            raise WireError(f"unexpected {type(node).__name__} in a message")
        if "$tensor" in node:
            t = self.tensors.get(node["$tensor"])
            if t is None:
                raise WireError("a tensor is missing from the message")
            return self.tensor_hook(node, t) if self.tensor_hook else t
        if "$float" in node:
            text = node["$float"]
            if text not in ("nan", "inf", "-inf"):
                raise WireError(f"bad float {text!r}")
            return float(text)
        if "$dtype" in node:
            return _dtype(node["$dtype"])
        if "$device" in node:
            return torch.device(str(node["$device"]))
        if "$tuple" in node:
            return tuple(self(v) for v in node["$tuple"])
        if "$dict" in node:
            return {str(k): self(v) for k, v in node["$dict"].items()}
        return self.handle(node, self)


def pack(document: dict, tensors: dict[str, torch.Tensor]) -> bytes:
    text = json.dumps(document, allow_nan=False).encode()
    blob = save_tensors(tensors) if tensors else b""
    return struct.pack(">I", len(text)) + text + struct.pack(">Q", len(blob)) + blob


def send(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            view = view[os.write(fd, view) :]
        except BrokenPipeError as err:
            raise PeerGone("the other side closed the connection") from err


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, left = [], n
    while left:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError("no answer in time")
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise PeerGone("the other side closed the connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def receive(fd: int, timeout: float | None = None) -> tuple[dict, dict[str, torch.Tensor]]:
    """One message from ``fd``; raises WireError if it is malformed or too large,
    TimeoutError if it does not start and finish within ``timeout`` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    (length,) = struct.unpack(">I", _read_exact(fd, 4, deadline))
    if length > MAX_JSON:
        raise WireError(f"a message of {length} bytes (at most {MAX_JSON})")
    try:
        document = json.loads(_read_exact(fd, length, deadline))
    except ValueError as err:
        raise WireError(f"a message that is not JSON ({err})") from None
    (size,) = struct.unpack(">Q", _read_exact(fd, 8, deadline))
    if size > MAX_BLOB:
        raise WireError(f"tensors of {size} bytes (at most {MAX_BLOB})")
    blob = _read_exact(fd, size, deadline) if size else b""
    try:
        tensors = load_tensors(blob) if blob else {}
    except Exception as err:  # any broken blob is the peer's fault
        raise WireError(f"tensors that do not parse ({type(err).__name__})") from None
    if not isinstance(document, dict):
        raise WireError("a message that is not a JSON object")
    return document, tensors
