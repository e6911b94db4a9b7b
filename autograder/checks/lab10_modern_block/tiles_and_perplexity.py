"""Checks for lab 10-modern-block (chapter 10), its last two exercises: attention computed tile
by tile with an online softmax, and perplexity (the others: ``modern_block``).

Shape letters: B batch, H heads, L length, Lq queries, Lk keys, Lt tile width, Dh head width,
V vocabulary. Masks: True = may attend.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor

from autograder import reference
from autograder.checks.kit.core import check, generator, logits_and_targets, random_tensor
from autograder.checks.kit.expect import (
    TOLERANCE_BY_DTYPE,
    call,
    expect_close,
    expect_equal,
    expect_shape,
    fail,
)
from autograder.checks.kit.sentinels import forbidden
from autograder.checks.lab10_modern_block.tile_memory import tiles_held_in_memory
from autograder.reference import tiled

# ----------------------------------------------------------------------------- tiled_attention


def _tiled_variant(
    q,
    k,
    v,
    mask,
    tile,
    *,
    rescale_sum=True,
    rescale_acc=True,
    per_tile=False,
    scale=True,
    drop_last=False,
    use_mask=True,
    max_from_zero=False,
):
    # in float64, but a running maximum started at 0 fails only by underflow in the inputs' dtype
    dtype = q.dtype if max_from_zero else torch.float64
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    m = torch.full(q.shape[:-1], 0.0 if max_from_zero else float("-inf"), dtype=dtype)
    total, acc, outs = (
        torch.zeros(q.shape[:-1], dtype=dtype),
        torch.zeros(*q.shape[:-1], v.size(-1), dtype=dtype),
        [],
    )
    stop = (k.size(-2) // tile) * tile if drop_last and k.size(-2) % tile else k.size(-2)
    for start in range(0, stop, tile):
        s = q @ k[..., start : start + tile, :].transpose(-2, -1) / (math.sqrt(q.size(-1)) if scale else 1.0)
        if mask is not None and use_mask:
            s = s.masked_fill(~mask[..., start : start + tile], float("-inf"))
        if per_tile:
            outs.append(reference.softmax(s, -1) @ v[..., start : start + tile, :])
            continue
        new_m = torch.maximum(m, s.amax(-1))
        safe = new_m.masked_fill(new_m == float("-inf"), 0.0)
        r = torch.exp(m - safe)
        p = torch.exp(s - safe[..., None])
        total = (total * r if rescale_sum else total) + p.sum(-1)
        acc = (acc * r[..., None] if rescale_acc else acc) + p @ v[..., start : start + tile, :]
        m = new_m
    if per_tile:
        return torch.stack(outs).mean(0)
    return acc / total.clamp_min(torch.finfo(dtype).tiny)[..., None]


_TILED_OPS = [
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.softmax",
    "torch.nn.functional.softmax",
    "torch.Tensor.softmax",
    "torch.special.softmax",
    "autograder.reference.tiled.tiled_attention",
    "autograder.reference.tiled.online_softmax",
    "autograder.reference.attention.softmax",
    "autograder.reference.attention.scaled_dot_product_attention",
]


_BUILD_TILED = (
    "Keep a running maximum, sum and weighted sum per query, rescaled as each tile of keys arrives; "
    "use torch.exp, not softmax."
)
_MAX_FROM_ZERO = (
    "the running maximum started at 0 instead of -inf: a row whose scores are all below about -103 gives "
    "exp(s - 0) = 0 in float32 for every key (start it at -inf, and shift by 0 only while it is still -inf)"
)


@check
def check_tiled_attention(tiled_attention, seed: int = 0) -> None:
    """``tiled_attention(q, k, v, attn_mask=None, tile=64)``: tiles that divide Lk and that do not, a
    tile of 1 and one wider than Lk, causal and padding masks with fully masked rows, large
    scores (a later tile with a larger maximum), rows whose scores are all far below 0, float64;
    then, at a length of 128, the largest tensor the answer creates (one tile of scores, not the
    whole matrix)."""
    g = generator(seed)
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    pad = torch.ones(2, 1, 1, 7, dtype=torch.bool)
    pad[1, ..., 3:] = False
    holes = causal.clone()
    holes[2] = False  # a fully masked row
    holes[4, :3] = False  # a row whose first tiles are all masked
    cases = [
        ((2, 2, 7, 8), None, 3, torch.float32, 1.0),
        ((2, 2, 7, 8), causal, 2, torch.float32, 1.0),
        ((2, 2, 7, 8), causal & pad, 4, torch.float64, 1.0),
        ((1, 2, 7, 4), holes, 2, torch.float32, 1.0),
        ((1, 1, 7, 4), None, 1, torch.float64, 30.0),
        ((2, 1, 7, 8), causal, 64, torch.float32, 1.0),
        ((1, 2, 7, 8), None, int(torch.randint(2, 7, (1,), generator=g)), torch.float32, 10.0),
    ]
    for i, case in enumerate(cases):
        _check_tiled_case(tiled_attention, seed, i, *case)
    _check_tiled_case(tiled_attention, seed, len(cases), (1, 2, 7, 4), causal, 3, torch.float32, 1.0, far=(0, 5))
    tiles_held_in_memory(tiled_attention, seed, _TILED_OPS, _BUILD_TILED)


def _check_tiled_case(
    tiled_attention,
    seed: int,
    i: int,
    shape: tuple[int, ...],
    mask: Tensor | None,
    tile: int,
    dtype: torch.dtype,
    scale: float,
    far: tuple[int, ...] = (),
) -> None:
    """One case; the query rows ``far`` are -60 everywhere and the keys in [1, 2], so that those
    rows' scores all lie between -120 and -240: exp of them underflows to 0 in float32 unless the
    row's own maximum is subtracted first."""
    __tracebackhide__ = True
    q, k, v = (random_tensor(shape, seed * 10 + i + j, dtype, scale if j < 2 else 1.0) for j in range(3))
    if far:
        k = 1.0 + torch.rand(shape, generator=generator(seed * 10 + i + 7), dtype=dtype)
        q[..., list(far), :] = -60.0
    masked = "no mask" if mask is None else f"a mask {tuple(mask.shape)} with {int((~mask).sum())} blocked"
    size = f"of size ~{scale:g}" + (f", query rows {list(far)} = -60 and keys in [1, 2]" if far else "")
    what = f"tiled_attention(q, k, v {shape} {str(dtype)[6:]} {size}, {masked}, tile={tile}) (seed {seed})"
    expected = tiled.tiled_attention(q, k, v, mask, tile)

    def variant(**kw):
        return lambda: _tiled_variant(q, k, v, mask, tile, **kw)

    mistakes = {
        "the running sum not rescaled when the maximum grows (multiply it by exp(m_old - m_new) too)": variant(
            rescale_sum=False
        ),
        "the accumulated values not rescaled when the maximum grows (multiply them by exp(m_old - m_new) too)": variant(
            rescale_acc=False
        ),
        "each tile normalised on its own and the tiles' outputs averaged: the weights must be normalised over "
        "all keys": variant(per_tile=True),
        "scores not scaled by 1/sqrt(Dh)": variant(scale=False),
        "the last tile dropped when tile does not divide Lk": variant(drop_last=True),
        "the mask ignored": variant(use_mask=False),
        _MAX_FROM_ZERO: variant(max_from_zero=True),
    }
    with forbidden(tiled_attention, _TILED_OPS, _BUILD_TILED):
        found = call(
            tiled_attention, q.clone(), k.clone(), v.clone(), None if mask is None else mask.clone(), tile, what=what
        )
    found = expect_shape(what, found, expected.shape)
    _fail_on_nan(what, found, k, mask, far)
    expect_close(what, found, expected, **TOLERANCE_BY_DTYPE[dtype], mistakes=mistakes)


def _fail_on_nan(what: str, found: Tensor, k: Tensor, mask: Tensor | None, far: tuple[int, ...]) -> None:
    """NaN in the answer: named as the maximum started at 0 when only the rows of very negative
    scores have it, else as a fully masked row (or plain NaN)."""
    __tracebackhide__ = True
    nan_rows = torch.isnan(found).any(-1)
    if not bool(nan_rows.any()):
        return
    blocked = torch.zeros_like(nan_rows) if mask is None else ~mask.expand(*found.shape[:-1], k.size(-2)).any(-1)
    far_rows = torch.zeros_like(nan_rows)
    far_rows[..., list(far)] = True
    if bool((nan_rows & ~blocked).any()) and bool((nan_rows <= (far_rows & ~blocked)).all()):
        fail(
            what,
            "finite values (no NaN)",
            f"NaN in the rows {list(far)}, whose scores all lie between -240 and -120",
            _MAX_FROM_ZERO,
            hint="with the maximum started at -inf, exp(s - m) is 1 for the largest score of every row; "
            "and divide by the sum clamped above 0.",
        )
    fail(
        what,
        "finite values (no NaN)",
        "NaN in a fully masked row" if mask is not None else "NaN",
        "a fully masked row gives NaN (softmax of a row of -inf is 0/0): give it zero weights and a zero output"
        if mask is not None
        else None,
        hint="when a row's running maximum is still -inf, shift by 0 instead: exp(-inf) is 0, but "
        "-inf - (-inf) is NaN; and divide by the sum clamped above 0.",
    )


# ----------------------------------------------------------------------------- perplexity


def _nll(logits: Tensor, tokens: Tensor, pad: int, shift: bool = True) -> tuple[Tensor, Tensor]:
    lg, tg = (logits[:, :-1], tokens[:, 1:]) if shift else (logits, tokens)
    per = -F.log_softmax(lg.double(), -1).gather(-1, tg[..., None])[..., 0]  # (B, L - 1)
    return per, (tg != pad)


def _perplexity_mistakes(logits: Tensor, tokens: Tensor, pad: int) -> dict:
    per, keep = _nll(logits, tokens, pad)
    mean = (per * keep).sum() / keep.sum()
    rows = keep.any(-1)
    row_loss = (per * keep).sum(-1)[rows] / keep.sum(-1)[rows]

    def unshifted() -> Tensor:
        p, kk = _nll(logits, tokens, pad, shift=False)
        return ((p * kk).sum() / kk.sum()).exp()

    return {
        "the mean loss returned, not exponentiated": lambda: mean,
        "2 ** loss instead of exp(loss): the loss is in nats (natural logarithms)": lambda: 2**mean,
        "exp of the summed loss instead of the mean": lambda: (per * keep).sum().exp(),
        "the mean of per-row perplexities instead of exp of the mean loss over every target": lambda: (
            row_loss.exp().mean()
        ),
        "padding counted in the mean of the losses (divide by the number of non-pad targets)": lambda: (
            (per * keep).sum() / per.numel()
        ).exp(),
        "targets not shifted: position t scored on token t (perplexity scores logits[:, :-1] against tokens[:, 1:])": unshifted,  # noqa: E501
    }


@check
def check_perplexity(perplexity, seed: int = 0) -> None:
    """``perplexity(logits, tokens, pad_id)`` = exp(mean next-token loss over the non-pad targets):
    rows of different lengths, a pad id other than 0, uniform logits (perplexity V), float64."""
    cases = [
        ((2, 6, 7), 0, torch.float32, 1.0, [6, 3]),
        ((3, 5, 9), 0, torch.float64, 2.0, [5, 2, 4]),
        ((2, 6, 8), 3, torch.float32, 1.0, [6, 4]),
        ((2, 4, 11), 0, torch.float32, 0.0, [4, 2]),
    ]
    for i, (shape, pad, dtype, scale, lengths) in enumerate(cases):
        logits, tokens = logits_and_targets(shape, pad, lengths, seed * 10 + i, dtype, scale)
        what = (
            f"perplexity(logits {shape} {str(dtype)[6:]} of size ~{scale:g}, tokens with row lengths {lengths}, "
            f"pad_id={pad}) (seed {seed})"
        )
        expected = reference.perplexity(logits, tokens, pad)
        with forbidden(
            perplexity,
            ["autograder.reference.modern_lm.perplexity", "autograder.reference.families.next_token_loss"],
            "Shift, take log_softmax, gather the targets, average over the non-pad ones, exponentiate.",
        ):
            found = call(perplexity, logits.clone(), tokens.clone(), pad, what=what)
        found = expect_shape(what, found, ())
        expect_close(
            what,
            found,
            expected,
            atol=1e-4,
            rtol=1e-5,
            check_dtype=False,
            mistakes=_perplexity_mistakes(logits, tokens, pad),
        )
        if scale == 0.0:
            expect_equal(what + ": uniform logits give perplexity V", round(float(found), 4), float(shape[-1]))
