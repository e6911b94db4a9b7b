"""Long addition, digit by digit: a task long enough that a GPU earns its place (chapter 8's appendix).

Shape of a pair: two numbers of the same width W, their digits interleaved and least significant
first (a0 b0 a1 b1 ...); the target is their sum with W + 1 digits, least significant first::

    1234 + 0999:   4 9 3 9 2 9 1 0  ->  3 3 2 2 0        (= 02233)

Interleaving puts digit i of both numbers at a fixed place, and writing from the low end puts
each output digit right after the digits it depends on, as a person adds on paper: digit i of the
sum is a_i + b_i plus the carry from digit i - 1. The structure is the carry: it can ripple across
many digits (``9 9 9 ... + 1``), and one wrong digit fails the whole answer. Widths of 32 to 127
give sources of 65 to 255 ids (EOS included) and targets of 35 to 130: long enough that the
arithmetic of a step, not the launching of its kernels, decides its time on a GPU.
"""

from __future__ import annotations

import random

DIGITS = list("0123456789")


def addition_task(min_digits: int = 32, max_digits: int = 127):
    """``(source tokens, target tokens, sample, options)`` for ``make_task("add", ...)``.

    Each pair draws a width W from ``[min_digits, max_digits]``; both numbers are written with W
    digits (leading zeros kept), interleaved, and the sum with W + 1.
    """
    if not 1 <= min_digits <= max_digits:
        raise ValueError(f"need 1 <= min_digits <= max_digits, got {min_digits}, {max_digits}")

    def sample(rng: random.Random) -> tuple[tuple[str, ...], tuple[str, ...]]:
        width = rng.randint(min_digits, max_digits)
        a, b = rng.randrange(10**width), rng.randrange(10**width)
        da, db = str(a).zfill(width)[::-1], str(b).zfill(width)[::-1]  # least significant digit first
        src = tuple(d for pair in zip(da, db, strict=True) for d in pair)  # a0 b0 a1 b1 ...
        return src, tuple(str(a + b).zfill(width + 1)[::-1])

    return DIGITS, DIGITS, sample, dict(min_digits=min_digits, max_digits=max_digits)
