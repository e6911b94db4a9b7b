"""Error carried forward, in the child: for one check, the answers of earlier exercises that
the student got wrong are made the lab's solutions, then put back as they were.

The grader sends the solution cells of those exercises; they run in a copy of the
submission's namespace, and each function or class they define is bound into the student's
own object of that name, not beside it: a function takes the solution's code (its identity,
and every reference to it, a default argument or a closure that holds it included, stay the
student's), a class the solution's attributes. So an answer cannot tell the binding from a
correct helper of its own except by what the helper returns. A name the student bound to
something else (a lambda with a closure, an ``nn.Softmax`` instance) is rebound in the
namespace instead, which reaches calls by name only. ``unbind`` puts everything back.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

_KEEP = frozenset({"__dict__", "__weakref__", "__module__", "__qualname__", "__doc__"})
_MISSING = object()


def _into_function(old: types.FunctionType, new: types.FunctionType, undo: list[Callable[[], None]]) -> bool:
    saved = (old.__code__, old.__defaults__, old.__kwdefaults__)
    try:
        old.__code__ = new.__code__  # ValueError when their closures differ in size
    except ValueError:
        return False
    old.__defaults__, old.__kwdefaults__ = new.__defaults__, new.__kwdefaults__

    def restore() -> None:
        old.__code__, old.__defaults__, old.__kwdefaults__ = saved

    undo.append(restore)
    return True


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


def _into_class(old: type, new: type, undo: list[Callable[[], None]]) -> bool:
    try:
        for key, value in vars(new).items():
            if key in _KEEP:
                continue
            before = vars(old).get(key, _MISSING)
            setattr(old, key, _rehomed(value, new, old))
            undo.append(_put_back(old, key, before))
    except (TypeError, AttributeError):
        return False
    return True


def _put_back(owner: type, key: str, before: Any) -> Callable[[], None]:
    def restore() -> None:
        if before is _MISSING:
            delattr(owner, key)
        else:
            setattr(owner, key, before)

    return restore


def _put_back_name(namespace: dict[str, Any], name: str, before: Any) -> Callable[[], None]:
    def restore() -> None:
        if before is _MISSING:
            namespace.pop(name, None)
        else:
            namespace[name] = before

    return restore


def bind(
    namespace: dict[str, Any], cells: list[str], run: Callable[[list[str], dict[str, Any]], list[str | None]]
) -> tuple[list[str], list[Callable[[], None]]]:
    """Run the solution ``cells`` (with ``run``) in a copy of ``namespace`` and bind what they
    define into the student's objects; the names bound, and the steps that undo it, in order."""
    scratch = dict(namespace)
    run(cells, scratch)
    bound: list[str] = []
    undo: list[Callable[[], None]] = []
    for name, new in scratch.items():
        old = namespace.get(name, _MISSING)
        if name.startswith("__") or old is new or not isinstance(new, types.FunctionType | type):
            continue
        if (
            isinstance(old, types.FunctionType)
            and isinstance(new, types.FunctionType)
            and _into_function(old, new, undo)
        ):
            pass
        elif isinstance(old, type) and isinstance(new, type) and old is not new and _into_class(old, new, undo):
            pass
        else:
            namespace[name] = new
            undo.append(_put_back_name(namespace, name, old))
        bound.append(name)
    return bound, undo


def unbind(undo: list[Callable[[], None]]) -> None:
    """Put back what ``bind`` changed, last change first."""
    while undo:
        undo.pop()()
