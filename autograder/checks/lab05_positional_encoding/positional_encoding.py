"""Checks for lab 05-positional-encoding (chapter 5).

Shape letters: B batch, L length, D d_model (even).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import Tensor

from autograder import reference
from autograder.checks.kit.core import check, generator, random_tensor
from autograder.checks.kit.expect import call, expect_close, expect_shape, fail
from autograder.checks.kit.sentinels import forbidden

# ----------------------------------------------------------------------------- known mistakes


def _freqs(d_model: int, exponent: float = 2.0) -> Tensor:
    """w_i = 10000^(-exponent * i / D) for i = 0 .. D/2 - 1 (exponent 2 is right)."""
    i = torch.arange(d_model // 2, dtype=torch.float64)
    return torch.exp(-math.log(10000.0) * exponent * i / d_model)  # (D/2,)


def _encoding(
    length: int, d_model: int, *, exponent: float = 2.0, swap: bool = False, halves: bool = False, start: int = 0
) -> Tensor:
    """The sinusoidal table, or one of its usual wrong variants (float64)."""
    angles = torch.arange(start, start + length, dtype=torch.float64)[:, None] * _freqs(d_model, exponent)
    first, second = (torch.cos(angles), torch.sin(angles)) if swap else (torch.sin(angles), torch.cos(angles))
    if halves:
        return torch.cat([first, second], dim=-1)  # (L, D)
    return torch.stack([first, second], dim=-1).reshape(length, d_model)  # (L, D/2, 2) -> (L, D)


def _rotation(
    offset: int, d_model: int, *, exponent: float = 2.0, swap: bool = False, transpose: bool = False
) -> Tensor:
    """R(k), or one of its usual wrong variants (float64)."""
    theta = offset * _freqs(d_model, exponent)
    c, s = torch.cos(theta), torch.sin(theta)
    if swap:
        c, s = s, c
    block = torch.stack([torch.stack([c, s], -1), torch.stack([-s, c], -1)], -2)  # (D/2, 2, 2)
    if transpose:
        block = block.transpose(-2, -1)
    return torch.block_diag(*block)  # (D, D)


_ENCODING_MISTAKES = {
    "sin and cos swapped (sin belongs in the even columns 2i, cos in the odd columns 2i+1)": dict(swap=True),
    "frequency exponent 2i/D written as i/D (a factor of two)": dict(exponent=1.0),
    "frequency exponent uses the column index 2i where the formula has i, giving 4i/D (a factor of two)": dict(
        exponent=4.0
    ),
    "sin in the first half of the columns and cos in the second half (concatenated, not interleaved)": dict(
        halves=True
    ),
    "positions counted from 1 instead of 0": dict(start=1),
}

_ROTATION_MISTAKES = {
    "sin and cos swapped in the 2x2 block": dict(swap=True),
    "frequency exponent 2i/D written as i/D (a factor of two)": dict(exponent=1.0),
    "frequency exponent uses the column index 2i where the formula has i, giving 4i/D (a factor of two)": dict(
        exponent=4.0
    ),
    "block transposed (rotates backwards: R(-k))": dict(transpose=True),
}


def _sizes(seed: int, fixed: list[tuple[int, int]], max_length: int, max_half: int) -> list[tuple[int, int]]:
    g = generator(seed)
    extra = [
        (
            int(torch.randint(1, max_length + 1, (1,), generator=g)),
            2 * int(torch.randint(1, max_half + 1, (1,), generator=g)),
        )
        for _ in range(2)
    ]
    return fixed + extra


# ----------------------------------------------------------------------------- checks

_DTYPE_HINT = (
    "there is no input tensor whose dtype to keep, so the table has PyTorch's default dtype, "
    "torch.float32, the dtype of the embeddings it is added to: compute in float64 if you like, "
    "then return .float() (or build it with dtype=torch.float32)."
)


def _expect_table(what: str, found, expected: Tensor, mistakes: dict, **dtype_hint: Any) -> None:
    """A table of this lab (the encoding, a rotation, the similarities, the sums) compared within 1e-4."""
    __tracebackhide__ = True
    expect_close(what, found, expected, atol=1e-4, rtol=1e-4, mistakes=mistakes, **dtype_hint)


@check
def check_sinusoidal_encoding(sinusoidal_encoding, seed: int = 0) -> None:
    """Compare ``sinusoidal_encoding(length, d_model)`` with the reference table: the
    chapter's 50 x 128 heatmap, length 1, d_model 2, and seeded random sizes."""
    for length, d in _sizes(seed, [(50, 128), (1, 2), (7, 6), (128, 16)], 200, 64):
        what = f"sinusoidal_encoding({length}, {d}) (seed {seed})"
        expected = reference.sinusoidal_encoding(length, d)
        with forbidden(
            sinusoidal_encoding,
            ["autograder.reference.sinusoidal_encoding"],
            "Build the table from torch.arange, torch.sin and torch.cos.",
        ):
            found = call(sinusoidal_encoding, length, d, what=what)
        mistakes = {
            name: (lambda kw=kw, d=d, length=length: _encoding(length, d, **kw))
            for name, kw in _ENCODING_MISTAKES.items()
        }
        transposed = {"(D, L) instead of (L, D): rows are positions": expected.T}
        _expect_table(what, found, expected, mistakes | transposed, dtype_hint=_DTYPE_HINT)


@check
def check_rotation_matrix(rotation_matrix, seed: int = 0) -> None:
    """Compare ``rotation_matrix(offset, d_model)`` with the reference for a sample of
    offsets, then check ``R(k) @ PE[t] == PE[t + k]`` for EVERY offset k in 0..L-1 and
    every t with t + k < L (L = 128 and a seeded second length), against the reference
    encoding."""
    g = generator(seed)
    second = (int(torch.randint(128, 161, (1,), generator=g)), 2 * int(torch.randint(1, 33, (1,), generator=g)))
    instead = "Build R(k) from torch.cos and torch.sin of k times each frequency."
    for length, d in [(128, 128), second]:
        # A sample of offsets, compared entry by entry (this names the usual mistakes).
        sample = sorted({0, 1, 2, 7, length - 1, int(torch.randint(3, length, (1,), generator=g))})
        for k in sample:
            what = f"rotation_matrix({k}, {d}) (seed {seed})"
            expected = reference.rotation_matrix(k, d)
            with forbidden(rotation_matrix, ["autograder.reference.rotation_matrix"], instead):
                found = call(rotation_matrix, k, d, what=what)
            mistakes = {
                name: (lambda kw=kw, d=d, k=k: _rotation(k, d, **kw)) for name, kw in _ROTATION_MISTAKES.items()
            }
            _expect_table(what, found, expected, mistakes, dtype_hint=_DTYPE_HINT)
        # The property itself, for every offset: R(k) @ PE[t] against PE[t + k].
        pe = reference.sinusoidal_encoding(length, d, torch.float64)  # (L, D)
        with forbidden(rotation_matrix, ["autograder.reference.rotation_matrix"], instead):
            rs = [call(rotation_matrix, k, d, what=f"rotation_matrix({k}, {d})") for k in range(length)]
        for k, r in enumerate(rs):
            expect_shape(f"rotation_matrix({k}, {d})", r, (d, d))
        r = torch.stack([x.detach().to("cpu", torch.float64) for x in rs])  # (L, D, D)
        moved = torch.einsum("kij,tj->kti", r, pe)  # (L offsets, L positions, D): R(k) @ PE[t]
        target_index = torch.arange(length)[:, None] + torch.arange(length)[None, :]  # (L, L): t + k
        valid = target_index < length  # (L, L)
        target = pe[target_index.clamp(max=length - 1)]  # (L, L, D): PE[t + k]
        err = ((moved - target).abs().amax(-1) * valid).nan_to_num(nan=float("inf"))  # (L, L)
        bad = err > 1e-4
        if bool(bad.any()):
            k, t = (int(i) for i in torch.nonzero(bad)[0])
            fail(
                f"R(k) @ PE[t] == PE[t + k] for every offset k in 0..{length - 1} and every t with "
                f"t + k < {length}, d_model={d} (seed {seed})",
                "equality within 1e-4 for every pair",
                f"{int(bad.sum())} of {int(valid.sum())} pairs differ; the first at offset k={k}, t={t}: "
                f"greatest difference {err[k, t].item():.3g}",
                hint="R(k) rotates each (sin, cos) pair by the angle k * w_i; check that the angle "
                "uses the offset k you were given and the same frequencies as the encoding.",
            )


@check
def check_pe_similarity(pe_similarity, seed: int = 0) -> None:
    """Compare ``pe_similarity(pe)`` (all pairwise dot products) with the reference on
    sinusoidal tables and on random ``(L, D)`` matrices, float32 and float64."""
    g = generator(seed)
    cases = [
        ("the sinusoidal table (50, 128)", reference.sinusoidal_encoding(50, 128)),
        ("a random (7, 6) matrix", random_tensor((7, 6), seed)),
        ("a random (1, 4) matrix", random_tensor((1, 4), seed + 1)),
        ("a random (9, 3) float64 matrix", random_tensor((9, 3), seed + 2, torch.float64)),
        (
            "a seeded sinusoidal table, float64",
            reference.sinusoidal_encoding(
                int(torch.randint(2, 80, (1,), generator=g)),
                2 * int(torch.randint(1, 33, (1,), generator=g)),
                torch.float64,
            ),
        ),
    ]
    for label, pe in cases:
        what = f"pe_similarity(pe) for {label}, shape {tuple(pe.shape)} (seed {seed})"
        expected = reference.pe_similarity(pe)
        with forbidden(
            pe_similarity, ["autograder.reference.pe_similarity"], "Write the dot products as one matrix product."
        ):
            found = call(pe_similarity, pe.clone(), what=what)
        norms = pe.norm(dim=-1, keepdim=True)
        mistakes = {
            "pe.T @ pe: dot products of columns (dimensions) instead of rows (positions)": pe.T @ pe,
            "cosine similarities (divided by the norms) instead of plain dot products": lambda norms=norms, pe=pe: (
                (pe @ pe.T) / (norms * norms.T)
            ),
            "distances instead of dot products": lambda pe=pe: torch.cdist(pe, pe),
        }
        _expect_table(what, found, expected, mistakes)


@check
def check_add_positions(add_positions, seed: int = 0) -> None:
    """Compare ``add_positions(token_embeddings, pe)`` = ``token_embeddings * sqrt(D) +
    pe[:L]`` with the reference: a table longer than the sequence, length 1, float64."""
    g = generator(seed)
    cases = [
        ((2, 5, 8), 20, torch.float32),
        ((1, 1, 4), 6, torch.float32),
        ((3, 7, 16), 7, torch.float64),
        (
            (int(torch.randint(1, 4, (1,), generator=g)), int(torch.randint(1, 30, (1,), generator=g)), 32),
            64,
            torch.float32,
        ),
    ]
    for i, (shape, max_len, dtype) in enumerate(cases):
        b, length, d = shape
        x = random_tensor(shape, seed * 10 + i, dtype)
        pe = reference.sinusoidal_encoding(max_len, d, dtype)  # (max_len, D)
        what = (
            f"add_positions(token_embeddings, pe) for embeddings of shape {shape}, {str(dtype)[6:]}, "
            f"and a table of {max_len} positions (seed {seed})"
        )
        expected = reference.add_positions(x, pe)
        with forbidden(
            add_positions,
            ["autograder.reference.add_positions", "autograder.reference.Embeddings"],
            "Scale the embeddings and add the table's first L rows yourself.",
        ):
            found = call(add_positions, x.clone(), pe.clone(), what=what)
        root = math.sqrt(d)
        mistakes = {
            "embeddings not multiplied by sqrt(D)": lambda length=length, pe=pe, x=x: x + pe[:length],
            "embeddings divided by sqrt(D) instead of multiplied": lambda length=length, pe=pe, root=root, x=x: (
                x / root + pe[:length]
            ),
            "embeddings multiplied by D instead of sqrt(D)": lambda d=d, length=length, pe=pe, x=x: x * d + pe[:length],
            "the sum scaled by sqrt(D): the encoding must not be scaled": lambda length=length, pe=pe, root=root, x=x: (
                (x + pe[:length]) * root
            ),
            "the whole table added instead of its first L rows": lambda pe=pe, root=root, x=x: x * root + pe,
        }
        _expect_table(what, found, expected, mistakes)
