"""Long addition, digit by digit: a task long enough that a GPU earns its place (chapter 8's appendix).

The source is two numbers written least significant digit first, joined by ``+``; the target is
their sum, also least significant digit first::

    4 3 2 1 + 9 9 9  ->  3 3 2 2        (1234 + 999 = 2233)

Writing the digits from the low end puts each output digit right after the digits it depends on,
as a person adds on paper: digit i of the sum is digit i of both numbers plus the carry from
digit i - 1. The structure is real: a carry can ripple across many digits (``9 9 9 ... + 1``), and
the decoder must find digit i of the second number about half a source away. With numbers of 32
to 127 digits the sources hold 66 to 256 tokens, long enough that the arithmetic of a step, not
the launching of its kernels, decides its time on a GPU.
"""

from __future__ import annotations

import random

DIGITS = list("0123456789")


def addition_task(min_digits: int = 32, max_digits: int = 127):
    """``(source tokens, target tokens, sample, options)`` for ``make_task("add", ...)``.

    Each number gets a length drawn uniformly from ``[min_digits, max_digits]`` and a first
    (most significant) digit that is not 0, so the lengths are what they say.
    """
    if not 1 <= min_digits <= max_digits:
        raise ValueError(f"need 1 <= min_digits <= max_digits, got {min_digits}, {max_digits}")

    def number(rng: random.Random) -> int:
        n = rng.randint(min_digits, max_digits)
        return rng.randint(10 ** (n - 1) if n > 1 else 0, 10**n - 1)

    def sample(rng: random.Random) -> tuple[tuple[str, ...], tuple[str, ...]]:
        a, b = number(rng), number(rng)
        return (*str(a)[::-1], "+", *str(b)[::-1]), tuple(str(a + b)[::-1])

    return DIGITS + ["+"], DIGITS, sample, dict(min_digits=min_digits, max_digits=max_digits)
