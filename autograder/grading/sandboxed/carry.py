"""Error carried forward, in a fork of the child: for one check, each function of the earlier
exercises the student got wrong answers with what the lab's solution computes, in a fresh copy
of the submission that nothing has called yet.

The grader runs every such check twice, in two forks made alike (``given``: the solution's
results; not ``given``: the student's own), and credits the exercise only when the first passes
and the second fails. Both forks bind the same way, so what an answer could observe of the
binding is the same in both and only the values returned differ:

- each call runs the solution *and* the student's own function, each on copies of the
  arguments, the random state put back between them; it returns (or raises) one of the two
  results, as ``given`` says; the student's side effects happen in both forks;
- a plain function the student's cells defined (no closure) keeps its identity, defaults and attributes:
  only its code object becomes a small trampoline, in both forks; any other name (a lambda
  with a closure, an instance) is rebound in the namespace, in both forks;
- a class becomes the solution's (its attributes copied into the student's class object) only
  in the ``given`` fork: a class's own methods cannot run beside the solution's on one object.

Nothing of the grader is reached from here: the solution cells run in a copy of the namespace.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import torch

_KEEP = frozenset({"__dict__", "__weakref__", "__module__", "__qualname__", "__doc__"})
_MISSING = object()
HOOK = "__autograder_carry__"  # the trampolines' table, in the namespace of both forks alike


def _copy(value: Any) -> Any:
    """The arguments as each side gets them: tensors cloned (autograd follows the clone), lists,
    tuples and dicts copied through, anything else as it is."""
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, list | tuple):
        items = [_copy(v) for v in value]
        return type(value)(items) if type(value) in (list, tuple) else value
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    return value


def _outcome(function: Callable[..., Any] | None, name: str, args: tuple, kwargs: dict) -> tuple[bool, Any]:
    """(True, value) or (False, the Exception raised): ``function`` called on copies."""
    if function is None:
        return False, NameError(f"name '{name}' is not defined")
    try:
        return True, function(*_copy(args), **_copy(kwargs))
    except Exception as err:  # either side's failure is its result; BaseExceptions pass in both forks
        return False, err


class Both:
    """A function of an earlier exercise in a fork: the solution and the student's own, both run."""

    def __init__(self, name: str, own: Callable[..., Any] | None, solution: Callable[..., Any], given: bool) -> None:
        self.name, self.own, self.solution, self.given = name, own, solution, given

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        before = torch.get_rng_state()
        solution = _outcome(self.solution, self.name, args, kwargs)
        after_solution = torch.get_rng_state()
        torch.set_rng_state(before)
        own = _outcome(self.own, self.name, args, kwargs)
        if self.given:
            torch.set_rng_state(after_solution)
        ok, value = solution if self.given else own
        if not ok:
            raise value
        return value


def _trampoline(key: int) -> types.CodeType:
    source = f"def trampoline(*args, **kwargs):\n    return {HOOK}[{key}](*args, **kwargs)\n"
    scope: dict[str, Any] = {}
    exec(compile(source, "<carry>", "exec"), scope)  # our own two lines
    return scope["trampoline"].__code__


def _own_copy(old: Any) -> Callable[..., Any] | None:
    """The student's function as it was, callable beside the trampoline that replaces its code."""
    if isinstance(old, types.FunctionType):
        copy = types.FunctionType(old.__code__, old.__globals__, old.__name__, old.__defaults__, old.__closure__)
        copy.__kwdefaults__ = old.__kwdefaults__
        return copy
    return old if callable(old) else None


def _rehomed(value: Any, new: type, old: type) -> Any:
    """A method of the solution's class ``new`` made the student's class ``old``'s: its
    ``__class__`` cell (what ``super()`` reads) points at ``old``."""
    if not isinstance(value, types.FunctionType) or "__class__" not in value.__code__.co_freevars:
        return value
    cells = tuple(
        types.CellType(old) if name == "__class__" and cell.cell_contents is new else cell
        for name, cell in zip(value.__code__.co_freevars, value.__closure__ or (), strict=True)
    )
    method = types.FunctionType(value.__code__, value.__globals__, value.__name__, value.__defaults__, cells)
    method.__kwdefaults__, method.__qualname__ = value.__kwdefaults__, value.__qualname__
    return method


def _into_class(old: type, new: type) -> bool:
    try:
        for key, value in vars(new).items():
            if key not in _KEEP:
                setattr(old, key, _rehomed(value, new, old))
    except (TypeError, AttributeError):
        return False
    return True


def bind(
    namespace: dict[str, Any],
    cells: list[str],
    run: Callable[[list[str], dict[str, Any]], list[str | None]],
    *,
    given: bool,
) -> list[str]:
    """Run the solution ``cells`` (with ``run``) in a copy of ``namespace`` and bind each function
    or class they define, as the module says; the names bound, in order. The fork that calls
    this ends after its one check, so nothing is put back."""
    scratch = dict(namespace)
    run(cells, scratch)
    table: dict[int, Both] = namespace.setdefault(HOOK, {})
    bound: list[str] = []
    for name, new in scratch.items():
        old = namespace.get(name, _MISSING)
        if name.startswith("__") or old is new or not isinstance(new, types.FunctionType | type):
            continue
        if isinstance(new, type):
            if isinstance(old, type) and given and not _into_class(old, new):
                namespace[name] = new
            elif not isinstance(old, type) and given:
                namespace[name] = new
            bound.append(name)
            continue
        key = len(table)
        table[key] = Both(name, _own_copy(None if old is _MISSING else old), new, given)
        if isinstance(old, types.FunctionType) and old.__globals__ is namespace and not old.__code__.co_freevars:
            old.__code__ = _trampoline(key)
        else:
            namespace[name] = types.FunctionType(_trampoline(key), namespace, name)
        bound.append(name)
    return bound
