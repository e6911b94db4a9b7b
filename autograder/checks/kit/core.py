"""The frame of a check: its decorator, the inputs it draws, where the candidate runs, a loss compared.

A check compares a student's candidate with the reference and, on failure, raises
``CheckFailed`` (an ``AssertionError``, so nbgrader scores the cell 0) whose message
says what was checked, what was expected, what was found and, where a known mistake
explains the difference, its name. Order of the comparisons: type and shape, then
dtype and device, then NaN and masking behaviour, then values.

Writing a check (``check`` and ``random_tensor`` come from here, ``call`` and ``expect_close`` from
``expect``, ``forbidden`` from ``sentinels``, ``CheckFailed`` from ``failures``)::

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
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch
from torch import Tensor

from autograder.checks.kit.candidates import is_remote
from autograder.checks.kit.expect import Mistakes, call, expect_close, expect_gradient
from autograder.checks.kit.failures import CheckFailed, ForbiddenCall
from autograder.checks.kit.forbidden_ids import forbidden_id
from autograder.checks.kit.mistakes import id_in_message
from autograder.checks.kit.sentinels import forbidden

_KIT = os.path.dirname(os.path.abspath(__file__))
_PACKAGE = os.path.dirname(os.path.dirname(_KIT))  # autograder/: the checks' own frames
_METHODS = frozenset({"forward", "__call__", "__init__", "step", "encode", "decode"})  # a class's: name the check's

__all__ = [
    "beside",
    "check",
    "expect_loss",
    "generator",
    "logits_and_targets",
    "random_tensor",
    "seeded",
]


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
    return (
        f"{_stub_name(err) or check_name.removeprefix('check_')} is not answered yet: replace "
        "`raise NotImplementedError()` with your code, then run this cell again."
    )


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


# ----------------------------------------------------------------------------- inputs


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def random_tensor(shape: Sequence[int], seed: int, dtype: torch.dtype = torch.float32, scale: float = 1.0) -> Tensor:
    """Standard normal values times ``scale``, reproducible from ``seed``."""
    return torch.randn(*shape, generator=generator(seed), dtype=torch.float64).mul(scale).to(dtype)


def logits_and_targets(
    shape: Sequence[int], pad_id: int, lengths: Sequence[int], seed: int, dtype: torch.dtype, scale: float
) -> tuple[Tensor, Tensor]:
    """Logits of ``shape`` ``(B, T, V)`` (``random_tensor``) and target ids ``(B, T)`` in 0..V-1
    for them: none is ``pad_id`` among row b's first ``lengths[b]``, all are after them."""
    b, t, v = shape
    ids = torch.randint(0, v, (b, t), generator=generator(seed + 5))
    ids[ids == pad_id] = (pad_id + 1) % v
    for row, n in enumerate(lengths):
        ids[row, n:] = pad_id
    return random_tensor(shape, seed, dtype, scale), ids


def seeded(make: Callable[..., Any], seed: int, *args: Any, **kwargs: Any) -> Any:
    """``make(*args, **kwargs)`` drawing from the global RNG seeded with ``seed``, which is put
    back as it was afterwards (the student's random state is not disturbed)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return make(*args, **kwargs)


def expect_loss(
    what: str,
    candidate: Callable[..., Any],
    reference_loss: Callable[..., Tensor],
    logits: Tensor,
    args: Sequence[Any],
    ops: Sequence[str],
    instead: str,
    mistakes: Mistakes,
) -> None:
    """Compare a loss ``candidate(logits, *args)`` and its gradient with respect to the logits with
    ``reference_loss``'s (chapters 8 and 9); the candidate runs with ``ops`` refused, on copies."""
    __tracebackhide__ = True
    leaf = logits.clone().requires_grad_()
    expected = reference_loss(leaf, *args)
    expected.backward()
    with forbidden(candidate, ops, instead=instead):
        mine = logits.clone().requires_grad_()
        found = call(candidate, mine, *(a.clone() if isinstance(a, Tensor) else a for a in args), what=what)
    expect_close(what, found, expected.detach(), atol=1e-5, rtol=1e-5, check_dtype=False, mistakes=mistakes)
    expect_gradient(what, found, mine, leaf)


# The known mistakes of a check: {what the mistake is: its wrong output, or a function of no arguments
# that computes it}. Any, not ``Callable[[], Any] | Any`` (the same type): a lambda with default arguments,
# as the checks write them to bind a loop's variables, cannot be typed against a Callable.


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
