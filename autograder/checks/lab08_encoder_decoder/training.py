"""Checks for lab 08-encoder-decoder (chapter 8): the schedule and one training step. The loss
is checked in ``loss``.

Shape letters: B batch, T target length, V vocabulary. ``check_train_step`` takes two
optimizer steps on a tiny model with the checks' own SGD and Noam schedule (``doubles``).
"""

from __future__ import annotations

import copy
import functools
import numbers
import warnings
from typing import Any, cast

import torch
from torch import Tensor

from autograder import reference
from autograder.checks.kit.core import beside, check, generator, seeded
from autograder.checks.kit.expect import call, describe, expect_close, expect_tensor, fail
from autograder.checks.kit.failures import CheckFailed
from autograder.checks.kit.sentinels import forbidden
from autograder.checks.kit.token_inputs import padded_ids
from autograder.checks.lab08_encoder_decoder.doubles import sgd_with_noam
from autograder.checks.lab08_encoder_decoder.loss import smoothed_loss
from autograder.data import BOS_ID, EOS_ID, PAD_ID
from autograder.reference.training import train as reference_train

# ----------------------------------------------------------------------------- Noam schedule


def _noam(step: float, d: int, w: int, dpow: float = -0.5, wpow: float = -1.5, pick=min) -> float:
    return d**dpow * pick(step**-0.5, step * w**wpow)


_BUILD_NOAM = "Write the formula with min, ** and the three arguments."


@check
def check_noam_lr(noam_lr, seed: int = 0) -> None:
    """``noam_lr(step, d_model, warmup)`` at the first steps, around the peak and far after it."""
    g = generator(seed)
    settings = [(512, 4000), (16, 4), (64, 1)]
    settings.append((int(torch.randint(8, 257, (1,), generator=g)), int(torch.randint(2, 60, (1,), generator=g))))
    for d, w in settings:
        _check_noam_setting(noam_lr, d, w)


def _check_noam_setting(noam_lr, d: int, w: int) -> None:
    __tracebackhide__ = True
    steps = sorted({1, 2, max(1, w - 1), w, w + 1, 2 * w, 10 * w + 3})
    what = f"noam_lr(step, d_model={d}, warmup={w}) for step in {steps}"
    values = []
    with forbidden(
        noam_lr, ["autograder.reference.noam_lr", "autograder.reference.noam_scheduler"], instead=_BUILD_NOAM
    ):
        for step in steps:
            value = call(noam_lr, step, d, w, what=f"noam_lr(step={step}, d_model={d}, warmup={w})")
            if isinstance(value, Tensor) and value.numel() == 1:
                value = value.item()
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                fail(f"noam_lr(step={step}, d_model={d}, warmup={w})", "a float", describe(value))
            values.append(float(value))
    found = torch.tensor(values, dtype=torch.float64)
    expected = torch.tensor([reference.noam_lr(s, d, w) for s in steps], dtype=torch.float64)

    def curve(f):
        return lambda: torch.tensor([f(s) for s in steps], dtype=torch.float64)

    expect_close(
        what,
        found,
        expected,
        atol=1e-12,
        rtol=1e-6,
        mistakes={
            "steps counted from 0 (off by one: step n computed as step n + 1)": curve(lambda s: _noam(s + 1, d, w)),
            "warmup off by one (the peak at warmup + 1)": curve(lambda s: _noam(s, d, w + 1)),
            "warmup off by one (the peak at warmup - 1)": curve(lambda s: _noam(s, d, w - 1)),
            "missing the d_model ** -0.5 factor": curve(lambda s: _noam(s, d, w, dpow=0.0)),
            "d_model ** 0.5 instead of d_model ** -0.5": curve(lambda s: _noam(s, d, w, dpow=0.5)),
            "warmup ** -0.5 instead of warmup ** -1.5": curve(lambda s: _noam(s, d, w, wpow=-0.5)),
            "max instead of min": curve(lambda s: _noam(s, d, w, pick=max)),
        },
    )


# ----------------------------------------------------------------------------- one training step


def _step_variant(
    model,
    src,
    tgt,
    optimizer,
    scheduler,
    *,
    smoothing,
    shift=True,
    reduce="mean",
    zero=True,
    sched=True,
    sched_first=False,
    clip=True,
    opt_step=True,
) -> float:
    if zero:
        optimizer.zero_grad()
    tgt_in, tgt_out = (tgt[:, :-1], tgt[:, 1:]) if shift else (tgt[:, :-1], tgt[:, :-1])
    loss = smoothed_loss(model(src, tgt_in), tgt_out, smoothing, PAD_ID, reduce=reduce)
    loss.backward()
    if clip:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    if sched_first:
        scheduler.step()
    if opt_step:
        optimizer.step()
    if sched and not sched_first:
        scheduler.step()
    return loss.item()


def _expect_close_lazily(what: str, found: Tensor, expected: Tensor, atol: float, rtol: float, mistakes) -> None:
    """``expect_close``, computing the (costly) mistaken variants only when the values differ."""
    __tracebackhide__ = True
    if found.shape == expected.shape and bool(torch.allclose(found, expected, atol=atol, rtol=rtol)):
        return
    expect_close(what, found, expected, atol=atol, rtol=rtol, mistakes=mistakes())


def _flat(model) -> Tensor:
    return torch.cat([p.detach().reshape(-1) for p in model.state_dict().values()]).double()


_BUILD_STEP = (
    "Write the step: zero_grad, shift, forward, label_smoothed_loss, backward, clip, optimizer.step, scheduler.step."
)


@check
def check_train_step(train_step, seed: int = 0) -> None:
    """Two calls of ``train_step(model, src, tgt, optimizer, scheduler, smoothing, pad_id)`` on a tiny
    reference model, SGD and the Noam schedule: the returned losses and the parameters after each
    step against the reference's ``train_step`` from the same starting point."""
    config = reference.TransformerConfig(
        src_vocab_size=11, tgt_vocab_size=11, d_model=16, num_heads=2, num_layers=1, d_ff=32, dropout=0.0, max_len=32
    )
    base = seeded(reference.EncoderDecoder, seed, config)
    data, smoothing = _step_batches(seed), 0.1
    expected = _reference_steps(base, data, smoothing)
    mistakes = _step_mistakes(base, data, smoothing)
    forbid = ["autograder.reference.training.train.train_step", "autograder.reference.training.train.train"]
    with forbidden(train_step, forbid, instead=_BUILD_STEP):
        steps = beside(train_step, _candidate_steps, config, base.state_dict(), data, smoothing)
    for k, (src, tgt) in enumerate(data):
        what = (
            f"call {k + 1} of train_step(model, src {tuple(src.shape)}, tgt {tuple(tgt.shape)}, "
            f"SGD(lr=1.0), noam_scheduler(warmup=3, factor=2.0), smoothing={smoothing}, pad_id={PAD_ID}) "
            f"(seed {seed})"
        )
        step = steps[k] if isinstance(steps, list) and k < len(steps) and isinstance(steps[k], dict) else {}
        _expect_step(what, step, expected[k], functools.partial(mistakes, k))


def _step_batches(seed: int) -> list[tuple[Tensor, Tensor]]:
    """Two padded batches ``(src (4, 6), tgt (4, 7))``; each target row is BOS ... EOS."""
    data = []
    for k in range(2):
        src = padded_ids(4, 6, 11, seed * 10 + k, lengths=[6, 5, 3, 1])
        tgt = padded_ids(4, 7, 11, seed * 10 + k + 5, lengths=[7, 6, 4, 3])
        tgt[:, 0] = BOS_ID
        for row, n in enumerate([7, 6, 4, 3]):
            tgt[row, n - 1] = EOS_ID
        data.append((src, tgt))
    return data


def _reference_steps(base, data: list, smoothing: float) -> list[tuple[float, Tensor]]:
    """The reference's ``train_step`` on a copy of ``base``: (loss, parameters after) for each batch."""
    model = copy.deepcopy(base)
    sgd, noam = sgd_with_noam(model)
    # the doubles have torch.optim's interface, which is all train_step asks of an optimizer and a scheduler
    optimizer, scheduler = cast(Any, sgd), cast(Any, noam)
    return [
        (reference_train.train_step(model, src, tgt, optimizer, scheduler, smoothing, PAD_ID), _flat(model))
        for src, tgt in data
    ]


_STEP_MISTAKES = {  # name: the flags of _step_variant that make the mistake
    "no teacher-forcing shift: the input must be tgt[:, :-1] and the target tgt[:, 1:]": dict(shift=False),
    "padding counted in the loss (average over non-pad target tokens only)": dict(reduce="numel"),
    "no label smoothing": dict(smoothing=0.0),
    "optimizer.zero_grad() not called: gradients accumulate across calls": dict(zero=False),
    "scheduler.step() not called after optimizer.step()": dict(sched=False),
    "scheduler.step() called before optimizer.step()": dict(sched_first=True),
    "gradients not clipped to norm 1.0": dict(clip=False),
    "optimizer.step() not called": dict(opt_step=False),
}


def _step_mistakes(base, data: list, smoothing: float):
    """``mistakes(k, part)``: for each known mistake, a function giving what it returns at call k
    (part 0: the loss, 1: the parameters); each wrong run is computed once, and only when asked."""
    memo: dict = {}

    def run(**flags):
        key = tuple(sorted(flags.items()))
        if key in memo:
            return memo[key]
        model = copy.deepcopy(base)
        optimizer, scheduler = sgd_with_noam(model)
        out = []
        # expect_close may compute mistakes under no_grad; these variants need a backward pass
        with warnings.catch_warnings(), torch.enable_grad():  # the scheduler-first variant warns, on purpose
            warnings.simplefilter("ignore")
            for src, tgt in data:
                out.append(
                    (
                        _step_variant(model, src, tgt, optimizer, scheduler, **{"smoothing": smoothing, **flags}),
                        _flat(model),
                    )
                )
        memo[key] = out
        return out

    def mistakes(k: int, part: int) -> dict:
        return {
            name: (lambda f=flags: torch.as_tensor(run(**f)[k][part], dtype=torch.float64))
            for name, flags in _STEP_MISTAKES.items()
        }

    return mistakes


def _expect_step(what: str, step: dict, expected: tuple[float, Tensor], mistakes) -> None:
    """One call's result (``step``: its loss and parameters, or its error) against the reference's."""
    __tracebackhide__ = True
    if "error" in step or "params" not in step:
        fail(
            what,
            "a result",
            str(step.get("error", "no result")),
            hint="read the error above: it was raised inside your code.",
        )
    loss = step["loss"]
    if isinstance(loss, Tensor) or isinstance(loss, bool) or not isinstance(loss, numbers.Real):
        fail(
            what + ": the returned loss",
            "a Python float",
            describe(loss),
            hint="return loss.item(): a float, detached from the graph.",
        )
    _expect_close_lazily(
        what + ": the returned loss",
        torch.tensor(float(loss), dtype=torch.float64),
        torch.tensor(expected[0], dtype=torch.float64),
        1e-5,
        1e-5,
        functools.partial(mistakes, 0),
    )
    params = expect_tensor(what + ": the parameters after the step", step["params"])
    _expect_close_lazily(
        what + ": the parameters after the step (all of them, flattened in state_dict order)",
        params,
        expected[1],
        1e-5,
        1e-4,
        functools.partial(mistakes, 1),
    )


def _candidate_steps(train_step, config, state: dict, data: list, smoothing: float) -> list[dict]:
    """The candidate's side of check_train_step (run where the candidate lives, see
    ``core.beside``): a tiny model from ``config`` and ``state``, SGD and the Noam schedule,
    one ``train_step`` call per batch; the returned loss and the parameters after each call,
    or the error that stopped them."""
    model = reference.EncoderDecoder(config)
    model.load_state_dict(state)
    optimizer, scheduler = sgd_with_noam(model)
    out: list[dict] = []
    for src, tgt in data:
        try:
            loss = train_step(model, src.clone(), tgt.clone(), optimizer, scheduler, smoothing, PAD_ID)
        except (NotImplementedError, CheckFailed):
            raise
        except Exception as err:  # reported by the check as the student's error
            out.append({"error": f"{type(err).__name__}: {err}"})
            break
        out.append({"loss": loss, "params": _flat(model)})
    return out
