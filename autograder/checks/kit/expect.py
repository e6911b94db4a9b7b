"""The comparisons a check makes of a candidate's output with the reference's: its type, shape,
dtype and values, each failing with the four parts of a teaching message (what was checked, what
was expected, what was found, and the likely mistake: the first wrong variant that gives the
same output). A check imports them from here, its other parts from ``core`` and ``sentinels``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, TypedDict, cast

import torch
from torch import Tensor

from autograder.checks.kit.candidates import is_remote
from autograder.checks.kit.failures import CheckFailed
from autograder.checks.kit.mistakes import mistake_id


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


def expect_tensor(what: str, found: Any) -> Tensor:
    __tracebackhide__ = True
    if not isinstance(found, Tensor):
        fail(what, "a torch.Tensor", describe(found))
    return found


def expect_shape(
    what: str, found: Any, shape: Sequence[int], mistakes: Mapping[str, Sequence[int]] | None = None
) -> Tensor:
    """Fail unless ``found`` is a tensor of exactly ``shape``; name a mistake whose shape it has."""
    __tracebackhide__ = True
    found = expect_tensor(what, found)
    if tuple(found.shape) != tuple(shape):
        mistake = next((name for name, s in (mistakes or {}).items() if tuple(s) == tuple(found.shape)), None)
        fail(what, f"shape {tuple(shape)}", f"shape {tuple(found.shape)}", mistake)
    return found


Mistakes = Mapping[str, Any]


class Tolerance(TypedDict):
    """``expect_close``'s tolerances, kept together so that a check can pass them on (``**tol``)."""

    atol: float
    rtol: float


TOLERANCE_BY_DTYPE: dict[torch.dtype, Tolerance] = {  # a check run in float32 and in float64
    torch.float32: dict(atol=1e-5, rtol=1e-4),
    torch.float64: dict(atol=1e-10, rtol=1e-8),
}


def _as_float64(x: Tensor) -> Tensor:
    return x.detach().to("cpu", torch.float64) if x.is_floating_point() else x.detach().cpu().double()


def _close(found: Tensor, expected: Tensor, atol: float, rtol: float) -> bool:
    a, b = _as_float64(found), _as_float64(expected)
    return a.shape == b.shape and bool(torch.allclose(a, b, atol=atol, rtol=rtol, equal_nan=True))


def _matching_mistake(found: Tensor, mistakes: Mistakes | None, atol: float, rtol: float) -> str | None:
    return next((name for name, value in _evaluated(mistakes).items() if _close(found, value, atol, rtol)), None)


_KEEP_DTYPE = (
    "keep the dtype of the inputs: do not create float32 tensors "
    "(torch.tensor(...), torch.zeros(...)) without dtype=x.dtype."
)


def expect_close(
    what: str,
    found: Any,
    expected: Tensor,
    *,
    atol: float = 1e-5,
    rtol: float = 1e-4,
    mistakes: Mistakes | None = None,
    check_dtype: bool = True,
    hint: str | None = None,
    dtype_hint: str = _KEEP_DTYPE,
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
        fail(
            what,
            f"device {expected.device}",
            f"device {found.device}",
            hint="create new tensors on the inputs' device (device=x.device).",
        )
    a, b = _as_float64(found), _as_float64(expected)
    nan_found, nan_expected = torch.isnan(a), torch.isnan(b)
    if bool((nan_found & ~nan_expected).any()):
        where = tuple(int(i) for i in torch.nonzero(nan_found & ~nan_expected)[0])
        fail(
            what,
            "finite values (no NaN)",
            f"NaN at index {where}",
            _matching_mistake(found, mistakes, atol, rtol),
            hint,
        )
    if not _close(found, expected, atol, rtol):
        diff = (a - b).abs().nan_to_num(nan=float("inf"))
        flat = int(diff.argmax())
        where = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape)) if diff.dim() else ()
        found_v, expected_v = a.reshape(-1)[flat].item(), b.reshape(-1)[flat].item()
        fail(
            what,
            f"the reference's values within atol={atol:g}, rtol={rtol:g}",
            f"greatest difference {diff.max().item():.3g} at index {where}: "
            f"yours {found_v:.6g}, reference {expected_v:.6g}",
            _matching_mistake(found, mistakes, atol, rtol),
            hint,
        )
    return found


def expect_gradient(what: str, found: Tensor, mine: Tensor, leaf: Tensor) -> None:
    """The loss ``found``, computed from the leaf ``mine``, backpropagates to it the gradient that
    the reference's loss, already backpropagated, gave ``leaf`` (the same logits)."""
    __tracebackhide__ = True
    if not found.requires_grad:
        fail(
            what + ": its gradient",
            "a loss connected to logits (requires_grad=True)",
            "a tensor without a gradient",
            "the loss detached from the graph (.item(), .detach(), torch.tensor(...) or numpy inside)",
        )
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
        except Exception:
            continue
        if isinstance(value, Tensor):
            out[name] = value
    return out


def expect_equal(
    what: str, found: Any, expected: Any, mistakes: Mapping[str, Any] | None = None, hint: str | None = None
) -> Any:
    """Exact equality for ints, bools, tuples and integer or boolean tensors."""
    __tracebackhide__ = True
    if isinstance(expected, Tensor):
        found = expect_shape(what, found, expected.shape)
        if found.dtype != expected.dtype:
            fail(what, f"dtype {expected.dtype}", f"dtype {found.dtype}", hint=hint)
        if not torch.equal(found.cpu(), expected.cpu()):
            where = tuple(int(i) for i in torch.nonzero(found.cpu() != expected.cpu())[0])
            mistake = next(
                (
                    n
                    for n, v in _evaluated(mistakes).items()
                    if v.shape == found.shape and torch.equal(found.cpu(), v.cpu())
                ),
                None,
            )
            fail(
                what,
                f"{expected.tolist()}" if expected.numel() <= 64 else "the reference's values",
                f"{found.tolist()}" if found.numel() <= 64 else f"a difference at index {where}",
                mistake,
                hint,
            )
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
    except Exception:  # a comparison the candidate's object cannot make is a difference
        return False


def call(candidate: Callable[..., Any], *args: Any, what: str, **kwargs: Any) -> Any:
    """Call the candidate; an exception other than NotImplementedError becomes a failure
    that says which call raised it."""
    __tracebackhide__ = True
    try:
        return candidate(*args, **kwargs)
    except (NotImplementedError, CheckFailed):
        raise
    except Exception as err:  # any error of the student's is reported, not crashed on
        fail(
            what,
            "a result",
            f"{type(err).__name__}: {err}",
            hint="read the error above: it was raised inside your code.",
        )
