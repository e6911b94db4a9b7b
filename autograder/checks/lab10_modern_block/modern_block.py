"""Checks for lab 10-modern-block (chapter 10): RoPE, RMSNorm, SwiGLU (grouped-query attention
with a KV cache: ``kv_cache``; tiled attention and perplexity:
``tiles_and_perplexity``).

Shape letters: B batch, H query heads, G key/value heads, L length, P tokens in the cache,
Lq new tokens, Lk keys, Dh head width, D d_model, F d_ff, V vocabulary. Masks: True = may attend.

Each check compares the candidate with the reference (``autograder.reference``), which the
tests compare with ``torch.nn.RMSNorm``, ``F.scaled_dot_product_attention(..., enable_gqa=True)``
and Hugging Face's Llama rotary code.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from autograder import reference
from autograder.checks.kit.core import check, generator, random_tensor
from autograder.checks.kit.expect import TOLERANCE_BY_DTYPE, call, expect_close, expect_shape
from autograder.checks.kit.sentinels import forbidden
from autograder.reference import modern
from autograder.reference.rope import halves_permutation

# ----------------------------------------------------------------------------- apply_rope


def _rope(
    x: Tensor,
    positions: Tensor,
    base: float,
    pairing: str,
    *,
    exponent: float = 2.0,
    sign: float = 1.0,
    swap: bool = False,
) -> Tensor:
    """RoPE, or one of its usual wrong variants (float64)."""
    d = x.size(-1)
    w = base ** (-exponent * torch.arange(d // 2, dtype=torch.float64) / d)  # (Dh/2,)
    angles = positions.double()[..., None] * w
    if angles.dim() == 3:
        angles = angles[:, None]  # (B, 1, L, Dh/2)
    cos, sin = angles.cos(), sign * angles.sin()
    if swap:
        cos, sin = sin, cos
    x = x.double()
    if pairing == "adjacent":
        a, b = x[..., 0::2], x[..., 1::2]
        return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2)
    a, b = x[..., : d // 2], x[..., d // 2 :]
    return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)


def _rope_mistakes(x: Tensor, positions: Tensor, base: float, pairing: str) -> dict:
    other = "halves" if pairing == "adjacent" else "adjacent"
    wrong_pairing = (
        "pairs taken as halves (i, i + Dh/2) although pairing='adjacent' asks for (2i, 2i + 1)"
        if pairing == "adjacent"
        else "pairs taken as adjacent (2i, 2i + 1) although pairing='halves' asks for (i, i + Dh/2)"
    )
    out = {
        wrong_pairing: lambda: _rope(x, positions, base, other),
        "frequency exponent 2i/Dh written as i/Dh (a factor of two)": lambda: _rope(
            x, positions, base, pairing, exponent=1.0
        ),
        "frequency exponent uses the feature index 2i where the formula has i, giving 4i/Dh": lambda: _rope(
            x, positions, base, pairing, exponent=4.0
        ),
        "rotated backwards (sin with the wrong sign): pair (a, b) becomes (a cos - b sin, a sin + b cos)": lambda: (
            _rope(x, positions, base, pairing, sign=-1.0)
        ),
        "sin and cos swapped": lambda: _rope(x, positions, base, pairing, swap=True),
        "positions ignored: 0 .. L - 1 used instead of the positions given (after a cache of P tokens the new "
        "ones are at P, P + 1, ...)": lambda: _rope(x, torch.arange(x.size(-2)), base, pairing),
        "positions off by one (position + 1)": lambda: _rope(x, positions + 1, base, pairing),
    }
    if base != 10000.0:
        out["the base argument ignored: frequencies computed with base 10000"] = lambda: _rope(
            x, positions, 10000.0, pairing
        )
    return out


_ROPE_OPS = [
    "autograder.reference.rope.apply_rope",
    "autograder.reference.rope.rope_scores",
    "autograder.reference.modern.attend_with_cache",
]


@check
def check_apply_rope(apply_rope, seed: int = 0) -> None:
    """``apply_rope(x, positions, base=10000.0, pairing="adjacent")``: both pairings, positions that
    start after a cache, per-row positions ``(B, L)``, base 500000, float64, Dh = 2, and a check
    that the pairings differ only by ``halves_permutation``."""
    g = generator(seed)
    b, h, n = (int(torch.randint(1, 4, (1,), generator=g)) for _ in range(3))
    dh = 2 * int(torch.randint(1, 9, (1,), generator=g))
    cases = [
        ((2, 3, 5, 8), torch.arange(5), 10000.0, "adjacent", torch.float32),
        ((2, 3, 5, 8), torch.arange(5), 10000.0, "halves", torch.float32),
        ((1, 2, 3, 16), torch.arange(7, 10), 10000.0, "adjacent", torch.float32),
        ((2, 2, 4, 6), torch.tensor([[0, 1, 2, 3], [4, 5, 6, 7]]), 10000.0, "halves", torch.float64),
        ((1, 1, 6, 16), torch.arange(40, 46), 500000.0, "adjacent", torch.float64),
        ((2, 1, 1, 2), torch.tensor([3]), 10000.0, "halves", torch.float32),
        ((b, h, n, dh), torch.arange(11, 11 + n), 10000.0, "adjacent" if seed % 2 else "halves", torch.float32),
    ]
    for i, (shape, positions, base, pairing, dtype) in enumerate(cases):
        x = random_tensor(shape, seed * 10 + i, dtype)
        what = (
            f"apply_rope(x {shape} {str(dtype)[6:]}, positions {positions.tolist()}, base={base:g}, "
            f"pairing={pairing!r}) (seed {seed})"
        )
        expected = reference.apply_rope(x, positions, base, pairing)  # type: ignore[arg-type]
        with forbidden(apply_rope, _ROPE_OPS, "Rotate each pair with torch.cos and torch.sin of position * w_i."):
            found = call(apply_rope, x.clone(), positions.clone(), base, pairing, what=what)
        expect_close(
            what, found, expected, **TOLERANCE_BY_DTYPE[dtype], mistakes=_rope_mistakes(x, positions, base, pairing)
        )
    # The two pairings are one rotation with the features reordered.
    x = random_tensor((2, 2, 5, 10), seed + 99, torch.float64)
    perm = halves_permutation(10)
    with forbidden(apply_rope, _ROPE_OPS, "Rotate each pair with torch.cos and torch.sin of position * w_i."):
        halves = call(apply_rope, x[..., perm].clone(), torch.arange(5), 10000.0, "halves", what="apply_rope, halves")
        adjacent = call(apply_rope, x.clone(), torch.arange(5), 10000.0, "adjacent", what="apply_rope, adjacent")
    expect_close(
        "apply_rope(x[..., perm], pairing='halves') against apply_rope(x, pairing='adjacent')[..., perm], "
        "perm = [0, 2, 4, ..., 1, 3, 5, ...]",
        expect_shape("halves", halves, x.shape),
        expect_shape("adjacent", adjacent, x.shape)[..., perm],
        atol=1e-10,
        rtol=1e-8,
    )


# ----------------------------------------------------------------------------- rms_norm

_RMS_OPS = [
    "torch.nn.functional.rms_norm",
    "torch.rms_norm",
    "torch.nn.RMSNorm.forward",
    "autograder.reference.modern.rms_norm",
    "autograder.reference.modern.RMSNorm",
]


def _rms_mistakes(x: Tensor, w: Tensor, eps: float) -> dict:
    ms = x.pow(2).mean(-1, keepdim=True)
    return {
        "the mean subtracted first (that is LayerNorm without its bias): RMSNorm does not centre": lambda: (
            (x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, keepdim=True, correction=0) + eps) * w
        ),
        "eps outside the square root, x / (sqrt(mean(x^2)) + eps); it belongs inside, as in torch.nn.RMSNorm": lambda: (
            x / (ms.sqrt() + eps) * w
        ),
        "eps left out, so a row of zeros gives 0 / 0 = NaN": lambda: x / ms.sqrt() * w,
        "divided by the mean square instead of its square root": lambda: x / (ms + eps) * w,
        "divided by the norm sqrt(sum(x^2)) instead of the root mean square sqrt(mean(x^2))": lambda: (
            x * torch.rsqrt(x.pow(2).sum(-1, keepdim=True) + eps) * w
        ),
        "weight not applied": lambda: x * torch.rsqrt(ms + eps),
        "the eps argument ignored: a fixed default (1e-6 or 1e-5) used instead of the eps given": lambda: (
            x * torch.rsqrt(ms + 1e-6) * w
        ),
    }


@check
def check_rms_norm(rms_norm, seed: int = 0) -> None:
    """``rms_norm(x, weight, eps)`` against ``torch.nn.RMSNorm(D, eps=eps)`` with that weight: several
    eps values (set explicitly), a row of zeros, D = 1, float64, and large values."""
    g = generator(seed)
    cases = [
        ((2, 5, 8), 1e-6, torch.float32, 1.0),
        ((3, 4), 1e-5, torch.float64, 1.0),
        ((2, 3, 6), 0.1, torch.float32, 1.0),
        ((1, 1, 1), 1e-6, torch.float32, 1.0),
        ((4, 16), 1e-3, torch.float64, 1e4),
        (
            (int(torch.randint(1, 4, (1,), generator=g)), int(torch.randint(1, 9, (1,), generator=g)), 12),
            0.01,
            torch.float32,
            1.0,
        ),
    ]
    for i, (shape, eps, dtype, scale) in enumerate(cases):
        x = random_tensor(shape, seed * 10 + i, dtype, scale)
        if x.dim() > 1 and x.size(-2) > 1:
            x[..., 0, :] = 0.0  # a row of zeros: eps keeps it 0, not NaN
        w = random_tensor(shape[-1:], seed * 10 + i + 5, dtype)
        what = f"rms_norm(x {shape} {str(dtype)[6:]} of size ~{scale:g}, weight, eps={eps:g}) (seed {seed})"
        norm = torch.nn.RMSNorm(shape[-1], eps=eps, dtype=dtype)  # the same eps, set explicitly
        with torch.no_grad():
            norm.weight.copy_(w)
            expected = norm(x)
        with forbidden(rms_norm, _RMS_OPS, "Divide by the root mean square over the last dimension yourself."):
            found = call(rms_norm, x.clone(), w.clone(), eps, what=what)
        expect_close(what, found, expected, **TOLERANCE_BY_DTYPE[dtype], mistakes=_rms_mistakes(x, w, eps))


# ----------------------------------------------------------------------------- swiglu


def _swiglu_mistakes(x: Tensor, wg: Tensor, wu: Tensor, wd: Tensor) -> dict:
    a, b = x @ wg, x @ wu
    return {
        "gate and up swapped: silu applied to x @ w_up instead of x @ w_gate": lambda: (F.silu(b) * a) @ wd,
        "ReLU instead of SiLU in the gate": lambda: (F.relu(a) * b) @ wd,
        "sigmoid(x @ w_gate) as the gate (that is GLU): SiLU is z * sigmoid(z)": lambda: (torch.sigmoid(a) * b) @ wd,
        "GELU instead of SiLU in the gate": lambda: (F.gelu(a) * b) @ wd,
        "no gate: silu(x @ w_gate) @ w_down, the x @ w_up branch left out": lambda: F.silu(a) @ wd,
        "SiLU applied after the product, silu(a * b), instead of silu(a) * b": lambda: F.silu(a * b) @ wd,
    }


@check
def check_swiglu(swiglu, seed: int = 0) -> None:
    """``swiglu(x, w_gate, w_up, w_down)`` = ``(silu(x @ w_gate) * (x @ w_up)) @ w_down``: batched and
    single vectors, F = 8D/3 rounded, float64."""
    g = generator(seed)
    cases = [
        ((2, 5, 12), 32, torch.float32),
        ((3, 8), modern.swiglu_hidden(8), torch.float64),
        ((6,), 16, torch.float32),
        ((int(torch.randint(1, 5, (1,), generator=g)), 24), modern.swiglu_hidden(24), torch.float32),
    ]
    for i, (shape, f, dtype) in enumerate(cases):
        d = shape[-1]
        x = random_tensor(shape, seed * 10 + i, dtype)
        wg, wu, wd = (
            random_tensor(size, seed * 10 + i + j, dtype, 0.3) for j, size in enumerate([(d, f), (d, f), (f, d)], 1)
        )
        what = (
            f"swiglu(x {shape} {str(dtype)[6:]}, w_gate ({d}, {f}), w_up ({d}, {f}), w_down ({f}, {d})) (seed {seed})"
        )
        expected = modern.swiglu(x, wg, wu, wd)
        with forbidden(
            swiglu,
            ["autograder.reference.modern.swiglu", "autograder.reference.modern.SwiGLU"],
            "Write the gate with torch.sigmoid or F.silu, and the three matrix products.",
        ):
            found = call(swiglu, x.clone(), wg.clone(), wu.clone(), wd.clone(), what=what)
        expect_close(what, found, expected, **TOLERANCE_BY_DTYPE[dtype], mistakes=_swiglu_mistakes(x, wg, wu, wd))
