"""Copies the class report must find, each beside its control, on the warm-up lab (relu, mean_squared_error).

``similar_answers()`` gives the notebooks of a class (student -> notebook, every answer right: each
scores 5/5 but ``alike_added``, 3/5 with relu left blank), and ``ALIKE`` the pairs of students the
report must list, per exercise:

- ``alike_a`` and ``alike_b`` wrote their own answers, unlike each other;
- ``alike_renamed``: ``alike_a``'s relu, renamed and reformatted (the control: flagged before round 4);
- ``alike_helper``: the same copy of relu with a helper it calls and an unused helper in the same
  cell: it holds nearly all of ``alike_a``'s fingerprints, and adds as many of its own;
- ``alike_added``: the stubs left as released and ``alike_b``'s mean_squared_error, renamed, in a cell
  of their own under its stub (the code a run leaves bound);
- ``alike_both``: relu from ``alike_a`` and mean_squared_error from ``alike_b``: paired with each, while
  ``alike_a`` and ``alike_b`` are never listed together;
- ``alike_honest``: answers of their own: in no pair.

Plug into a class graded once: submit each notebook under its student id, then read the lab's
report (``write_report``'s pairs, or ``reports/LAB/similar.csv``).
"""

from __future__ import annotations

import nbformat

from autograder import notebook_cells
from tests.grading.helpers import released, with_answers, with_cell

STUB_BODY = "    raise NotImplementedError()"

RELU_A = """\
    positive = x > 0
    zero = torch.zeros_like(x)
    kept = torch.where(positive, x, zero)
    flipped = torch.where(positive.logical_not(), zero, kept)
    return flipped.to(dtype=x.dtype).reshape(x.shape).clone()"""

RELU_RENAMED = """\
    is_pos = x > 0
    nothing = torch.zeros_like(x)
    out = torch.where(is_pos, x, nothing)   # keep the positive part
    out2 = torch.where(is_pos.logical_not(),
                       nothing, out)
    return out2.to(dtype=x.dtype).reshape(x.shape).clone()"""

RELU_HELPER = """\
    _check_input(x)
    is_pos = x > 0
    nothing = torch.zeros_like(x)
    out = torch.where(is_pos, x, nothing)
    out2 = torch.where(is_pos.logical_not(), nothing, out)
    return out2.to(dtype=x.dtype).reshape(x.shape).clone()


def _check_input(t):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"relu takes a tensor, not {type(t).__name__}")
    if not t.is_floating_point():
        raise TypeError(f"relu takes a floating tensor, not {t.dtype}")
    return t.dim() >= 0 and t.numel() >= 0


def _describe(t):
    lines = [f"shape {tuple(t.shape)}", f"dtype {t.dtype}", f"device {t.device}"]
    for i, value in enumerate(t.flatten()[:4].tolist()):
        lines.append(f"  [{i}] = {value:+.3f} ({'kept' if value > 0 else 'zeroed'})")
    return "\\n".join(lines)"""

MSE_B = """\
    difference = (pred - target).reshape(-1)
    squares = difference * difference
    total = squares.sum(dim=0, dtype=squares.dtype)
    count = torch.tensor(difference.numel(), dtype=squares.dtype)
    return (total / count).reshape(())"""

MSE_RENAMED = """\
    d = (pred - target).reshape(-1)
    sq = d * d   # squared errors
    s = sq.sum(dim=0, dtype=sq.dtype)
    n = torch.tensor(d.numel(), dtype=sq.dtype)
    return (s / n).reshape(())"""

RELU_B = """\
    mask = torch.gt(x, torch.zeros((), dtype=x.dtype))
    result = x.masked_fill(mask.logical_not(), 0.0)
    return result"""

MSE_A = """\
    gap = pred.flatten() - target.flatten()
    squared = gap.pow(2)
    mean = squared.sum() / squared.numel()
    return mean.to(pred.dtype)"""

RELU_HONEST = """\
    out = x.new_zeros(x.shape)
    chosen = x.gt(0)
    out[chosen] = x[chosen]
    assert out.shape == x.shape and out.dtype == x.dtype
    return out"""

MSE_HONEST = """\
    errors = torch.sub(pred, target)
    squared = torch.mul(errors, errors)
    flat = squared.view(-1) if squared.is_contiguous() else squared.reshape(-1)
    return torch.mean(flat, dim=0)"""

STANDARD_MSE = (
    "    return ((pred - target) ** 2).mean()"  # the reference's: never compared (too short, and boilerplate)
)

# (first, second, exercise) the report must list, and nothing else
ALIKE = {
    ("alike_a", "alike_renamed", "test_relu"),
    ("alike_a", "alike_helper", "test_relu"),
    ("alike_a", "alike_both", "test_relu"),
    ("alike_both", "alike_renamed", "test_relu"),
    ("alike_both", "alike_helper", "test_relu"),
    ("alike_helper", "alike_renamed", "test_relu"),
    ("alike_added", "alike_b", "test_mean_squared_error"),
    ("alike_added", "alike_both", "test_mean_squared_error"),
    ("alike_b", "alike_both", "test_mean_squared_error"),
}


def _answered(relu: str | None, mse: str | None) -> nbformat.NotebookNode:
    """The released warm-up with the given bodies in its answer cells (None: the stub as released)."""
    nb = released()
    sources = {
        cell: next(c.source for c in nb.cells if notebook_cells.grade_id(c) == cell).replace(STUB_BODY, body)
        for cell, body in (("relu", relu), ("mean_squared_error", mse))
        if body is not None
    }
    return with_answers("00-warmup", sources, nb)


def similar_answers() -> dict[str, nbformat.NotebookNode]:
    """The class of the module's docstring: student id -> notebook handed in."""
    added = _answered(None, None)
    with_cell(
        added,
        "mean_squared_error",
        "def mean_squared_error(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:\n" + MSE_RENAMED,
    )
    return {
        "alike_a": _answered(RELU_A, MSE_A),
        "alike_b": _answered(RELU_B, MSE_B),
        "alike_renamed": _answered(RELU_RENAMED, STANDARD_MSE),
        "alike_helper": _answered(RELU_HELPER, STANDARD_MSE),
        "alike_added": added,
        "alike_both": _answered(RELU_RENAMED.replace("out2", "res"), MSE_RENAMED.replace("sq", "squared")),
        "alike_honest": _answered(RELU_HONEST, MSE_HONEST),
    }
