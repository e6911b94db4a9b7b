"""Long addition, digit by digit: a task long enough that a GPU earns its place (chapter 8's appendix).

Shape of a pair: two numbers of the same width W, written least significant digit first, one
source token per place holding both digits of that place (``a_i b_i``, a vocabulary of 100 pairs);
the target is their sum with W + 1 digits, least significant first::

    1234 + 0999:   49 39 29 10  ->  3 3 2 2 0        (= 02233)

Digit i of the sum is then made at target position i from source position i (the digits it adds)
and what came just before it (the carry, which the previous source pair and the previous sum digit
decide), as a person adds on paper. The structure is the carry: it can ripple across many digits
(``9 9 9 ... + 1``), and one wrong digit fails the whole answer. Widths of 32 to 127 give sources of
33 to 128 ids (EOS included) and targets of 35 to 130: long enough that the arithmetic of a step,
not the launching of its kernels, decides its time on a GPU.

``layout="digits"`` writes the same pair as the course first did, a token per digit, the two
numbers' digits interleaved (``4 9 3 9 2 9 1 0``): digit i of the sum then needs source positions 2i
and 2i + 1. With a small model, 8 to 16 digits and 1,500 steps it stayed on a plateau while the
places were learnt (``benchmarks/add_layouts.py``).
"""

from __future__ import annotations

import random

DIGITS = list("0123456789")
PAIRS = [a + b for a in DIGITS for b in DIGITS]  # "00" ... "99": the digit of a, then of b


LAYOUTS = ("places", "digits")


def addition_task(min_digits: int = 32, max_digits: int = 127, layout: str = "places"):
    """``(source tokens, target tokens, sample, options)`` for ``make_task("add", ...)``.

    Each pair draws a width W from ``[min_digits, max_digits]``; both numbers are written with W
    digits (leading zeros kept), least significant first, one token per place (the place's two
    digits; ``layout="digits"``: one token per digit, the numbers interleaved), and the sum with W + 1.
    """
    if not 1 <= min_digits <= max_digits:
        raise ValueError(f"need 1 <= min_digits <= max_digits, got {min_digits}, {max_digits}")
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")

    def sample(rng: random.Random) -> tuple[tuple[str, ...], tuple[str, ...]]:
        width = rng.randint(min_digits, max_digits)
        a, b = rng.randrange(10**width), rng.randrange(10**width)
        da, db = str(a).zfill(width)[::-1], str(b).zfill(width)[::-1]  # least significant digit first
        places = list(zip(da, db, strict=True))
        src = tuple(x + y for x, y in places) if layout == "places" else tuple(d for place in places for d in place)
        return src, tuple(str(a + b).zfill(width + 1)[::-1])

    options: dict[str, int | str] = dict(min_digits=min_digits, max_digits=max_digits)
    if layout != "places":  # the default stays unnamed: a task's description and checkpoints read as before
        options["layout"] = layout
    return (PAIRS if layout == "places" else DIGITS), DIGITS, sample, options
