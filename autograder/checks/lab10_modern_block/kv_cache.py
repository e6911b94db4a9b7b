"""Checks for lab 10-modern-block (chapter 10), grouped-query attention with a KV cache:
``attend_with_cache`` compared with ``F.scaled_dot_product_attention(..., enable_gqa=True)`` on
the rotated queries and cache, its output and the cache it returns, a wrong answer named when
a usual mistake gives it (values rotated, heads tiled instead of grouped, positions off by
one under the cache, cached keys rotated again).

Shape letters: B batch, H query heads, G key/value heads, P tokens in the cache, Lq new
tokens, Lk keys, Dh head width.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

from autograder import reference
from autograder.checks.kit.core import check, generator, random_tensor
from autograder.checks.kit.expect import TOLERANCE_BY_DTYPE, call, expect_close, fail
from autograder.checks.kit.sentinels import forbidden


def _cache_variant(
    q,
    k,
    v,
    ck,
    cv,
    base,
    *,
    start=None,
    rotate_values=False,
    tile_heads=False,
    rerotate=False,
    rotate_keys=True,
    causal=True,
    scale=True,
):
    past, new = ck.size(2), q.size(2)
    first = past if start is None else start
    pos = torch.arange(first, first + new)
    k_new = reference.apply_rope(k, pos, base) if rotate_keys else k
    v_new = reference.apply_rope(v, pos, base) if rotate_values else v
    old_k = reference.apply_rope(ck, torch.arange(past), base) if rerotate else ck
    keys, values = torch.cat([old_k, k_new], 2), torch.cat([cv, v_new], 2)
    reps = q.size(1) // k.size(1)
    keys = keys.repeat(1, reps, 1, 1) if tile_heads else keys.repeat_interleave(reps, 1)
    values = values.repeat(1, reps, 1, 1) if tile_heads else values.repeat_interleave(reps, 1)
    scores = reference.apply_rope(q, pos, base) @ keys.transpose(-2, -1) / (math.sqrt(q.size(-1)) if scale else 1.0)
    if causal:
        allowed = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)
        scores = scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(-1) @ values


def _cache_mistakes(q, k, v, ck, cv, base) -> dict:
    past = ck.size(2)

    def run(**kw):
        return lambda: _cache_variant(q, k, v, ck, cv, base, **kw)

    out = {
        "values rotated as well: RoPE rotates the queries and keys only": run(rotate_values=True),
        "key/value heads tiled with repeat (query head h reads head h % G) instead of repeat_interleave (head "
        "h // (H / G)), the grouping of enable_gqa=True": run(tile_heads=True),
        "keys not rotated (only the queries)": run(rotate_keys=False),
        "no causal mask among the new tokens": run(causal=False),
        "scores not scaled by 1/sqrt(Dh)": run(scale=False),
    }
    if past:
        out |= {
            "the new tokens placed at positions 0 .. Lq - 1: after a cache of P tokens they are at P .. P + Lq - 1": run(  # noqa: E501
                start=0
            ),
            "positions off by one under the cache: the new tokens placed at P + 1 .. P + Lq (the first token is "
            "at position 0, so the P cached ones fill 0 .. P - 1)": run(start=past + 1),
            "positions off by one under the cache: the new tokens placed at P - 1 .. P + Lq - 2": run(start=past - 1),
            "the cached keys rotated again: they are stored already rotated, each by its own position": run(
                rerotate=True
            ),
        }
    return out


def _cache_key_mistakes(k: Tensor, ck: Tensor, base: float) -> dict:
    past, new = ck.size(2), k.size(2)

    def stored(first: int) -> Callable[[], Tensor]:
        return lambda: torch.cat([ck, reference.apply_rope(k, torch.arange(first, first + new), base)], 2)

    out = {
        "the cache keeps the keys before rotation: store them rotated, each by its own position": lambda: torch.cat(
            [ck, k], 2
        ),
        "positions off by one under the cache: the new tokens placed at P + 1 .. P + Lq (the first token is "
        "at position 0, so the P cached ones fill 0 .. P - 1)": stored(past + 1),
        "positions off by one under the cache: the new tokens placed at P - 1 .. P + Lq - 2": stored(past - 1),
    }
    if past:
        out["the new tokens placed at positions 0 .. Lq - 1: after a cache of P tokens they are at P .. P + Lq - 1"] = (
            stored(0)
        )
    return out


_CACHE_OPS = [
    "torch.nn.functional.scaled_dot_product_attention",
    "autograder.reference.modern.attend_with_cache",
    "autograder.reference.modern.grouped_query_attention",
    "autograder.reference.ModernLM",
]


@check
def check_attend_with_cache(attend_with_cache, seed: int = 0) -> None:
    """``attend_with_cache(q, k, v, cache_k, cache_v, base=10000.0)`` -> ``(out, cache_k, cache_v)``, the
    output compared with ``F.scaled_dot_product_attention(..., enable_gqa=True)`` on the rotated queries and cache:
    an empty cache and a prompt, one new token after a cache, two new tokens; grouped-query
    (H = 4, G = 2), multi-query (G = 1) and multi-head (G = H); base 500000; float64. The adjacent
    pairing, as ``apply_rope``'s default."""
    g = generator(seed)
    extra = (int(torch.randint(0, 6, (1,), generator=g)), int(torch.randint(1, 4, (1,), generator=g)))
    cases = [
        (2, 4, 2, 0, 4, 8, 10000.0, torch.float32),
        (2, 4, 1, 5, 1, 8, 10000.0, torch.float32),
        (1, 2, 2, 3, 2, 6, 10000.0, torch.float64),
        (1, 6, 2, 7, 3, 4, 500000.0, torch.float64),
        (2, 4, 2, extra[0], extra[1], 8, 10000.0, torch.float32),
    ]
    for i, case in enumerate(cases):
        _check_cache_case(attend_with_cache, seed, seed * 10 + i, *case)


def _check_cache_case(
    attend_with_cache,
    seed: int,
    s: int,
    b: int,
    h: int,
    grp: int,
    past: int,
    new: int,
    dh: int,
    base: float,
    dtype: torch.dtype,
) -> None:
    __tracebackhide__ = True
    q, k, v = (
        random_tensor(shape, s + j, dtype)
        for j, shape in enumerate([(b, h, new, dh), (b, grp, new, dh), (b, grp, new, dh)])
    )
    ck = reference.apply_rope(random_tensor((b, grp, past, dh), s + 3, dtype), torch.arange(past), base)
    cv = random_tensor((b, grp, past, dh), s + 4, dtype)
    what = (
        f"attend_with_cache(q {tuple(q.shape)}, k and v {tuple(k.shape)}, a cache of P={past} tokens "
        f"{tuple(ck.shape)}, base={base:g}), {str(dtype)[6:]}, H={h}, G={grp} (seed {seed})"
    )
    positions = torch.arange(past, past + new)
    keys = torch.cat([ck, reference.apply_rope(k, positions, base)], 2)  # (B, G, P + Lq, Dh)
    values = torch.cat([cv, v], 2)
    allowed = torch.ones(new, past + new, dtype=torch.bool).tril(diagonal=past)  # (Lq, P + Lq)
    out = F.scaled_dot_product_attention(
        reference.apply_rope(q, positions, base), keys, values, allowed, enable_gqa=True
    )  # PyTorch's own grouped-query attention
    expected = (out, keys, values)
    with forbidden(
        attend_with_cache,
        _CACHE_OPS,
        "Rotate with your apply_rope, append to the cache, repeat "
        "the key/value heads and attend with a causal mask of your own.",
    ):
        found = call(attend_with_cache, q.clone(), k.clone(), v.clone(), ck.clone(), cv.clone(), base, what=what)
    if not isinstance(found, tuple | list) or len(found) != 3:
        fail(what, "a tuple (out, cache_k, cache_v)", f"{type(found).__name__}")
    out, new_k, new_v = found
    tol = TOLERANCE_BY_DTYPE[dtype]
    expect_close(what + ": out", out, expected[0], **tol, mistakes=_cache_mistakes(q, k, v, ck, cv, base))
    expect_close(what + ": the new cache_k", new_k, expected[1], **tol, mistakes=_cache_key_mistakes(k, ck, base))
    expect_close(
        what + ": the new cache_v",
        new_v,
        expected[2],
        **tol,
        mistakes={
            "values rotated as well: RoPE rotates the queries and keys only": lambda cv=cv, v=v, past=past, new=new, base=base: (  # noqa: E501
                torch.cat([cv, reference.apply_rope(v, torch.arange(past, past + new), base)], 2)
            )
        },
    )
