"""Sentinels: while a candidate runs, what the exercise asks the student to build fails.

``forbidden`` replaces PyTorch's op for the exercise and the reference's function by
sentinels that raise ``ForbiddenCall`` with a message saying what to build instead;
``replaced`` puts any stand-in in place of a function (``dropout.fixed_dropout`` uses it).
Both patch the candidate's own namespace too, and undo everything afterwards. Checks import
them from here (this module never imports ``core``). ``forbidden`` also swaps the code of
a blocked plain function for one that refuses, so that the function object itself refuses
wherever it was captured before the check (a default argument, a closure, a ``functools.partial``, a list);
while the candidate runs, ``clones`` refuses the blocked functions' code under any other
function object, and ``dispatch`` refuses PyTorch's targets by their built-ins and by the ATen
operations only they produce (``torch.ops.aten.relu``). ``sentinel_targets`` finds what
they patch.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import sys
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from autograder.checks.kit import clones, dispatch
from autograder.checks.kit.candidates import is_remote
from autograder.checks.kit.failures import ForbiddenCall
from autograder.checks.kit.sentinel_targets import candidate_globals, expand_classes, resolve, same


class _Sentinel:
    def __init__(self, path: str, message: str, hits: list[str]) -> None:
        self.path, self.message, self.hits = path, message, hits
        self.function: types.FunctionType | None = None  # whose code it swapped in, if any

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.hits.append(self.path)
        raise ForbiddenCall(self.message)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:  # works as a method too
        return self


# Swapped code objects: a blocked function object itself refuses, wherever it was captured.
_KEYS = itertools.count()
_SWAPPED: dict[str, _Sentinel] = {}  # key baked into a sentinel code -> the sentinel recording its hits
_CODES: dict[types.FunctionType, list[types.CodeType]] = {}  # function -> [own code, sentinel codes in force]
# Targets blocked through module attributes only, because allowed code calls their function object
# while they are forbidden. None so far (every check's right answers and every lab's solutions pass).
_NO_CODE_SWAP: frozenset[str] = frozenset()
# PyTorch's ops written in C: refused where PyTorch dispatches them (dispatch.RefuseBuiltins), not by code.
_BUILTIN_KINDS = (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)


def _refused(key: str, message: str) -> ForbiddenCall:
    """What a sentinel code raises (its hit recorded by the block that swapped it in)."""
    sentinel = _SWAPPED.get(key)
    if sentinel is not None:
        sentinel.hits.append(sentinel.path)
    return ForbiddenCall(message)


def _sentinel_code(function: types.FunctionType, key: str, message: str) -> types.CodeType:
    """A code object that refuses with ``message``. It has as many free variables as ``function``
    (a code can replace another only then) and reaches ``_refused`` by ``__import__``, not
    through ``function``'s globals."""
    free = [f"_{i}" for i in range(len(function.__code__.co_freevars))]
    lines = [
        "def _outer():",
        *([f"    {' = '.join(free)} = None"] if free else []),
        "    def refused(*args, **kwargs):",
        *([f"        {', '.join(free)},"] if free else []),
        f"        raise __import__('autograder.checks.kit.sentinels', fromlist=['_refused'])._refused({key!r}, "
        f"{message!r})",
        "    return refused",
    ]
    namespace: dict[str, Any] = {"__builtins__": __builtins__}
    exec(compile("\n".join(lines), f"<forbidden {function.__qualname__}>", "exec"), namespace)
    return namespace["_outer"]().__code__.replace(
        co_name=function.__code__.co_name, co_qualname=function.__code__.co_qualname
    )


def _function_of(obj: Any) -> types.FunctionType | None:
    """The plain function whose code to swap: ``obj`` itself, a bound method's function, or the one
    an enclosing block guards. A decorated target (``@torch.no_grad()``) is its wrapper, the object
    a capture holds; the function under ``__wrapped__`` is swapped beside it."""
    if isinstance(obj, _Sentinel):
        return obj.function
    obj = getattr(obj, "__func__", obj)
    return obj if isinstance(obj, types.FunctionType) else None


def _whose(path: str) -> str:
    return (
        "the course's reference implementation"
        if path.startswith("autograder.")
        else "PyTorch's own version of what this exercise asks you to build"
    )


class _Patches:
    """Attributes and namespace entries set for the duration of a block, undone in reverse."""

    def __init__(self) -> None:
        self.undo: list[tuple[Any, str, bool, Any]] = []  # (owner, name, was in owner's __dict__, old value)
        self.codes: list[tuple[types.FunctionType, types.CodeType, str]] = []  # (function, sentinel code, key)

    def set(self, owner: Any, name: str, value: Any) -> None:
        own = name in getattr(owner, "__dict__", {})
        self.undo.append((owner, name, own, owner.__dict__[name] if own else None))
        setattr(owner, name, value)

    def set_item(self, namespace: dict, key: str, value: Any) -> None:
        self.undo.append((namespace, key, True, namespace[key]))
        namespace[key] = value

    def swap_code(self, function: types.FunctionType, sentinel: _Sentinel) -> None:
        """Until ``restore``, ``function`` runs a code object that raises ``sentinel``'s refusal."""
        key = f"{next(_KEYS)}"
        code = _sentinel_code(function, key, sentinel.message)
        _SWAPPED[key] = sentinel
        _CODES.setdefault(function, [function.__code__]).append(code)
        self.codes.append((function, code, key))
        function.__code__ = code

    def restore(self) -> None:
        for function, code, key in reversed(self.codes):  # any order of exits restores the right code
            stack = _CODES[function]
            del stack[next(i for i in range(len(stack) - 1, 0, -1) if stack[i] is code)]
            function.__code__ = stack[-1]  # the code of a block still in force, else the function's own
            if len(stack) == 1:
                del _CODES[function]
            _SWAPPED.pop(key, None)
        self.codes.clear()
        for owner, name, own, old in reversed(self.undo):
            if isinstance(owner, dict):
                owner[name] = old
            elif own:
                setattr(owner, name, old)
            else:
                delattr(owner, name)
        self.undo.clear()


def _refuse_forbidden_candidate(candidate: Any, targets: Sequence[str], instead: str) -> None:
    """A candidate that *is* a forbidden object is refused before it runs."""
    for path in targets:
        if same(candidate, resolve(path)[2]):
            raise ForbiddenCall(f"your answer is `{path}` itself, {_whose(path)}. {instead}")


def _install(patches: _Patches, path: str, value: Any) -> Any:
    """Set ``path`` to ``value``, and a reference function also where our other modules
    imported it; return what was there."""
    owner, name, obj = resolve(path)
    patches.set(owner, name, value)
    if path.startswith("autograder.") and not isinstance(owner, type):
        for mod_name, mod in list(sys.modules.items()):
            if mod_name.startswith("autograder.") and mod is not owner and same(getattr(mod, name, None), obj):
                patches.set(mod, name, value)
    return obj


def _rebind_candidate_names(patches: _Patches, candidate: Any, replaced: list[tuple[Any, Any]]) -> set[type]:
    """Names in the candidate's globals bound to a replaced object (``from torch import
    softmax``) get its replacement; returns the classes those globals hold."""
    classes: set[type] = set()
    for namespace in candidate_globals(candidate):
        for key, value in list(namespace.items()):
            if isinstance(value, types.ModuleType):
                continue
            for obj, replacement in replaced:
                if same(value, obj):
                    patches.set_item(namespace, key, replacement)
            if isinstance(value, type):
                classes.add(value)
    return classes


def _block_stale_classes(
    patches: _Patches, classes: set[type], blocked: list[type], instead: str, hits: list[str]
) -> None:
    """A copy of a blocked class from an earlier import of our package is blocked too."""
    for klass in classes:
        for target in blocked:
            if klass is not target and same(klass, target):
                message = (
                    f"your code uses `{target.__module__}.{target.__qualname__}`, the course's "
                    f"reference implementation. {instead}"
                )
                for name in ("__init__", "forward"):
                    patches.set(klass, name, _Sentinel(target.__qualname__, message, hits))


@contextlib.contextmanager
def replaced(candidate: Any, replacements: Mapping[str, Any]) -> Iterator[None]:
    """While the block runs, each dotted path of ``replacements`` (and every name of the
    candidate's own module bound to the same object) holds its replacement. Used here, where
    the candidate runs: a check reaches the sandboxed child through ``beside``."""
    patches = _Patches()
    try:
        swapped = [(_install(patches, path, value), value) for path, value in replacements.items()]
        _rebind_candidate_names(patches, candidate, swapped)
        yield
    finally:
        patches.restore()


@contextlib.contextmanager
def forbidden(candidate: Any, targets: Sequence[str], instead: str) -> Iterator[None]:
    """While the block runs, calling any of ``targets`` (dotted paths: ``"torch.softmax"``,
    ``"torch.Tensor.softmax"``, ``"autograder.reference.softmax"``, a class's
    ``"...MultiheadAttention.forward"``) fails with a message telling the student what to
    build instead. A reference class is blocked by blocking its ``__init__`` and ``forward``.

    Names the candidate's own module bound to those objects (``from torch import
    softmax``) are blocked too, and so are copies from an earlier import of this package.
    A call the candidate swallows with ``try``/``except`` still fails afterwards. A target that
    is a plain function also runs a refusing code object while the block lasts, so that the
    function object refuses wherever it was captured before (a default argument, a closure,
    ``functools.partial``, a list); its own code is back afterwards, whatever happened.
    """
    __tracebackhide__ = True
    if is_remote(candidate):  # the candidate runs in the sandboxed child: block there
        with candidate.__remote_forbidden__(list(targets), instead):
            yield
        return
    _refuse_forbidden_candidate(candidate, targets, instead)
    hits: list[str] = []
    patches = _Patches()
    builtins: dict[int, tuple[Any, _Sentinel]] = {}
    codes: dict[int, tuple[types.CodeType, clones.Refusal]] = {}  # the blocked functions' own codes
    try:
        expanded, blocked = expand_classes(targets)
        sentinels = [_block(path, blocked, instead, hits, patches, builtins, codes) for path in expanded]
        classes = _rebind_candidate_names(patches, candidate, sentinels)
        if isinstance(candidate, type):
            classes.update(candidate.__mro__)
        _block_stale_classes(patches, classes, blocked, instead, hits)
        ops = {op: _op_refusal(path, instead, hits) for op, path in dispatch.refused_ops(expanded).items()}
        with (
            dispatch.RefuseBuiltins(builtins) if builtins else contextlib.nullcontext(),
            dispatch.RefuseOps(ops) if ops else contextlib.nullcontext(),
            clones.refusing(codes),
        ):
            yield
    finally:
        patches.restore()
    if hits:
        raise ForbiddenCall(f"your code calls `{hits[0]}`. {instead}")


def _block(
    path: str,
    blocked: list[type],
    instead: str,
    hits: list[str],
    patches: _Patches,
    builtins: dict[int, tuple[Any, _Sentinel]],
    codes: dict[int, tuple[types.CodeType, clones.Refusal]],
) -> tuple[Any, _Sentinel]:
    """Put a sentinel in place of one target of ``forbidden`` (``path``); return (what it replaced,
    the sentinel). A plain function also refuses through its own code (noted in ``codes``), a
    builtin of torch through the dispatcher (noted in ``builtins``)."""
    owner = resolve(path)[0]
    label = path.rsplit(".", 1)[0] if path.endswith((".__init__", ".forward")) and owner in blocked else path
    sentinel = _Sentinel(label, f"your code calls `{label}`, {_whose(path)}. {instead}", hits)
    original = _install(patches, path, sentinel)
    function = _function_of(original)
    # not an inherited method (nn.Module.__init__ for a class without its own)
    if (
        function is not None
        and path not in _NO_CODE_SWAP
        and (not isinstance(owner, type) or path.rsplit(".", 1)[1] in vars(owner))
    ):
        sentinel.function = function
        inner = inspect.unwrap(function)  # a decorator's wrapper: the function it calls, captured alone
        inner = inner if isinstance(inner, types.FunctionType) else function
        for f in dict.fromkeys([function, inner]):
            refusal = _copy_refusal(label, path, instead, hits)
            codes.update({id(c): (c, refusal) for c in clones.codes_of(f, _CODES.get(f, [f.__code__])[0])})
            patches.swap_code(f, sentinel)
    elif path.startswith("torch.") and isinstance(original, _BUILTIN_KINDS):
        builtins[id(original)] = (original, sentinel)
    return original, sentinel


def _copy_refusal(label: str, path: str, instead: str, hits: list[str]) -> clones.Refusal:
    """What a copy of a blocked function's code does when it runs: the hit named, and the road."""

    def refuse() -> BaseException:
        hits.append(f"{label} (its code under another function object)")
        return ForbiddenCall(
            f"your code runs the code of `{label}`, {_whose(path)}, under another function "
            f"object (one made from its __code__, or a copy of it). {instead}"
        )

    return refuse


def _op_refusal(path: str, instead: str, hits: list[str]) -> Callable[[str], BaseException]:
    """What a refused ATen operation does when it is dispatched: the hit named, and the road."""

    def refuse(op: str) -> BaseException:
        hits.append(f"{path} (as the operation aten.{op})")
        return ForbiddenCall(
            f"your code reaches `{path}` as PyTorch's operation aten.{op} (torch.ops.aten.{op} "
            f"and the like are refused too), {_whose(path)}. {instead}"
        )

    return refuse
