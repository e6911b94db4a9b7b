"""Dropout made deterministic, so that a check can tell where a candidate applies it.

While ``fixed_dropout`` is active, ``F.dropout`` (which ``nn.Dropout`` calls) and
``torch.dropout`` keep a fixed set of entries for each input shape, drawn from the check's
seed and not from the global random state. The reference and the candidate, run in
training mode on the same weights and inputs, then drop the same entries whatever the order
of their calls, and their outputs must agree. Where a layer's dropout sites have different
shapes (attention weights (B, H, Lq, Lk), hidden units (B, L, F), sublayer outputs
(B, L, D)), the shapes it dropped also say where it applied dropout.

The candidate runs in training mode through ``core.beside``: here, or in the sandboxed
child of the independent check, where ``run_in_training_mode`` patches that process's torch.
"""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Unpack

import torch
from torch import Tensor

from autograder.checks.kit.core import beside
from autograder.checks.kit.expect import Tolerance, call, expect_close
from autograder.checks.kit.sentinels import forbidden, replaced

_DROPOUT_OPS = ("torch.nn.functional.dropout", "torch.dropout")


class FixedDropout:
    """A stand-in for ``F.dropout(input, p, training, inplace)`` (and ``torch.dropout(input,
    p, train)``) whose kept entries depend only on the input's shape, ``p`` and a seed;
    ``calls`` records the shape and ``p`` of every input it dropped."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self.calls: list[tuple[tuple[int, ...], float]] = []

    def keep(self, shape: tuple[int, ...], p: float) -> Tensor:
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + zlib.crc32(repr((shape, p)).encode()))
        return torch.rand(shape, generator=g, dtype=torch.float64) >= p

    def __call__(
        self, input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, *, train: bool | None = None
    ) -> Tensor:
        training = training if train is None else train
        if not training or p == 0:
            return input
        shape = tuple(input.shape)
        self.calls.append((shape, float(p)))
        scale = 0.0 if p >= 1 else 1.0 / (1.0 - p)
        out = input * (self.keep(shape, float(p)).to(input.device, input.dtype) * scale)
        if inplace:
            with torch.no_grad():
                input.copy_(out)
            return input
        return out


@contextlib.contextmanager
def fixed_dropout(candidate: Any, seed: int) -> Iterator[FixedDropout]:
    """Deterministic dropout here, for the block (names bound to ``F.dropout`` in the
    candidate's own module too)."""
    fixed = FixedDropout(seed)
    with replaced(candidate, {path: fixed for path in _DROPOUT_OPS}):
        yield fixed


def run_in_training_mode(module: Any, args: tuple, seed: int) -> tuple[Any, list]:
    """``module(*args)`` in training mode under ``fixed_dropout``: ``(output, calls)``. A
    scenario of ``core.beside``: it runs where the module lives; the module's mode is put back."""
    was_training = module.training
    module.train()
    try:
        with fixed_dropout(module, seed) as fixed, torch.no_grad():
            out = module(*args)
    finally:
        module.train(was_training)
    return out, fixed.calls


def _sites_hint(calls: list, sites: Mapping[tuple[int, ...], tuple[str, int]]) -> str:
    """Where dropout acted and where it should have, by the shapes of what it dropped."""

    def label(shape: tuple[int, ...]) -> str:
        return sites[shape][0] if shape in sites else f"a tensor of shape {shape}"

    found: dict[str, int] = {}
    for shape, _ in calls:
        found[label(tuple(shape))] = found.get(label(tuple(shape)), 0) + 1
    expected = ", ".join(f"{name} ({count}x)" for name, count in sites.values())
    acted = ", ".join(f"{name} ({count}x)" for name, count in found.items()) or "nothing"
    ps = sorted({p for _, p in calls})
    return (
        f"in training mode dropout acted on: {acted}; expected: {expected}"
        + (f"; with p = {', '.join(f'{p:g}' for p in ps)}" if ps else "")
        + "."
    )


def expect_dropout(
    what: str,
    module: Any,
    args: tuple,
    seed: int,
    expected: Callable[[], Tensor],
    mistakes: Mapping[str, Callable[[], Tensor]],
    sites: Mapping[tuple[int, ...], tuple[str, int]],
    forbid: tuple[Any, Sequence[str], str],
    **tolerances: Unpack[Tolerance],
) -> None:
    """Run the candidate ``module`` in training mode under fixed dropout (inside
    ``forbidden(*forbid)``) and compare with ``expected()``, the reference in training mode
    computed here under the same masks; name the mistake of ``mistakes`` it matches, or say
    where its dropout acted (``sites``: shape -> (what has that shape, how many dropout
    calls on it))."""
    __tracebackhide__ = True

    def under_fixed(make: Callable[[], Tensor]) -> Callable[[], Tensor]:
        def run() -> Tensor:
            with fixed_dropout(None, seed), torch.no_grad():
                return make()

        return run

    reference_output = under_fixed(expected)()
    with forbidden(*forbid):
        result = call(beside, module, run_in_training_mode, args, seed, what=what)
    found, calls = result if isinstance(result, tuple) and len(result) == 2 else (result, [])
    wrong = {name: under_fixed(make) for name, make in mistakes.items()}
    expect_close(
        what,
        found,
        reference_output,
        mistakes=wrong,
        hint=_sites_hint(calls if isinstance(calls, list) else [], sites),
        **tolerances,
    )
