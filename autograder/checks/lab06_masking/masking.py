"""Checks for lab 06-masking (chapter 6): the masks and masked attention. The leak test is
checked in ``leaks_future``.

Shape letters: B batch, H heads, L length, T target length, Lq query length,
Lk key length, D d_model, Dh size of one head. Masks are boolean, True = may attend.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from autograder import reference
from autograder.checks.kit.core import check, generator, random_tensor
from autograder.checks.kit.expect import call, describe, expect_close, expect_equal, expect_shape, fail
from autograder.checks.kit.sentinels import forbidden
from autograder.checks.kit.variants import (
    MASK_AFTER_SOFTMAX,
    MASK_FILLED_FINITE,
    MASK_INVERTED,
    NAN_ROWS,
    NO_SCALE,
    softmax_axis_mistakes,
    wrong_attention,
)

_BOOL_HINT = (
    "masks are boolean, True = may attend: a comparison such as `tokens != pad_id` or "
    "`torch.ones(..., dtype=torch.bool)` is already boolean; do not convert it with "
    ".int(), .long() or .float(), and do not build a float mask of 0 and -inf."
)


def _tokens(seed: int, batch: int, length: int, pad_id: int, fully_padded_row: bool) -> Tensor:
    """Ids in 0..9 with right padding of random lengths (row 0 unpadded, the last row
    all padding when asked); real tokens may equal 0 when pad_id is not 0."""
    g = generator(seed)
    tokens = torch.randint(0, 10, (batch, length), generator=g)
    tokens[tokens == pad_id] = (pad_id + 1) % 10
    lengths = torch.randint(1, length + 1, (batch,), generator=g)
    lengths[0] = length
    if fully_padded_row and batch > 1:
        lengths[-1] = 0
    tokens[torch.arange(length)[None, :] >= lengths[:, None]] = pad_id
    return tokens  # (B, L)


def _token_cases(seed: int) -> list[tuple[Tensor, int]]:
    g = generator(seed + 1000)
    b, length = int(torch.randint(1, 5, (1,), generator=g)), int(torch.randint(1, 12, (1,), generator=g))
    return [
        (_tokens(seed, 3, 6, 0, True), 0),
        (_tokens(seed + 1, 4, 5, 3, False), 3),
        (_tokens(seed + 2, 2, 1, 0, True), 0),
        (torch.tensor([[0, 0, 0]]), 0),
        (_tokens(seed + 3, b, length, 1, seed % 2 == 1), 1),
    ]


def _expect_mask(what: str, found, expected: Tensor, mistakes: dict) -> None:
    """A mask, compared exactly; a mask that is not bool is told what a bool mask is."""
    __tracebackhide__ = True
    expect_equal(what, found, expected, hint=_BOOL_HINT if found.dtype != torch.bool else None, mistakes=mistakes)


@check
def check_padding_mask(padding_mask, seed: int = 0) -> None:
    """Compare ``padding_mask(tokens, pad_id)`` with the reference: shape (B, 1, 1, L),
    dtype bool, True on real tokens; pad ids other than 0, a fully padded row, length 1."""
    for tokens, pad_id in _token_cases(seed):
        b, length = tokens.shape
        what = f"padding_mask(tokens, pad_id={pad_id}) for tokens {tokens.tolist()}"
        expected = reference.padding_mask(tokens, pad_id)
        with forbidden(
            padding_mask,
            ["autograder.reference.padding_mask"],
            "Compare the tokens with pad_id and add the broadcast axes yourself.",
        ):
            found = call(padding_mask, tokens.clone(), pad_id, what=what)
        expect_shape(
            what,
            found,
            (b, 1, 1, length),
            mistakes={
                "(B, L): add the two broadcast axes, (B, 1, 1, L), so the mask broadcasts over heads and queries": (
                    b,
                    length,
                ),
                "(B, 1, L): one axis short of (B, 1, 1, L)": (b, 1, length),
                "(B, 1, L, 1): a padding mask runs along the keys (the last axis), not the queries": (b, 1, length, 1),
            },
        )
        mistakes = {
            "polarity inverted: True marks padding, but True must mean 'may attend'": ~expected,
            "the mask compares with 0 instead of pad_id": (tokens != 0)[:, None, None, :],
        }
        _expect_mask(what, found, expected, mistakes)


@check
def check_causal_mask(causal_mask, seed: int = 0) -> None:
    """Compare ``causal_mask(length)`` with the reference: shape (L, L), dtype bool, True
    on and below the diagonal; lengths 1, 2, 5 and a seeded one."""
    g = generator(seed)
    for length in (5, 2, int(torch.randint(3, 65, (1,), generator=g)), 1):  # 1 last: every mistake looks alike there
        what = f"causal_mask({length})"
        expected = reference.causal_mask(length)
        with forbidden(
            causal_mask,
            [
                "autograder.reference.causal_mask",
                "torch.nn.Transformer.generate_square_subsequent_mask",
                "torch.nn.modules.transformer._generate_square_subsequent_mask",
            ],
            "Build the lower triangle yourself (torch.ones and torch.tril, or a comparison of two aranges).",
        ):
            found = call(causal_mask, length, what=what)
        expect_shape(what, found, (length, length))
        ones = torch.ones(length, length, dtype=torch.bool)
        mistakes = {
            "polarity inverted: True marks the future, but True must mean 'may attend'": ~expected,
            "diagonal blocked: a position must be able to attend to itself (j <= i, not j < i)": ones.tril(-1),
            "transposed (upper triangle): rows are queries, so row i may attend to columns j <= i": ones.triu(),
        }
        _expect_mask(what, found, expected, mistakes)


@check
def check_decoder_self_attention_mask(decoder_self_attention_mask, seed: int = 0) -> None:
    """Compare ``decoder_self_attention_mask(tgt, pad_id)`` with the reference: shape
    (B, 1, T, T), dtype bool, causal AND key padding; fully padded rows, T = 1."""
    for tgt, pad_id in _token_cases(seed + 7):
        b, t = tgt.shape
        what = f"decoder_self_attention_mask(tgt, pad_id={pad_id}) for tgt {tgt.tolist()}"
        expected = reference.decoder_self_attention_mask(tgt, pad_id)
        with forbidden(
            decoder_self_attention_mask,
            ["autograder.reference.decoder_self_attention_mask"],
            "Combine a padding mask and a causal mask yourself (you may call your own "
            "padding_mask and causal_mask, or the reference's).",
        ):
            found = call(decoder_self_attention_mask, tgt.clone(), pad_id, what=what)
        expect_shape(
            what,
            found,
            (b, 1, t, t),
            mistakes={
                "(T, T): the causal mask alone, without the target padding": (t, t),
                "(B, T, T): keep the head axis, (B, 1, T, T)": (b, t, t),
            },
        )
        pad = reference.padding_mask(tgt, pad_id)  # (B, 1, 1, T)
        causal = reference.causal_mask(t)  # (T, T)
        mistakes = {
            "target padding ignored (the causal mask alone)": causal.expand(b, 1, t, t),
            "causal mask missing (the padding mask alone)": pad.expand(b, 1, t, t),
            "padding OR causal: a position must pass both masks (AND)": pad | causal,
            "padding applied to the queries (rows) instead of the keys (columns)": pad.transpose(-2, -1) & causal,
            "diagonal blocked in the causal part": pad & causal.tril(-1),
            "polarity inverted: True must mean 'may attend'": ~expected,
        }
        _expect_mask(what, found, expected, mistakes)


# ----------------------------------------------------------------------------- masked attention


_ATTENTION_MISTAKES = (MASK_AFTER_SOFTMAX, MASK_FILLED_FINITE, NAN_ROWS, MASK_INVERTED, NO_SCALE)


def _attention_cases(seed: int) -> list[tuple[str, Tensor, Tensor, Tensor, Tensor | None]]:
    g = generator(seed)
    cases: list[tuple[str, Tensor, Tensor, Tensor, Tensor | None]] = []
    q, k, v = (random_tensor((2, 2, 5, 4), seed * 10 + i) for i in range(3))
    cases.append(("causal mask (5, 5), q k v (2, 2, 5, 4)", q, k, v, reference.causal_mask(5)))
    tokens = torch.tensor([[4, 2, 7, 0, 0, 0], [0, 0, 0, 0, 0, 0]])
    q, k, v = (random_tensor(s, seed * 10 + 3 + i) for i, s in enumerate([(2, 1, 4, 8), (2, 1, 6, 8), (2, 1, 6, 3)]))
    cases.append(
        (
            "padding mask (2, 1, 1, 6) with a fully padded sequence, q (2, 1, 4, 8), k (2, 1, 6, 8)",
            q,
            k,
            v,
            reference.padding_mask(tokens, 0),
        )
    )
    tgt = torch.tensor([[0, 5, 6, 0], [3, 0, 0, 0], [1, 2, 3, 4]])
    q, k, v = (random_tensor((3, 2, 4, 6), seed * 10 + 6 + i, torch.float64) for i in range(3))
    cases.append(
        (
            "decoder mask (3, 1, 4, 4) whose first row is fully masked, float64",
            q,
            k,
            v,
            reference.decoder_self_attention_mask(tgt, 0),
        )
    )
    mask = torch.rand(4, 5, generator=g) > 0.4  # (Lq, Lk)
    mask[1] = False
    q, k, v = (random_tensor(s, seed * 10 + 9 + i) for i, s in enumerate([(3, 4, 8), (3, 5, 8), (3, 5, 8)]))
    cases.append(("a random (4, 5) mask with row 1 fully masked, q (3, 4, 8) without a head axis", q, k, v, mask))
    # Large scores: every allowed score is about -2e4, far below a -1e4 fill.
    q = torch.full((1, 1, 3, 4), 100.0)
    k = -100.0 * (1 + random_tensor((1, 1, 4, 4), seed + 50).abs() * 0.01)
    v = random_tensor((1, 1, 4, 2), seed + 51)
    cases.append(("large scores (about -2e4), causal mask (3, 4)", q, k, v, torch.ones(3, 4, dtype=torch.bool).tril()))
    q, k, v = (random_tensor((1, 3, 2), seed * 10 + 60 + i) for i in range(3))
    cases.append(("no mask (attn_mask=None), length 3", q, k, v, None))
    q, k, v = (random_tensor((2, 1, 1, 3), seed * 10 + 70 + i) for i in range(3))
    cases.append(("length 1, mask [[True]]", q, k, v, torch.ones(1, 1, dtype=torch.bool)))
    return cases


@check
def check_masked_attention(masked_attention, seed: int = 0) -> None:
    """Compare ``masked_attention(q, k, v, attn_mask)`` -> ``(output, weights)`` with the
    reference: causal, padding and decoder masks, fully masked rows (zero weights and zero
    output, no NaN), large scores (where a -1e4 fill leaks), no mask, float64."""
    instead = (
        "Compute the scores, fill the masked ones with -inf before torch.softmax, and give "
        "fully masked rows zero weights yourself."
    )
    targets = [
        "torch.nn.functional.scaled_dot_product_attention",
        "torch.nn.MultiheadAttention.forward",
        "torch.nn.functional.multi_head_attention_forward",
        "autograder.reference.scaled_dot_product_attention",
        "autograder.reference.self_attention",
        "autograder.reference.softmax",
        "autograder.reference.MultiHeadAttention",
    ]
    for label, q, k, v, mask in _attention_cases(seed):
        _check_masked_case(
            masked_attention,
            f"masked_attention(q, k, v, attn_mask) with {label} (seed {seed})",
            q,
            k,
            v,
            mask,
            targets,
            instead,
        )


def _check_masked_case(
    masked_attention, what: str, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, targets: list[str], instead: str
) -> None:
    __tracebackhide__ = True
    expected_out, expected_w = reference.scaled_dot_product_attention(q, k, v, mask)
    with forbidden(masked_attention, targets, instead):
        found = call(
            masked_attention, q.clone(), k.clone(), v.clone(), None if mask is None else mask.clone(), what=what
        )
    if not (isinstance(found, tuple) and len(found) == 2):
        fail(what, "a tuple (output, weights)", describe(found))
    for part, found_part, expected_part, index in (
        ("weights", found[1], expected_w, 1),
        ("output", found[0], expected_out, 0),
    ):
        mistakes: dict[str, Any] = {
            name: (lambda name=name, index=index: wrong_attention(q, k, v, mask, name)[index])
            for name in _ATTENTION_MISTAKES
        }
        mistakes.update(
            {
                name: (
                    lambda name=name, dim=dim, index=index: wrong_attention(  # scores: as many axes as q
                        q, k, v, mask, name, softmax_dim=dim
                    )[index]
                )
                for name, dim in softmax_axis_mistakes(q.dim()).items()
            }
        )
        expect_close(f"{what}: the {part}", found_part, expected_part, atol=1e-5, rtol=1e-4, mistakes=mistakes)
