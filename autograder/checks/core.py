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
import os
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NoReturn, TypedDict, cast

import torch
from torch import Tensor

# ``failures``, ``candidates`` and ``sentinels`` never import this module; checks import their tools from here.
from autograder.checks.candidates import is_remote
from autograder.checks.failures import CheckFailed, ForbiddenCall
from autograder.checks.mistakes import forbidden_id, id_in_message, mistake_id
from autograder.checks.sentinels import forbidden, replaced

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # autograder/: the checks' own frames
_METHODS = frozenset({"forward", "__call__", "__init__", "step", "encode", "decode"})  # a class's: name the check's

__all__ = ["CheckFailed", "ForbiddenCall", "Tolerance", "beside", "call", "check", "describe", "dtype_name",
           "expect_close", "expect_equal", "expect_gradient", "expect_shape", "expect_tensor", "fail", "forbidden",
           "generator", "padded_targets", "random_tensor", "replaced", "seeded"]


def check(fn: Callable[..., None]) -> Callable[..., None]:
    """Decorate a check: name it in the message, and hide our frames from the student."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        __tracebackhide__ = True
        try:
            fn(*args, **kwargs)
        except NotImplementedError as err:
            if str(err).strip():  # a message of its own: not the released stub's bare `raise NotImplementedError()`
                raise
            raise NotImplementedError(not_answered(fn.__name__, err)) from None
        except CheckFailed as err:
            named = err.mistake_id
            if isinstance(err, ForbiddenCall) and named == "unnamed":  # a sentinel's refusal names the exercise
                named = forbidden_id(fn.__name__)
            elif named == "unnamed":  # raised where only its message crossed (a scenario in the sandboxed child)
                named = id_in_message(str(err))
            raise type(err)(f"{fn.__name__} failed.\n{err}", mistake_id=named) from None
        print(f"{fn.__name__} passed.")

    return wrapper


def not_answered(check_name: str, err: BaseException | None = None) -> str:
    """What a blank exercise's check says: the exercise is not answered yet, and how to answer it
    (the type stays ``NotImplementedError``: a blank answer, not a wrong one). The exercise is the
    function whose stub raised (a blank ``softmax`` under an answered ``self_attention``), found in
    ``err``'s frames (the submission's cells' frames when it was raised across the boundary), else
    the one the check is named after."""
    return (f"{_stub_name(err) or check_name.removeprefix('check_')} is not answered yet: replace "
            "`raise NotImplementedError()` with your code, then run this cell again.")


def _stub_name(err: BaseException | None) -> str | None:
    """The name of the function that raised ``err`` (innermost frame), when it is a student's
    exercise's name: not a method such as ``forward``, not private, not this package's code."""
    if err is None:
        return None
    remote = getattr(err, "remote_frames", None)
    if remote is not None:
        name = remote[-1][2] if remote else ""
    else:
        frames = traceback.extract_tb(err.__traceback__)
        inner = frames[-1] if frames else None
        name = "" if inner is None or inner.filename.startswith(_PACKAGE) else inner.name
    return name if name.isidentifier() and not name.startswith("_") and name not in _METHODS else None


def fail(what: str, expected: str, found: str, mistake: str | None = None, hint: str | None = None) -> NoReturn:
    """Raise ``CheckFailed`` with the four parts of a teaching message; ``mistake``'s text gives
    its stable id (``mistakes.mistake_id``)."""
    __tracebackhide__ = True
    lines = [f"  checked:  {what}", f"  expected: {expected}", f"  found:    {found}"]
    if mistake:
        lines.append(f"  likely mistake: {mistake}")
    if hint:
        lines.append(f"  hint: {hint}")
    raise CheckFailed("\n".join(lines), mistake_id=mistake_id(mistake))


# ----------------------------------------------------------------------------- inputs

def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def random_tensor(shape: Sequence[int], seed: int, dtype: torch.dtype = torch.float32, scale: float = 1.0) -> Tensor:
    """Standard normal values times ``scale``, reproducible from ``seed``."""
    return torch.randn(*shape, generator=generator(seed), dtype=torch.float64).mul(scale).to(dtype)


def padded_targets(shape: Sequence[int], pad_id: int, lengths: Sequence[int], seed: int) -> Tensor:
    """Target ids ``(B, T)`` in 0..V-1 for logits of ``shape`` ``(B, T, V)``: none is ``pad_id``
    among row b's first ``lengths[b]``, all are after them."""
    b, t, v = shape
    ids = torch.randint(0, v, (b, t), generator=generator(seed))
    ids[ids == pad_id] = (pad_id + 1) % v
    for row, n in enumerate(lengths):
        ids[row, n:] = pad_id
    return ids


def seeded(make: Callable[..., Any], seed: int, *args: Any, **kwargs: Any) -> Any:
    """``make(*args, **kwargs)`` drawing from the global RNG seeded with ``seed``, which is put
    back as it was afterwards (the student's random state is not disturbed)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return make(*args, **kwargs)


def dtype_name(dtype: torch.dtype) -> str:
    """``float32`` for ``torch.float32``: how the checks' messages name a dtype."""
    return str(dtype).removeprefix("torch.")


def describe(x: Any) -> str:
    """``tensor of shape (2, 3), float32`` or the type and value of anything else."""
    if isinstance(x, Tensor):
        return f"tensor of shape {tuple(x.shape)}, {dtype_name(x.dtype)}"
    if is_remote(x):
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


def expect_shape(what: str, found: Any, shape: Sequence[int],
                 mistakes: Mapping[str, Sequence[int]] | None = None) -> Tensor:
    """Fail unless ``found`` is a tensor of exactly ``shape``; name a mistake whose shape it has."""
    __tracebackhide__ = True
    found = expect_tensor(what, found)
    if tuple(found.shape) != tuple(shape):
        mistake = next((name for name, s in (mistakes or {}).items() if tuple(s) == tuple(found.shape)), None)
        fail(what, f"shape {tuple(shape)}", f"shape {tuple(found.shape)}", mistake)
    return found


# The known mistakes of a check: {what the mistake is: its wrong output, or a function of no arguments
# that computes it}. Any, not ``Callable[[], Any] | Any`` (the same type): a lambda with default arguments,
# as the checks write them to bind a loop's variables, cannot be typed against a Callable.
Mistakes = Mapping[str, Any]


class Tolerance(TypedDict):
    """``expect_close``'s tolerances, kept together so that a check can pass them on (``**tol``)."""

    atol: float
    rtol: float


def _as_float64(x: Tensor) -> Tensor:
    return x.detach().to("cpu", torch.float64) if x.is_floating_point() else x.detach().cpu().double()


def _close(found: Tensor, expected: Tensor, atol: float, rtol: float) -> bool:
    a, b = _as_float64(found), _as_float64(expected)
    return a.shape == b.shape and bool(torch.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True))


def _matching_mistake(found: Tensor, mistakes: Mistakes | None,
                      atol: float, rtol: float) -> str | None:
    return next((name for name, value in _evaluated(mistakes).items() if _close(found, value, atol, rtol)), None)


_KEEP_DTYPE = ("keep the dtype of the inputs: do not create float32 tensors "
               "(torch.tensor(...), torch.zeros(...)) without dtype=x.dtype.")


def expect_close(
    what: str, found: Any, expected: Tensor, *, atol: float = 1e-5, rtol: float = 1e-4,
    mistakes: Mistakes | None = None, check_dtype: bool = True,
    hint: str | None = None, dtype_hint: str = _KEEP_DTYPE,
) -> Tensor:
    """Shape, dtype, device, NaN, then values; on a difference, name the known mistake
    (a ``{name: wrong output or function giving it}`` entry) that the candidate matches.
    ``dtype_hint`` explains a wrong dtype (by default: keep the inputs' dtype)."""
    __tracebackhide__ = True
    found = expect_tensor(what, found)
    if tuple(found.shape) != tuple(expected.shape):  # the wrong variants are computed only on failure
        expect_shape(what, found, expected.shape, {name: v.shape for name, v in _evaluated(mistakes).items()})
    if check_dtype and found.dtype != expected.dtype:
        fail(what, f"dtype {expected.dtype}", f"dtype {found.dtype}", hint=dtype_hint)
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


def expect_gradient(what: str, found: Tensor, mine: Tensor, leaf: Tensor) -> None:
    """The loss ``found``, computed from the leaf ``mine``, backpropagates to it the gradient that
    the reference's loss, already backpropagated, gave ``leaf`` (the same logits)."""
    __tracebackhide__ = True
    if not found.requires_grad:
        fail(what + ": its gradient", "a loss connected to logits (requires_grad=True)",
             "a tensor without a gradient", "the loss detached from the graph (.item(), .detach(), "
             "torch.tensor(...) or numpy inside)")
    call(found.backward, what=what + ": its backward pass, loss.backward()")
    expect_close(what + ": d loss / d logits", mine.grad, cast(Tensor, leaf.grad), atol=1e-6, rtol=1e-4)


def _evaluated(mistakes: Mistakes | None) -> dict[str, Tensor]:
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
    if not _plainly_equal(found, expected):
        mistake = next((n for n, v in (mistakes or {}).items() if _plainly_equal(found, v)), None)
        fail(what, repr(expected), describe(found) if isinstance(found, Tensor) else repr(found), mistake, hint)
    return found


def _plainly_equal(found: Any, expected: Any) -> bool:
    """Equal as plain values: a bool is not an int, and a tensor is none of them."""
    if isinstance(found, Tensor) or (type(found) is bool) != (type(expected) is bool):
        return False
    try:
        return bool(found == expected)
    except Exception:  # noqa: BLE001 - a comparison the candidate's object cannot make is a difference
        return False


# ----------------------------------------------------------------------------- where the candidate runs

# During grading a candidate may be a handle to the student's answer in the independent
# check's sandboxed child (grading.protocol.remote). Whether it is
# (``candidates.is_remote``) is asked here, by ``describe`` and ``beside``, and by the
# sentinels, which block their targets over there: that question has its own module,
# which imports neither.


@contextlib.contextmanager
def writes_back(candidate: Any, *tensors: Tensor) -> Iterator[None]:
    """While the block runs, an in-place change the candidate makes to one of ``tensors`` shows
    here, where the candidate is a handle to the sandboxed child too (a check that looks for an
    in-place mistake names the input it watches). Nothing else the child changes comes back."""
    if is_remote(candidate):
        with candidate.__remote_write_back__(tensors):
            yield
    else:
        yield


def beside(candidate: Any, scenario: Callable[..., Any], *args: Any) -> Any:
    """``scenario(candidate, *args)``, run where the candidate lives: here, or in the
    sandboxed child of the independent check when the candidate is a handle to it. For a
    check that needs more than calls (a training step mutating a model and an optimizer):
    the scenario, a module-level function of the check's module, builds what it needs from
    the plain ``args`` and returns plain results."""
    __tracebackhide__ = True
    if is_remote(candidate):
        return candidate.__remote_scenario__(scenario, *args)
    return scenario(candidate, *args)
