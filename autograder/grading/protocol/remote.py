"""Objects on the other side of a process boundary: the grader calls a student's answers
in a sandboxed child, and the child may call back the grader's test doubles.

Both sides hold a ``Connection`` over two pipes. A request names an object the other side
exported (``{"$ref": id}``) and what to do with it (call it, read a public attribute); the
reply is a plain value (see ``wire``) or a handle to a new exported object. While waiting
for its reply, a side answers the requests that the other side sends meanwhile, so a
student's ``greedy_decode`` can call the grader's model, which answers with tensors.

The grader trusts nothing it receives: it decodes plain values only, never imports or
unpickles what the child names, and serves callbacks on objects it exported itself, with
public attribute names only, never handing out a class or a module. What the child sends
changes no object of the grader's: a tensor the child changed in place is copied back only
where the check named it (``writing_back``). What the grader holds for a child is bounded:
the parameters it keeps to tell one Parameter read twice, and the work of a callback
(``bounds``): past either, the call fails for the child, as its own error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import types
import weakref
from collections.abc import Iterator
from typing import Any

import torch

from autograder.grading.protocol import wire
from autograder.grading.protocol.bounds import MAX_PARAMS, bounded
from autograder.grading.protocol.errors import cell_frames, exception_for, frames_in
from autograder.grading.protocol.tensors_back import copy_back, differentiable

# the methods of an nn.Module that change it: a module the grader exports is the grader's own
MODULE_CHANGES = frozenset(
    {
        "load_state_dict",
        "apply",
        "to",
        "to_empty",
        "cuda",
        "cpu",
        "xpu",
        "mps",
        "ipu",
        "type",
        "float",
        "double",
        "half",
        "bfloat16",
        "requires_grad_",
        "zero_grad",
        "register_buffer",
        "register_parameter",
        "add_module",
        "register_module",
        "set_extra_state",
        "share_memory",
        "set_submodule",
    }
)


class Connection:
    """One side of the boundary. ``trusting`` is the child's: it may rebuild the grader's
    dataclasses by importing them; the grader never does."""

    def __init__(self, rfd: int, wfd: int, *, trusting: bool, timeout: float | None = None) -> None:
        self.rfd, self.wfd, self.trusting, self.timeout = rfd, wfd, trusting, timeout
        self.exported: dict[int, Any] = {}
        self.proxies: dict[int, Any] = {}
        self.params: dict[int, tuple[list[int], torch.Tensor]] = {}  # received: id -> (generation, version), tensor
        self.params_bytes = 0
        self.sent_params: dict[int, tuple[weakref.ref, int]] = {}  # sent: id -> the parameter, its generation
        self.writable: set[int] = set()  # ids of the tensors whose in-place changes come back (writing_back)
        self.forbid: list[tuple[list[str], str]] = []
        self.broken: str | None = None  # why the conversation cannot go on

    # ------------------------------------------------------------------ values

    def export(self, obj: Any) -> dict:
        if not self.trusting and isinstance(obj, (type, types.ModuleType)):
            raise TypeError(f"{type(obj).__name__} objects do not cross to the sandbox")
        self.exported[id(obj)] = obj
        kind = (
            "module"
            if isinstance(obj, torch.nn.Module)
            else "class"
            if isinstance(obj, type)
            else "callable"
            if callable(obj)
            else "object"
        )
        return {"$ref": id(obj), "kind": kind}

    def _handle_out(self, obj: Any, encoder: wire.Encoder) -> dict:
        if isinstance(obj, (RemoteObject, RemoteModule)) and obj._remote[0] is self:
            return {"$own": obj._remote[1]}
        if isinstance(obj, (types.GeneratorType, map, filter, zip)):
            return {"$iter": [encoder(v) for v in obj]}
        ours = type(obj).__module__.startswith("autograder.")
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type) and ours:
            return {
                "$dataclass": f"{type(obj).__module__}:{type(obj).__qualname__}",
                "fields": encoder({f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}),
            }
        return self.export(obj)

    def encode(
        self, value: Any, leaves: list | None = None, sources: dict | None = None
    ) -> tuple[Any, dict[str, torch.Tensor]]:
        """JSON and tensors for ``value``; tensors that require grad are appended to ``leaves``,
        and ``sources`` maps each tensor's key to the tensor that was sent."""
        encoder = wire.Encoder(self._handle_out, self._identify)  # no closure over the encoder: no cycle holds it
        if sources is not None:
            encoder.sources = sources
        document = encoder(value)
        if leaves is not None:
            leaves.extend(t for t in encoder.sources.values() if t.requires_grad)
        return document, encoder.tensors

    def _identify(self, t: torch.Tensor) -> list[int]:
        """Which parameter ``t`` is, for the peer that keeps it: its id, and how many parameters
        sent before it had that id and were freed since (the peer would otherwise read a new
        parameter at a freed one's address as the old one, with the old values)."""
        sent = self.sent_params.get(id(t))
        if sent is None or sent[0]() is not t:
            sent = (weakref.ref(t), 0 if sent is None else sent[1] + 1)
            self.sent_params[id(t)] = sent
        return [id(t), sent[1]]

    def _handle_in(self, node: dict, decoder: wire.Decoder) -> Any:
        if "$own" in node:
            try:
                return self.exported[node["$own"]]
            except (KeyError, TypeError):
                raise wire.WireError("a handle to an object this side never exported") from None
        if "$iter" in node and isinstance(node["$iter"], list):
            return iter([decoder(v) for v in node["$iter"]])
        if "$ref" in node and isinstance(node["$ref"], int):
            ref = node["$ref"]
            if ref not in self.proxies:
                kind = node.get("kind")
                self.proxies[ref] = RemoteModule(self, ref) if kind == "module" else RemoteObject(self, ref, kind)
            return self.proxies[ref]
        if "$dataclass" in node and self.trusting:
            module, _, qualname = str(node["$dataclass"]).partition(":")
            klass = getattr(importlib.import_module(module), qualname)
            return klass(**decoder(node["fields"]))
        raise wire.WireError(f"a value this side does not accept: {sorted(node)[:3]}")

    def _tensor_in(self, node: dict, t: torch.Tensor, leaves: list) -> torch.Tensor:
        if self.trusting and node.get("grad") and t.is_floating_point():
            t.requires_grad_()
            leaves.append(t)
        param = node.get("param")
        if isinstance(param, list) and len(param) == 3 and all(type(v) is int for v in param):
            seen = self.params.get(param[0])  # one Parameter read twice is one tensor here
            if seen is not None and seen[0] == param[1:]:
                return seen[1]
            if not self.trusting:
                self.params_bytes += t.nelement() * t.element_size()
                if self.params_bytes > MAX_PARAMS:
                    raise wire.WireError(f"over {MAX_PARAMS // 2**20} MiB of parameters sent over one connection")
            self.params[param[0]] = (param[1:], t)
        return t

    def decode(self, node: Any, tensors: dict[str, torch.Tensor], leaves: list | None = None) -> Any:
        """The value of ``node``; on the trusting side, tensors sent with requires_grad get it
        back and are appended to ``leaves``."""
        found = [] if leaves is None else leaves
        return wire.Decoder(tensors, self._handle_in, lambda n, t: self._tensor_in(n, t, found))(node)

    # ------------------------------------------------------------------ requests

    def request(self, document: dict, tensors: dict[str, torch.Tensor]) -> tuple[dict, dict]:
        """Send a request and return its reply, serving the peer's requests meanwhile."""
        if self.broken:
            raise wire.PeerGone(self.broken)
        try:
            wire.send(self.wfd, wire.pack(document, tensors))
            while True:
                message, blobs = wire.receive(self.rfd, self.timeout)
                if "op" not in message:
                    if message.get("fork_ended") and document.get("op") != "exit":  # the fork serving it died
                        raise wire.PeerGone("the process that served the request ended")
                    return message, blobs
                self.serve(message, blobs)
                del message, blobs  # not held while the next message is read
        except (wire.WireError, TimeoutError) as err:
            self.broken = f"{type(err).__name__}: {err}"
            raise

    def serve(self, message: dict, blobs: dict[str, torch.Tensor]) -> None:
        """Answer one request of the peer."""
        try:
            value, extra, extra_tensors = self.handle(message, blobs)
            document, tensors = self.encode(value)
            reply: dict[str, Any] = {"value": document, **extra}
            tensors.update(extra_tensors)
        except Exception as err:  # any failure is the reply, not a crash
            reply, tensors = {"error": [type(err).__name__, str(err)[:4000]]}, {}
            if self.trusting:  # the child: where in the submission's cells it was raised
                reply["frames"] = cell_frames(err)
        wire.send(self.wfd, wire.pack(reply, tensors))

    def handle(self, message: dict, blobs: dict[str, torch.Tensor]) -> tuple[Any, dict, dict]:
        """The grader's side of callbacks: call an exported object, or read a public attribute."""
        target = self.exported.get(message.get("target"))  # type: ignore[arg-type]
        if target is None:
            raise LookupError("no such object")
        if message["op"] == "getattr":
            name = str(message.get("name"))
            if name.startswith("_"):
                raise AttributeError(f"{name} is not readable across the boundary")
            if isinstance(target, torch.nn.Module) and name in MODULE_CHANGES:
                raise AttributeError(f"{name} would change the grader's module: not callable across the boundary")
            return getattr(target, name), {}, {}
        if message["op"] == "call":
            args, kwargs = self.decode([message.get("args"), message.get("kwargs")], blobs)
            with bounded():
                return target(*args, **(kwargs or {})), {}, {}
        raise ValueError(f"unknown request {message['op']!r}")

    def _reply_value(self, reply: dict, blobs: dict) -> Any:
        if "error" in reply:
            error = reply["error"]
            if not (isinstance(error, list) and len(error) == 2):
                raise wire.WireError("a malformed error reply")
            exception = exception_for(str(error[0]), str(error[1]))
            exception.remote_frames = frames_in(reply.get("frames"))  # type: ignore[attr-defined]
            raise exception
        return self.decode(reply.get("value"), blobs)

    def getattr(self, ref: int, name: str) -> Any:
        reply, blobs = self.request({"op": "getattr", "target": ref, "name": name}, {})
        return self._reply_value(reply, blobs)

    def call(self, ref: int, args: tuple, kwargs: dict, **extra: Any) -> Any:
        """Call the peer's object ``ref``; the global random state and the grad mode travel
        with the call, and a scalar that needs a gradient comes back differentiable."""
        leaves: list[torch.Tensor] = []
        sources: dict[str, torch.Tensor] = {}
        document, tensors = self.encode([list(args), kwargs], leaves, sources)
        request = {
            "op": "call",
            "target": ref,
            "args": document[0],
            "kwargs": document[1],
            "grad": torch.is_grad_enabled(),
            "forbid": self.forbid,
            **extra,
        }
        tensors["rng"] = torch.get_rng_state()
        reply, blobs = self.request(request, tensors)
        rng = blobs.pop("rng", None)
        if isinstance(rng, torch.Tensor) and rng.dtype == torch.uint8 and rng.shape == tensors["rng"].shape:
            torch.set_rng_state(rng)
        value = self._reply_value(reply, blobs)
        copy_back(reply.get("changed"), blobs, {k: t for k, t in sources.items() if id(t) in self.writable})
        return differentiable(value, reply.get("grads"), blobs, leaves)

    @contextlib.contextmanager
    def writing_back(self, tensors: tuple[torch.Tensor, ...]) -> Iterator[None]:
        """While the block runs, a change the peer makes in place to one of ``tensors`` is made
        here too; any other tensor sent stays as it is."""
        added = {id(t) for t in tensors} - self.writable
        self.writable |= added
        try:
            yield
        finally:
            self.writable -= added

    @contextlib.contextmanager
    def forbidding(self, targets: list[str], instead: str) -> Iterator[None]:
        """While the block runs, the peer blocks ``targets`` around every call (core.forbidden)."""
        self.forbid.append((list(targets), instead))
        try:
            yield
        finally:
            self.forbid.pop()


class _OnTheOtherSide:
    """What every handle on an object of the child's answers: a call, and the checks' hooks
    (a sentinel, a scenario, tensors written back), each sent to the child over ``_remote``."""

    _remote: tuple[Connection, int, str | None]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        connection, ref, _ = self._remote
        return connection.call(ref, args, kwargs)

    def __remote_forbidden__(self, targets: list[str], instead: str) -> contextlib.AbstractContextManager:
        return self._remote[0].forbidding(targets, instead)

    def __remote_scenario__(self, function: Any, *args: Any) -> Any:
        return _scenario(self._remote[0], self._remote[1], function, args)

    def __remote_write_back__(self, tensors: tuple[torch.Tensor, ...]) -> contextlib.AbstractContextManager:
        return self._remote[0].writing_back(tensors)


class RemoteObject(_OnTheOtherSide):
    """A function, class or other object on the other side: call it, read its attributes."""

    def __init__(self, connection: Connection, ref: int, kind: str | None) -> None:
        object.__setattr__(self, "_remote", (connection, ref, kind))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        connection, ref, _ = self._remote
        return connection.getattr(ref, name)

    def __repr__(self) -> str:
        return f"<{self._remote[2] or 'object'} in the sandbox>"


class RemoteModule(_OnTheOtherSide, torch.nn.Module):
    """An ``nn.Module`` living in the child: every public attribute and method is the child's
    (``state_dict``, ``load_state_dict``, ``to``, ``eval``, ``forward``, ``attn_weights``...)."""

    def __init__(self, connection: Connection, ref: int) -> None:  # no nn.Module state: it is all there
        object.__setattr__(self, "_remote", (connection, ref, "module"))

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_"):
            return object.__getattribute__(self, name)
        connection, ref, _ = object.__getattribute__(self, "_remote")
        return connection.getattr(ref, name)

    def __repr__(self) -> str:
        return "<nn.Module in the sandbox>"


def _scenario(connection: Connection, ref: int, function: Any, args: tuple) -> Any:
    module, qualname = function.__module__, function.__qualname__
    if not module.startswith("autograder.checks.") or "." in qualname:
        raise ValueError("a scenario is a module-level function of autograder.checks")
    return connection.call(ref, args, {}, scenario=f"{module}:{qualname}")
