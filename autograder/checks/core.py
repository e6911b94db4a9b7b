"""What every check is made of: failures that teach, comparisons, and sentinels.

A check compares a student's candidate with the reference and, on failure, raises
``CheckFailed`` (an ``AssertionError``, so nbgrader scores the cell 0) whose message
says what was checked, what was expected, what was found and, where a known mistake
explains the difference, its name. Order of the comparisons: type and shape, then
dtype and device, then NaN and masking behaviour, then values.

Writing a check::

    @check
    def check_softmax(softmax, seed=0):
        x = random_tensor((2, 3, 5), seed)
        expected = reference.softmax(x, dim=-1)               # reference first ...
        with forbidden(softmax, ["torch.softmax", ...], instead="use torch.exp ..."):
            found = call(softmax, x, dim=-1, what="softmax(x, dim=-1)")  # ... candidate inside
        expect_close("softmax(x, dim=-1)", found, expected,
                     mistakes={"softmax over dim 0": lambda: reference.softmax(x, dim=0)})
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import sys
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import torch
from torch import Tensor


class CheckFailed(AssertionError):
    """A check found the candidate wrong; the message says how."""


class ForbiddenCall(CheckFailed):
    """The candidate called something the exercise asks the student to build."""


def check(fn: Callable[..., None]) -> Callable[..., None]:
    """Decorate a check: name it in the message, and hide our frames from the student."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        __tracebackhide__ = True
        try:
            fn(*args, **kwargs)
        except NotImplementedError:
            raise  # an untouched stub: let nbgrader show NotImplementedError as it is
        except CheckFailed as err:
            raise type(err)(f"{fn.__name__} failed.\n{err}") from None
        print(f"{fn.__name__} passed.")

    return wrapper


def fail(what: str, expected: str, found: str, mistake: str | None = None, hint: str | None = None) -> None:
    """Raise ``CheckFailed`` with the four parts of a teaching message."""
    __tracebackhide__ = True
    lines = [f"  checked:  {what}", f"  expected: {expected}", f"  found:    {found}"]
    if mistake:
        lines.append(f"  likely mistake: {mistake}")
    if hint:
        lines.append(f"  hint: {hint}")
    raise CheckFailed("\n".join(lines))


# ----------------------------------------------------------------------------- inputs

def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def random_tensor(shape: Sequence[int], seed: int, dtype: torch.dtype = torch.float32, scale: float = 1.0) -> Tensor:
    """Standard normal values times ``scale``, reproducible from ``seed``."""
    return torch.randn(*shape, generator=generator(seed), dtype=torch.float64).mul(scale).to(dtype)


def describe(x: Any) -> str:
    """``tensor of shape (2, 3), float32`` or the type and value of anything else."""
    if isinstance(x, Tensor):
        return f"tensor of shape {tuple(x.shape)}, {str(x.dtype).replace('torch.', '')}"
    if _is_remote(x):
        return repr(x)
    return f"{type(x).__name__} {x!r}"[:200]


def call(candidate: Callable[..., Any], *args: Any, what: str, **kwargs: Any) -> Any:
    """Call the candidate; an exception other than NotImplementedError becomes a failure
    that says which call raised it."""
    __tracebackhide__ = True
    try:
        return candidate(*args, **kwargs)
    except (NotImplementedError, CheckFailed):
        raise
    except Exception as err:  # noqa: BLE001 - any error of the student's is reported, not crashed on
        fail(what, "a result", f"{type(err).__name__}: {err}",
             hint="read the error above: it was raised inside your code.")


# ----------------------------------------------------------------------------- comparisons

def expect_tensor(what: str, found: Any) -> Tensor:
    __tracebackhide__ = True
    if not isinstance(found, Tensor):
        fail(what, "a torch.Tensor", describe(found))
    return found


def expect_shape(what: str, found: Any, shape: Sequence[int], mistakes: Mapping[str, Sequence[int]] | None = None) -> Tensor:
    """Fail unless ``found`` is a tensor of exactly ``shape``; name a mistake whose shape it has."""
    __tracebackhide__ = True
    found = expect_tensor(what, found)
    if tuple(found.shape) != tuple(shape):
        mistake = next((name for name, s in (mistakes or {}).items() if tuple(s) == tuple(found.shape)), None)
        fail(what, f"shape {tuple(shape)}", f"shape {tuple(found.shape)}", mistake)
    return found


def _as_float64(x: Tensor) -> Tensor:
    return x.detach().to("cpu", torch.float64) if x.is_floating_point() else x.detach().cpu().double()


def _close(found: Tensor, expected: Tensor, atol: float, rtol: float) -> bool:
    a, b = _as_float64(found), _as_float64(expected)
    return a.shape == b.shape and bool(torch.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True))


def _matching_mistake(found: Tensor, mistakes: Mapping[str, Callable[[], Any] | Any] | None,
                      atol: float, rtol: float) -> str | None:
    return next((name for name, value in _evaluated(mistakes).items() if _close(found, value, atol, rtol)), None)


def expect_close(
    what: str, found: Any, expected: Tensor, *, atol: float = 1e-5, rtol: float = 1e-4,
    mistakes: Mapping[str, Callable[[], Any] | Any] | None = None, check_dtype: bool = True,
    hint: str | None = None,
) -> Tensor:
    """Shape, dtype, device, NaN, then values; on a difference, name the known mistake
    (a ``{name: wrong output or function giving it}`` entry) that the candidate matches."""
    __tracebackhide__ = True
    found = expect_tensor(what, found)
    if tuple(found.shape) != tuple(expected.shape):  # the wrong variants are computed only on failure
        expect_shape(what, found, expected.shape, {name: v.shape for name, v in _evaluated(mistakes).items()})
    if check_dtype and found.dtype != expected.dtype:
        fail(what, f"dtype {expected.dtype}", f"dtype {found.dtype}",
             hint="keep the dtype of the inputs: do not create float32 tensors "
                  "(torch.tensor(...), torch.zeros(...)) without dtype=x.dtype.")
    if found.device != expected.device:
        fail(what, f"device {expected.device}", f"device {found.device}",
             hint="create new tensors on the inputs' device (device=x.device).")
    a, b = _as_float64(found), _as_float64(expected)
    nan_found, nan_expected = torch.isnan(a), torch.isnan(b)
    if bool((nan_found & ~nan_expected).any()):
        where = tuple(int(i) for i in torch.nonzero(nan_found & ~nan_expected)[0])
        fail(what, "finite values (no NaN)", f"NaN at index {where}",
             _matching_mistake(found, mistakes, atol, rtol), hint)
    if not _close(found, expected, atol, rtol):
        diff = (a - b).abs().nan_to_num(nan=float("inf"))
        flat = int(diff.argmax())
        where = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape)) if diff.dim() else ()
        found_v, expected_v = a.reshape(-1)[flat].item(), b.reshape(-1)[flat].item()
        fail(what, f"the reference's values within atol={atol:g}, rtol={rtol:g}",
             f"greatest difference {diff.max().item():.3g} at index {where}: "
             f"yours {found_v:.6g}, reference {expected_v:.6g}",
             _matching_mistake(found, mistakes, atol, rtol), hint)
    return found


def _evaluated(mistakes: Mapping[str, Callable[[], Any] | Any] | None) -> dict[str, Tensor]:
    """The wrong variants' outputs, computed without autograd (a variant that needs a
    backward pass enables it itself); a variant that cannot be computed matches nothing."""
    out = {}
    for name, wrong in (mistakes or {}).items():
        try:
            with torch.no_grad():
                value = wrong() if callable(wrong) else wrong
        except Exception:  # noqa: BLE001
            continue
        if isinstance(value, Tensor):
            out[name] = value
    return out


def expect_equal(what: str, found: Any, expected: Any, mistakes: Mapping[str, Any] | None = None,
                 hint: str | None = None) -> Any:
    """Exact equality for ints, bools, tuples and integer or boolean tensors."""
    __tracebackhide__ = True
    if isinstance(expected, Tensor):
        found = expect_shape(what, found, expected.shape)
        if found.dtype != expected.dtype:
            fail(what, f"dtype {expected.dtype}", f"dtype {found.dtype}", hint=hint)
        if not torch.equal(found.cpu(), expected.cpu()):
            where = tuple(int(i) for i in torch.nonzero(found.cpu() != expected.cpu())[0])
            mistake = next((n for n, v in _evaluated(mistakes).items()
                            if v.shape == found.shape and torch.equal(found.cpu(), v.cpu())), None)
            fail(what, f"{expected.tolist()}" if expected.numel() <= 64 else "the reference's values",
                 f"{found.tolist()}" if found.numel() <= 64 else f"a difference at index {where}",
                 mistake, hint)
        return found
    if (type(found) is bool) != (type(expected) is bool) or found != expected:
        mistake = next((n for n, v in (mistakes or {}).items() if v == found), None)
        fail(what, repr(expected), repr(found), mistake, hint)
    return found


def load_reference_weights(candidate: torch.nn.Module, reference: torch.nn.Module, what: str) -> None:
    """Copy the reference's parameters into the candidate; fail naming the parameters that
    are missing, unexpected or of the wrong shape."""
    __tracebackhide__ = True
    if not isinstance(candidate, torch.nn.Module):
        fail(what, "an nn.Module", describe(candidate), hint="subclass torch.nn.Module and call super().__init__().")
    ref_state, cand_state = reference.state_dict(), candidate.state_dict()
    missing = sorted(set(ref_state) - set(cand_state))
    unexpected = sorted(set(cand_state) - set(ref_state))
    if missing or unexpected:
        fail(what, f"parameters named {sorted(ref_state)}",
             f"missing {missing}, unexpected {unexpected}",
             hint="use the attribute names of the docstring (they are PyTorch's names).")
    for name, value in ref_state.items():
        if cand_state[name].shape != value.shape:
            fail(f"{what}: parameter {name}", f"shape {tuple(value.shape)}", f"shape {tuple(cand_state[name].shape)}",
                 hint="nn.Linear(in, out) stores its weight as (out, in).")
    candidate.load_state_dict(ref_state)


# ----------------------------------------------------------------------------- sentinels

def _resolve(path: str) -> tuple[Any, str, Any]:
    """``"torch.nn.functional.softmax"`` -> (owner, attribute name, current value)."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            owner: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:-1]:
            owner = getattr(owner, name)
        return owner, parts[-1], getattr(owner, parts[-1])
    raise ValueError(f"cannot resolve {path!r}")


def _same(value: Any, target: Any) -> bool:
    """The same object, or a copy of it from an earlier import of our package."""
    if value is target:
        return True
    mod, qual = getattr(target, "__module__", None), getattr(target, "__qualname__", None)
    return (isinstance(mod, str) and mod.startswith("autograder.") and qual is not None
            and getattr(value, "__module__", None) == mod and getattr(value, "__qualname__", None) == qual)


def _candidate_globals(candidate: Any) -> list[dict]:
    """The global namespaces the candidate's code reads (a notebook's, usually)."""
    functions = []
    if isinstance(candidate, type):
        for klass in candidate.__mro__:
            if klass.__module__.startswith(("torch", "builtins")):
                continue
            functions += [v for v in vars(klass).values() if isinstance(v, types.FunctionType)]
    elif isinstance(candidate, types.FunctionType):
        functions = [candidate]
    elif isinstance(candidate, torch.nn.Module):
        return _candidate_globals(type(candidate))
    elif isinstance(candidate, functools.partial):
        return _candidate_globals(candidate.func)
    seen, out = set(), []
    for f in functions:
        if id(f.__globals__) not in seen:
            seen.add(id(f.__globals__))
            out.append(f.__globals__)
    return out


def _is_remote(candidate: Any) -> bool:
    """A handle to the student's answer in the independent check's sandboxed child
    (autograder.grading.remote), looked up without importing the grading package."""
    remote = sys.modules.get("autograder.grading.remote")
    return remote is not None and isinstance(candidate, (remote.RemoteObject, remote.RemoteModule))


def beside(candidate: Any, scenario: Callable[..., Any], *args: Any) -> Any:
    """``scenario(candidate, *args)``, run where the candidate lives: here, or in the
    sandboxed child of the independent check when the candidate is a handle to it. For a
    check that needs more than calls (a training step mutating a model and an optimizer):
    the scenario, a module-level function of the check's module, builds what it needs from
    the plain ``args`` and returns plain results."""
    __tracebackhide__ = True
    if _is_remote(candidate):
        return candidate.__remote_scenario__(scenario, *args)
    return scenario(candidate, *args)


class _Sentinel:
    def __init__(self, path: str, message: str, hits: list[str]) -> None:
        self.path, self.message, self.hits = path, message, hits

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        self.hits.append(self.path)
        raise ForbiddenCall(self.message)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:  # works as a method too
        return self


@contextlib.contextmanager
def forbidden(candidate: Any, targets: Sequence[str], instead: str) -> Iterator[None]:
    """While the block runs, calling any of ``targets`` (dotted paths: ``"torch.softmax"``,
    ``"torch.Tensor.softmax"``, ``"autograder.reference.softmax"``, a class's
    ``"...MultiheadAttention.forward"``) fails with a message telling the student what to
    build instead. A reference class is blocked by blocking its ``__init__`` and ``forward``.

    Names the candidate's own module bound to those objects (``from torch import
    softmax``) are blocked too, and so are copies from an earlier import of this package.
    A call the candidate swallows with ``try``/``except`` still fails afterwards.
    """
    __tracebackhide__ = True
    if _is_remote(candidate):  # the candidate runs in the sandboxed child: block there
        with candidate.__remote_forbidden__(list(targets), instead):
            yield
        return
    hits: list[str] = []
    patches: list[tuple[Any, str, bool, Any]] = []  # (owner, name, was in owner's __dict__, old value)

    def patch(owner: Any, name: str, value: Any) -> None:
        own = name in getattr(owner, "__dict__", {})
        patches.append((owner, name, own, owner.__dict__[name] if own else None))
        setattr(owner, name, value)

    for path in targets:  # a candidate that *is* a forbidden object is refused before it runs
        obj = _resolve(path)[2]
        if _same(candidate, obj):
            whose = ("the course's reference implementation" if path.startswith("autograder.")
                     else "PyTorch's own version of what this exercise asks you to build")
            raise ForbiddenCall(f"your answer is `{path}` itself, {whose}. {instead}")
    blocked_classes: list[type] = []
    expanded: list[str] = []
    for path in targets:
        owner, name, obj = _resolve(path)
        if isinstance(obj, type) and obj.__module__.startswith("autograder."):
            blocked_classes.append(obj)
            expanded += [f"{path}.__init__", f"{path}.forward"]
        else:
            expanded.append(path)
    resolved = []
    for path in expanded:
        owner, name, obj = _resolve(path)
        label = path.rsplit(".", 1)[0] if path.endswith((".__init__", ".forward")) and isinstance(owner, type) \
            and owner in blocked_classes else path
        whose = ("the course's reference implementation" if path.startswith("autograder.")
                 else "PyTorch's own version of what this exercise asks you to build")
        sentinel = _Sentinel(label, f"your code calls `{label}`, {whose}. {instead}", hits)
        resolved.append((obj, sentinel))
        patch(owner, name, sentinel)
        if path.startswith("autograder.") and not isinstance(owner, type):
            for mod_name, mod in list(sys.modules.items()):
                if mod_name.startswith("autograder.") and mod is not owner and _same(getattr(mod, name, None), obj):
                    patch(mod, name, sentinel)
    stale_classes = set()
    for namespace in _candidate_globals(candidate):
        for key, value in list(namespace.items()):
            if isinstance(value, types.ModuleType):
                continue
            for obj, sentinel in resolved:
                if _same(value, obj):
                    patches.append((namespace, key, True, value))
                    namespace[key] = sentinel
            if isinstance(value, type):
                stale_classes.add(value)
    if isinstance(candidate, type):
        stale_classes.update(candidate.__mro__)
    for klass in stale_classes:
        for blocked in blocked_classes:
            if klass is not blocked and _same(klass, blocked):
                message = (f"your code uses `{blocked.__module__}.{blocked.__qualname__}`, the course's "
                           f"reference implementation. {instead}")
                for name in ("__init__", "forward"):
                    patch(klass, name, _Sentinel(blocked.__qualname__, message, hits))
    try:
        yield
    finally:
        for owner, name, own, old in reversed(patches):
            if isinstance(owner, dict):
                owner[name] = old
            elif own:
                setattr(owner, name, old)
            else:
                delattr(owner, name)
    if hits:
        raise ForbiddenCall(f"your code calls `{hits[0]}`. {instead}")

